// An independent MCP client for the onedoor MCP door tests: the npm TypeScript SDK.
//
//   node client.mjs stdio '<argv as JSON>' <scenario>
//   node client.mjs http <url> <scenario> [bearer-token]
//
// Scenarios: "ask" (list tools, one call with progress, one failing call), "cancel"
// (abort a streaming call after its first progress notification, then call again) and
// "elicit" (a client with the elicitation capability answers the agent's questions from a
// script: approve, decline, cancel, an answer that is not a choice, a free-form answer; the
// SDK checks each result's structuredContent, which lists the answers, against the
// outputSchema), "policy" (a client without the capability: the server's policy answers),
// "give-up" (a client that never answers the question and gives up on the call after
// TIMEOUT_MS, the SDK's request timeout: 60 s unless set, then calls again) and
// "thread" (start a stored thread, continue it, try an unknown one; the SDK checks each
// result's structuredContent against the tool's outputSchema), "content" (an image as an
// attachment, the agent's images back as image blocks, a refused attachment; DOT_PNG_B64
// is the image) and "state" (a thread's state in the result, as a resource template and
// a resource; an unknown thread's state).
// Prints one JSON object on stdout.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CallToolResultSchema, ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const [mode, target, scenario, token] = process.argv.slice(2);
const TIMEOUT_MS = Number(process.env.TIMEOUT_MS || 60000);

function transportFor() {
  if (mode === "stdio") {
    const argv = JSON.parse(target);
    return new StdioClientTransport({ command: argv[0], args: argv.slice(1), env: process.env, stderr: "ignore" });
  }
  const headers = token ? { Authorization: `Bearer ${token}` } : {};
  return new StreamableHTTPClientTransport(new URL(target), { requestInit: { headers } });
}

const text = (result) => result.content.map((c) => c.text ?? "").join("");
const described = (r) => ({
  blocks: r.content.map((c) => c.text ?? ""), isError: r.isError ?? false, structured: r.structuredContent ?? null,
});

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

// What the person answers, in order, and the calls that make the agent ask.
const ELICIT_SCRIPT = [
  ['/ask rm {"path": "/tmp/x"}', { action: "accept", content: { decision: "allow_once" } }],
  ["/ask rm {}", { action: "accept", content: { decision: "reject_always" } }],
  ["/ask rm {}", { action: "decline" }],
  ["/ask rm {}", { action: "cancel" }],
  ["/ask rm {}", { action: "accept", content: { decision: "maybe" } }],
  ["/question Which colour?", { action: "accept", content: { answer: "green" } }],
  ["/question Which colour?", { action: "decline" }],
];

async function elicit(client) {
  const asked = [];
  const replies = ELICIT_SCRIPT.map(([, reply]) => reply);
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    const { message, requestedSchema, _meta } = request.params;
    asked.push({ message, requestedSchema, question: _meta?.["onedoor/question"] ?? null });
    return replies.shift();
  });
  await client.listTools(); // the SDK validates results against the output schemas it listed
  const results = [];
  for (const [message] of ELICIT_SCRIPT) {
    results.push(described(await client.callTool({ name: "ask", arguments: { message } })));
  }
  return { asked, results };
}

async function policy(client) {
  await client.listTools();
  const approval = await client.callTool({ name: "ask", arguments: { message: "/ask rm {}" } });
  const question = await client.callTool({ name: "ask", arguments: { message: "/question Which colour?" } });
  return { approval: described(approval), question: described(question) };
}

async function giveUp(client) {
  let asked = 0;
  client.setRequestHandler(ElicitRequestSchema, async () => {
    asked += 1;
    return new Promise(() => {}); // nobody answers
  });
  let error = null;
  try {
    await client.callTool({ name: "ask", arguments: { message: "/ask deploy {}" } }, CallToolResultSchema, { timeout: TIMEOUT_MS });
  } catch (exc) {
    error = String(exc);
  }
  const after = await client.callTool({ name: "ask", arguments: { message: "after giving up" } });
  return { asked, error, after: text(after) };
}

async function thread(client) {
  await client.listTools(); // the SDK validates results against the output schemas it listed
  const started = await client.callTool({ name: "ask", arguments: { message: "hello from node", new_thread: true } });
  const id = started.structuredContent?.thread;
  const continued = await client.callTool({ name: "ask", arguments: { message: "node again", thread: id } });
  const unknown = await client.callTool({ name: "ask", arguments: { message: "x", thread: "t-unknown" } });
  const stateless = await client.callTool({ name: "ask", arguments: { message: "stateless" } });
  const shown = (r) => ({ text: text(r), isError: r.isError ?? false, structured: r.structuredContent ?? null });
  return { started: shown(started), continued: shown(continued), unknown: shown(unknown), stateless: shown(stateless) };
}

async function content(client) {
  await client.listTools(); // the SDK validates results against the output schemas it listed
  const image = { type: "image", data: process.env.DOT_PNG_B64, mimeType: "image/png", name: "dot.png" };
  const sent = await client.callTool({ name: "ask", arguments: { message: "look", attachments: [image] } });
  const made = await client.callTool({ name: "ask", arguments: { message: "/draw /image hi" } });
  const bad = { type: "image", data: "not base64!", mimeType: "image/png" };
  const refused = await client.callTool({ name: "ask", arguments: { message: "bad", attachments: [bad] } });
  return {
    sent: described(sent),
    made: { content: made.content, meta: made._meta ?? null, structured: made.structuredContent ?? null },
    refused: { ...described(refused), meta: refused._meta ?? null },
  };
}

async function state(client) {
  await client.listTools();
  const started = await client.callTool({ name: "ask", arguments: { message: '/state {"n": 1} go', new_thread: true } });
  const id = started.structuredContent?.thread;
  const templates = (await client.listResourceTemplates()).resourceTemplates;
  const read = (await client.readResource({ uri: `onedoor://threads/${id}/state` })).contents;
  let unknown = null;
  try {
    await client.readResource({ uri: "onedoor://threads/t-000000000000000000000000/state" });
  } catch (exc) {
    unknown = exc.code ?? String(exc);
  }
  return { started: started.structuredContent ?? null, templates, read, unknown };
}

const capabilities = scenario === "elicit" || scenario === "give-up" ? { elicitation: { form: {} } } : {};
const client = new Client({ name: "onedoor-node-test", version: "1.0.0" }, { capabilities });
const transport = transportFor();
const scenarios = { ask, cancel, elicit, policy, "give-up": giveUp, thread, content, state };
if (!scenarios[scenario]) throw new Error(`unknown scenario ${scenario}`);
await client.connect(transport);
const out = await scenarios[scenario](client);
out.protocolVersion = transport.protocolVersion ?? null;
await client.close();
console.log(JSON.stringify(out));
