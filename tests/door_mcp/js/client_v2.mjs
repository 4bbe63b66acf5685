// The TypeScript v2 client (@modelcontextprotocol/client) against the onedoor MCP door, with
// version negotiation "auto": it probes with server/discover and speaks 2026-07-28 where the
// server does (MCP SDK 2.x), 2025-11-25 otherwise. It declares form-mode elicitation and
// answers the agent's questions through its elicitation/create handler (on 2026-07-28 the
// client gets them in the call's input_required result and retries the call by itself):
// approvals allow_once, free-form questions "green".
//
//   node client_v2.mjs <url> [bearer-token]
//
// Prints one JSON object on stdout.
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";

const [url, token] = process.argv.slice(2);
const asked = [];
const client = new Client({ name: "ts-v2", version: "1" },
  { capabilities: { elicitation: { form: {} } }, versionNegotiation: { mode: "auto" } });
client.setRequestHandler("elicitation/create", async (request) => {
  asked.push({ message: request.params.message, schema: request.params.requestedSchema });
  const properties = request.params.requestedSchema?.properties ?? {};
  if ("decision" in properties) return { action: "accept", content: { decision: "allow_once" } };
  return { action: "accept", content: { answer: "green" } };
});
const headers = token ? { Authorization: `Bearer ${token}` } : {};
await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }));
const described = (r) => ({ blocks: r.content.map((c) => c.text ?? ""), isError: r.isError ?? false,
  answers: r.structuredContent?.answers ?? null });
const approval = await client.callTool({ name: "ask", arguments: { message: "/ask rm {}" } });
const question = await client.callTool({ name: "ask", arguments: { message: "/question Colour?" } });
console.log(JSON.stringify({
  version: client.getNegotiatedProtocolVersion() ?? null, approval: described(approval),
  question: described(question), asked,
}));
await client.close();
