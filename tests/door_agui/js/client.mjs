// The official AG-UI client (HttpAgent from @ag-ui/client) against a running door.
// usage: node client.mjs BASE_URL TOKEN -> prints one JSON object: scenario -> result.
import { HttpAgent } from "@ag-ui/client";

const [base, token] = process.argv.slice(2);
const url = `${base}/agui/`;
const headers = token ? { Authorization: `Bearer ${token}` } : {};

function agentWith(messages) {
  return new HttpAgent({ url, headers, initialMessages: messages });
}

async function run(agent, params = {}, onEvent) {
  const events = [];
  let outcome = null;
  let error = null;
  let runError = null;
  try {
    await agent.runAgent(params, {
      onEvent({ event }) {
        events.push(event.type);
        onEvent?.(event, agent);
      },
      onRunFinishedEvent({ event }) {
        outcome = event.outcome ?? null;
      },
      onRunErrorEvent({ event }) {
        runError = event.message;
      },
    });
  } catch (e) {
    error = `${e?.name}: ${e?.message}`;
  }
  return { events, outcome, error, runError, messages: agent.messages };
}

const user = (content) => ({ id: `u-${Math.random().toString(36).slice(2)}`, role: "user", content });
const results = {};

// A normal run: reasoning, the scripted word_count tool call, and a streamed reply.
results.normal = await run(agentWith([user("hello there")]));

// A second turn on the same agent: history goes back to the server.
{
  const agent = agentWith([user("first question")]);
  await run(agent);
  agent.addMessage(user("second question"));
  results.second_turn = await run(agent);
}

// A failing backend: RUN_ERROR, and the promise still settles.
results.failing = await run(agentWith([user("/fail please")]));

// A frontend tool round trip: the run ends with pendingToolCallIds; the client answers.
{
  const agent = agentWith([user('/call confirm {"question": "ship it?"}')]);
  const tools = [{ name: "confirm", description: "Ask the user", parameters: { type: "object", properties: { question: { type: "string" } } } }];
  const first = await run(agent, { tools });
  const pending = first.outcome?.pendingToolCallIds ?? [];
  for (const id of pending) agent.addMessage({ id: `t-${id}`, role: "tool", toolCallId: id, content: "yes, ship it" });
  const second = await run(agent, { tools });
  results.frontend_tool = { first, second, pending };
}

// A long streamed run aborted by the client (like the page's fallback Stop).
{
  const agent = agentWith([user("/slow /long 400 a long story")]);
  let contents = 0;
  results.abort = await run(agent, {}, (event, a) => {
    if (event.type === "TEXT_MESSAGE_CONTENT" && ++contents === 3) a.abortRun();
  });
  results.abort.contents = contents;
  // the server cancels the run when the client goes: no run is left active
  for (let i = 0; i < 100; i++) {
    const health = await (await fetch(`${base}/healthz`, { headers })).json();
    results.abort.activeRuns = health.active_runs;
    if (health.active_runs === 0) break;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

// A cancel through POST /agui/cancel: the stream ends with the cancelled outcome.
{
  const agent = agentWith([user("/slow /long 400 another long story")]);
  let contents = 0;
  const runId = `cancel-${Date.now()}`;
  results.cancel = await run(agent, { runId }, (event) => {
    if (event.type === "TEXT_MESSAGE_CONTENT" && ++contents === 3) {
      fetch(`${base}/agui/cancel`, {
        method: "POST",
        headers: { ...headers, "Content-Type": "application/json" },
        body: JSON.stringify({ threadId: agent.threadId, runId }),
      });
    }
  });
}

// A messages snapshot on request.
results.snapshot = await run(agentWith([user("snap")]), { forwardedProps: { messagesSnapshot: true } });

console.log(JSON.stringify(results));
