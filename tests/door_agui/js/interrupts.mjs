// Interrupts and resume with the official AG-UI client (HttpAgent from @ag-ui/client).
// usage: node interrupts.mjs BASE_URL TOKEN SHORT_TTL_BASE_URL -> prints one JSON object: scenario -> result.
import { HttpAgent, buildResumeArray, isInterruptExpired } from "@ag-ui/client";

const [base, token, shortBase] = process.argv.slice(2);
const headers = token ? { Authorization: `Bearer ${token}` } : {};
const user = (content) => ({ id: `u-${Math.random().toString(36).slice(2)}`, role: "user", content });
const agentFor = (url, text) => new HttpAgent({ url: `${url}/agui/`, headers, initialMessages: [user(text)] });

// One run; what the subscriber saw.
async function run(agent, params = {}) {
  const seen = { events: [], outcome: null, interrupts: null, started: null, custom: [], error: null, runError: null };
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
      onRunErrorEvent({ event }) {
        seen.runError = event.message;
      },
    });
  } catch (e) {
    seen.error = `${e?.name}: ${e?.message}`;
  }
  seen.pendingInterrupts = agent.pendingInterrupts.map((i) => i.id);
  return seen;
}

const last = (agent, role) => [...agent.messages].reverse().find((m) => m.role === role);

// Ask, then answer with `response` ({status, payload}) through the client's own buildResumeArray.
async function askAndAnswer(url, text, response) {
  const agent = agentFor(url, text);
  const first = await run(agent);
  const interrupt = first.interrupts?.[0];
  const resume = buildResumeArray(agent.pendingInterrupts, { [interrupt.id]: response });
  const second = await run(agent, { resume });
  const tool = agent.messages.find((m) => m.role === "tool");
  return {
    first,
    interrupt,
    second,
    reply: last(agent, "assistant")?.content ?? null,
    tool: tool ? { toolCallId: tool.toolCallId, content: tool.content } : null,
    roles: agent.messages.map((m) => m.role),
  };
}

const ASK = '/ask deploy {"env": "prod"}';
const results = {};
results.approve = await askAndAnswer(base, ASK, { status: "resolved", payload: { approved: true } });
results.reject = await askAndAnswer(base, ASK, { status: "resolved", payload: { approved: false } });
results.cancel = await askAndAnswer(base, ASK, { status: "cancelled" });
results.outcome = await askAndAnswer(base, ASK, { status: "resolved", payload: { outcome: "allow_always" } });
results.input = await askAndAnswer(base, "/question What colour?", { status: "resolved", payload: { answer: "blue" } });

// The client refuses to start a run that leaves an interrupt unanswered (its rule, not the server's).
{
  const agent = agentFor(base, ASK);
  const first = await run(agent);
  agent.addMessage(user("something else"));
  const skipped = await run(agent);
  const resume = buildResumeArray(agent.pendingInterrupts, { [first.interrupts[0].id]: { status: "cancelled" } });
  const after = await run(agent, { resume });
  results.unaddressed = { error: skipped.error, events: skipped.events, after: after.outcome, reply: last(agent, "assistant")?.content };
}

// An invalid answer: the server refuses it before the run starts; the interrupt stays open.
{
  const agent = agentFor(base, "/question What colour?");
  const first = await run(agent);
  const id = first.interrupts[0].id;
  const refused = await run(agent, { resume: [{ interruptId: id, status: "resolved", payload: { answer: 42 } }] });
  const fixed = await run(agent, { resume: [{ interruptId: id, status: "resolved", payload: { answer: "red" } }] });
  results.invalid = { refused, fixed: fixed.outcome, reply: last(agent, "assistant")?.content };
}

// Expiry (a server whose questions live a moment): the client will not answer an expired
// interrupt; it abandons it (status cancelled), and the thread goes on.
{
  const agent = agentFor(shortBase, ASK);
  const first = await run(agent);
  const interrupt = first.interrupts[0];
  // wait until the client judges it expired and the server has ended the parked run
  let active = null;
  for (let i = 0; i < 600; i++) {
    active = (await (await fetch(`${shortBase}/healthz`, { headers })).json()).active_runs;
    if (isInterruptExpired(interrupt) && active === 0) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  const late = await run(agent, { resume: [{ interruptId: interrupt.id, status: "resolved", payload: { approved: true } }] });
  const abandoned = await run(agent, { resume: [{ interruptId: interrupt.id, status: "cancelled" }] });
  agent.addMessage(user("hello again"));
  const next = await run(agent);
  results.expired = { interrupt, active, late, abandoned, next: next.outcome, reply: last(agent, "assistant")?.content };
}

console.log(JSON.stringify(results));
