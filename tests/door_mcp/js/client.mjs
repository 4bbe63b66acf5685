// An independent MCP client for the onedoor MCP door tests: the npm TypeScript SDK.
//
//   node client.mjs stdio '<argv as JSON>' <scenario>
//   node client.mjs http <url> <scenario> [bearer-token]
//
// Scenarios: "ask" (list tools, one call with progress, one failing call) and "cancel"
// (abort a streaming call after its first progress notification, then call again).
// Prints one JSON object on stdout.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CallToolResultSchema } from "@modelcontextprotocol/sdk/types.js";

const [mode, target, scenario, token] = process.argv.slice(2);

function transportFor() {
  if (mode === "stdio") {
    const argv = JSON.parse(target);
    return new StdioClientTransport({ command: argv[0], args: argv.slice(1), env: process.env, stderr: "ignore" });
  }
  const headers = token ? { Authorization: `Bearer ${token}` } : {};
  return new StreamableHTTPClientTransport(new URL(target), { requestInit: { headers } });
}

const text = (result) => result.content.map((c) => c.text ?? "").join("");

async function ask(client) {
  const tools = (await client.listTools()).tools;
  const progress = [];
  // Paced (/slow): the TS SDK handles notifications a tick after responses, so progress
  // that arrives in the same read as the result would be dropped by the client.
  const result = await client.callTool({ name: "ask", arguments: { message: "/slow hello from node" } }, CallToolResultSchema, {
    onprogress: (p) => progress.push(p),
  });
  const failed = await client.callTool({ name: "ask", arguments: { message: "/fail now" } });
  return {
    server: client.getServerVersion(),
    instructions: client.getInstructions(),
    tools: tools.map((t) => ({ name: t.name, required: t.inputSchema.required })),
    text: text(result),
    isError: result.isError ?? false,
    progress: progress.map((p) => ({ progress: p.progress, message: p.message })),
    failed: { isError: failed.isError ?? false, text: text(failed) },
  };
}

async function cancel(client) {
  const controller = new AbortController();
  let seen = 0;
  let error = null;
  try {
    await client.callTool({ name: "ask", arguments: { message: "/slow /long 400 cancel from node" } }, CallToolResultSchema, {
      signal: controller.signal,
      onprogress: () => {
        seen += 1;
        if (seen === 1) controller.abort("test cancels");
      },
    });
  } catch (exc) {
    error = String(exc);
  }
  const after = await client.callTool({ name: "ask", arguments: { message: "after cancel" } });
  return { progressBeforeAbort: seen, error, after: text(after) };
}

const client = new Client({ name: "onedoor-node-test", version: "1.0.0" });
const transport = transportFor();
await client.connect(transport);
const out = scenario === "cancel" ? await cancel(client) : await ask(client);
out.protocolVersion = transport.protocolVersion ?? null;
await client.close();
console.log(JSON.stringify(out));
