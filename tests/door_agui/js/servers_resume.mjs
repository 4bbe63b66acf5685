// Interrupts answered through another server (two `onedoor serve` sharing one store), with
// the official AG-UI client: the run asks on server A, the client's resume goes to server B.
// usage: node servers_resume.mjs BASE_A BASE_B TOKEN -> prints one JSON object: scenario -> result.
import { HttpAgent, buildResumeArray } from "@ag-ui/client";

const [baseA, baseB, token] = process.argv.slice(2);
const headers = { Authorization: `Bearer ${token}` };
const user = (content) => ({ id: `u-${Math.random().toString(36).slice(2)}`, role: "user", content });

async function run(agent, params = {}) {
  const seen = { events: [], outcome: null, interrupts: null, started: null, custom: [], error: null };
  try {
    await agent.runAgent(params, {
      onEvent({ event }) {
        seen.events.push(event.type);
        if (event.type === "CUSTOM") seen.custom.push({ name: event.name, value: event.value });
      },
      onRunStartedEvent({ event }) {
        seen.started = { runId: event.runId, parentRunId: event.parentRunId ?? null };
      },
      onRunFinishedEvent(params) {
        seen.outcome = params.outcome;
        seen.runId = params.event.runId;
        if (params.outcome === "interrupt") seen.interrupts = params.interrupts;
      },
    });
  } catch (e) {
    seen.error = `${e?.name}: ${e?.message}`;
  }
  seen.pendingInterrupts = agent.pendingInterrupts.map((i) => i.id);
  return seen;
}

// Ask through `first`, answer with `response` through `then` (the client's own buildResumeArray).
async function askAndAnswer(first, then, text, response) {
  const agent = new HttpAgent({ url: `${first}/agui/`, headers, initialMessages: [user(text)] });
  const asked = await run(agent);
  const interrupt = asked.interrupts?.[0];
  agent.url = `${then}/agui/`;
  const resume = buildResumeArray(agent.pendingInterrupts, { [interrupt.id]: response });
  const second = await run(agent, { resume });
  const tool = agent.messages.find((m) => m.role === "tool");
  return {
    threadId: agent.threadId,
    first: asked,
    interrupt,
    second,
    reply: [...agent.messages].reverse().find((m) => m.role === "assistant")?.content ?? null,
    tool: tool ? { toolCallId: tool.toolCallId, content: tool.content } : null,
    roles: agent.messages.map((m) => m.role),
  };
}

const ASK = '/ask deploy {"env": "prod"}';
const results = {};
results.here = await askAndAnswer(baseA, baseA, ASK, { status: "resolved", payload: { approved: true } });
results.elsewhere = await askAndAnswer(baseA, baseB, ASK, { status: "resolved", payload: { approved: true } });
results.rejected = await askAndAnswer(baseA, baseB, ASK, { status: "resolved", payload: { approved: false } });
results.question = await askAndAnswer(baseA, baseB, "/question What colour?", { status: "resolved", payload: { answer: "blue" } });
// an invalid answer through B is refused before anything runs; the interrupt stays open there
{
  const agent = new HttpAgent({ url: `${baseA}/agui/`, headers, initialMessages: [user("/question What colour?")] });
  const first = await run(agent);
  const id = first.interrupts[0].id;
  agent.url = `${baseB}/agui/`;
  const refused = await run(agent, { resume: [{ interruptId: id, status: "resolved", payload: { answer: 42 } }] });
  const fixed = await run(agent, { resume: [{ interruptId: id, status: "resolved", payload: { answer: "red" } }] });
  agent.url = `${baseA}/agui/`;
  const again = await run(agent, { resume: [{ interruptId: id, status: "resolved", payload: { answer: "green" } }] });
  results.invalid = { refused, fixed: fixed.outcome, again, reply: [...agent.messages].reverse().find((m) => m.role === "assistant")?.content };
}
console.log(JSON.stringify(results));
