// The official AG-UI client (HttpAgent) on stored threads: two turns on one threadId where the
// second agent knows nothing but its new message, a frontend tool answered on the thread,
// and another principal's agent refused on the same threadId.
// usage: node threads.mjs BASE_URL TOKEN_A TOKEN_B -> prints one JSON object.
import { HttpAgent } from "@ag-ui/client";

const [base, tokenA, tokenB] = process.argv.slice(2);
const url = `${base}/agui/`;
const as = (token) => ({ Authorization: `Bearer ${token}` });
const user = (content) => ({ id: `u-${Math.random().toString(36).slice(2)}`, role: "user", content });

async function run(agent, params = {}) {
  const sent = [];
  const events = [];
  let outcome = null;
  let error = null;
  const original = agent.prepareRunAgentInput.bind(agent);
  agent.prepareRunAgentInput = (p) => {
    const input = original(p);
    sent.push(input.messages.map((m) => m.role));
    return input;
  };
  try {
    await agent.runAgent(params, {
      onEvent({ event }) {
        events.push(event.type);
      },
      onRunFinishedEvent({ event }) {
        outcome = event.outcome ?? null;
      },
    });
  } catch (e) {
    error = `${e?.name}: ${e?.message}`;
  }
  return { sent, events, outcome, error, messages: agent.messages };
}

const out = {};
const threadId = `node-thread-${Date.now()}`;

// turn 1: a fresh agent on a new threadId
const first = new HttpAgent({ url, headers: as(tokenA), threadId });
first.addMessage(user("first question"));
out.first = await run(first);

// turn 2: another agent on the same threadId, sending only its new message
const second = new HttpAgent({ url, headers: as(tokenA), threadId });
second.addMessage(user("second question"));
out.second = await run(second, { forwardedProps: { messagesSnapshot: true } });

// a frontend tool on the thread: the tool call, then only the tool result goes back
const tools = [{ name: "confirm", description: "ask", parameters: { type: "object", properties: {} } }];
const caller = new HttpAgent({ url, headers: as(tokenA), threadId });
caller.addMessage(user('/call confirm {"question": "ship it?"}'));
const asked = await run(caller, { tools });
const callId = asked.outcome?.pendingToolCallIds?.[0];
const answering = new HttpAgent({ url, headers: as(tokenA), threadId });
answering.addMessage({ id: "tool-1", role: "tool", toolCallId: callId, content: "yes, ship it" });
out.tool = { asked, answered: await run(answering, { tools }) };

// principal B on A's threadId: refused, and A's conversation is not in the error
const intruder = new HttpAgent({ url, headers: as(tokenB), threadId });
intruder.addMessage(user("what did they say?"));
out.intruder = await run(intruder);

console.log(JSON.stringify({ threadId, ...out }));
