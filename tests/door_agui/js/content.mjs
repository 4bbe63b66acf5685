// The official AG-UI client (HttpAgent from @ag-ui/client) sending content parts and reading
// what comes back: text + image (and the legacy binary part, which the client converts),
// a tool result with an image, a reply's image (activity), usage on RUN_FINISHED / RUN_ERROR,
// the capabilities document checked against @ag-ui/core's own schema, and an agent that
// joins a thread another client started (it gets the history as a MESSAGES_SNAPSHOT).
// usage: node content.mjs BASE_URL TOKEN PNG_BASE64 -> prints one JSON object.
import { HttpAgent } from "@ag-ui/client";
import { AgentCapabilitiesSchema } from "@ag-ui/core/schemas";

const [base, token, png] = process.argv.slice(2);
const url = `${base}/agui/`;
const headers = { Authorization: `Bearer ${token}` };
const id = () => `m-${Math.random().toString(36).slice(2)}`;
const posted = []; // the bodies the client really sent (after its own middleware)
const fetchRecorded = (input, init) => {
  if (init?.body) posted.push(JSON.parse(init.body));
  return fetch(input, init);
};
const warnings = [];
console.warn = (...args) => warnings.push(args.map(String).join(" ").slice(0, 300));

async function run(agent, params = {}) {
  const out = { events: [], usage: null, errorUsage: null, runError: null, error: null, sent: null };
  const original = agent.prepareRunAgentInput.bind(agent);
  agent.prepareRunAgentInput = (p) => {
    const input = original(p);
    out.sent = input.messages;
    return input;
  };
  try {
    await agent.runAgent(params, {
      onEvent({ event }) {
        out.events.push(event.type);
      },
      onRunFinishedEvent({ event }) {
        out.usage = event.usage ?? null;
      },
      onRunErrorEvent({ event }) {
        out.runError = event.message;
        out.errorUsage = event.usage ?? null;
      },
    });
  } catch (e) {
    out.error = `${e?.name}: ${e?.message}`;
  }
  out.messages = structuredClone(agent.messages);
  return out;
}

const image = { type: "image", source: { type: "data", value: png, mimeType: "image/png" }, metadata: { filename: "cat.png" } };
const results = {};

{
  const agent = new HttpAgent({ url, headers, threadId: `pics-${Date.now()}` });
  agent.addMessage({ id: id(), role: "user", content: [{ type: "text", text: "what is this?" }, image] });
  results.image = await run(agent, { forwardedProps: { messagesSnapshot: true } });
}
{
  const agent = new HttpAgent({ url, headers, threadId: `legacy-${Date.now()}`, fetch: fetchRecorded });
  agent.addMessage({ id: id(), role: "user", content: [{ type: "binary", mimeType: "image/png", data: png, filename: "old.png" }] });
  results.legacy = await run(agent);
  results.legacy.posted = posted.at(-1).messages;
}
{
  const agent = new HttpAgent({ url, headers, threadId: `draw-${Date.now()}` });
  agent.addMessage({ id: id(), role: "user", content: "/draw /image a dot" });
  results.draw = await run(agent);
}
{
  const agent = new HttpAgent({ url, headers, threadId: `fail-${Date.now()}` });
  agent.addMessage({ id: id(), role: "user", content: "/error half of it" });
  results.error = await run(agent);
}
{
  const response = await fetch(`${url}capabilities`, { headers });
  const body = await response.json();
  const parsed = AgentCapabilitiesSchema.safeParse(body);
  results.capabilities = { status: response.status, body, ok: parsed.success, issues: parsed.success ? [] : parsed.error.issues };
}
{
  // one client starts a thread (two turns); another joins it knowing only its new message
  const threadId = `joined-${Date.now()}`;
  const first = new HttpAgent({ url, headers, threadId });
  first.addMessage({ id: id(), role: "user", content: "first turn" });
  await run(first);
  first.addMessage({ id: id(), role: "user", content: "second turn" });
  await run(first);
  const joining = new HttpAgent({ url, headers, threadId });
  joining.addMessage({ id: id(), role: "user", content: "I just arrived" });
  results.join = await run(joining);
  // the joined client now holds the thread: its next run gets no snapshot
  joining.addMessage({ id: id(), role: "user", content: "and again" });
  results.joinedAgain = await run(joining);
}
results.warnings = warnings;
console.log(JSON.stringify(results));
