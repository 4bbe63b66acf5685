// The official AG-UI client (HttpAgent) applying the door's STATE_SNAPSHOT / STATE_DELTA events:
// one long-lived process; each stdin line is a JSON batch of sequences (run at once), answered
// by one stdout line. A sequence runs once on a new thread: the agent starts with `initial` as its
// state (sent as RunAgentInput.state), its message makes the scripted backend apply `deltas`
// (`/state [ops]` each), and the answer holds the client's final state, the thread's stored
// state and version (GET threads/{id}), the state events seen and the patch warnings.
// usage: node state_sequences.mjs BASE_URL TOKEN   (then JSON lines on stdin)
import { HttpAgent } from "@ag-ui/client";
import { createInterface } from "node:readline";

const [base, token] = process.argv.slice(2);
const headers = token ? { Authorization: `Bearer ${token}` } : {};
const warnings = [];
const warn = console.warn;
console.warn = (...args) => {
  const text = args.map(String).join(" ");
  if (text.includes("state patch")) warnings.push(text.slice(0, 300));
  else warn(...args);
};

async function one(seq) {
  const threadId = seq.threadId;
  const agent = new HttpAgent({ url: `${base}/agui/`, headers, threadId, initialState: seq.initial });
  const message = [...seq.deltas.map((ops) => `/state ${JSON.stringify(ops)}`), "go"].join(" ");
  agent.addMessage({ id: `u-${threadId}`, role: "user", content: message });
  const kinds = [];
  let runError = null;
  let version = null;
  const before = warnings.length;
  try {
    await agent.runAgent(
      { runId: `r-${threadId}` },
      {
        onEvent({ event }) {
          if (event.type.startsWith("STATE_")) kinds.push(event.type);
        },
        onRunErrorEvent({ event }) {
          runError = event.message;
        },
        onRunFinishedEvent({ event }) {
          version = event.metadata?.onedoor?.stateVersion ?? null;
        },
      },
    );
  } catch (error) {
    runError = `${error?.name}: ${error?.message}`;
  }
  const response = await fetch(`${base}/agui/threads/${encodeURIComponent(threadId)}`, { headers });
  const stored = await response.json();
  return {
    threadId, client: agent.state, stored: stored.state, storedVersion: stored.stateVersion, version,
    kinds, runError, warnings: warnings.slice(before),
  };
}

const lines = createInterface({ input: process.stdin });
for await (const line of lines) {
  if (!line.trim()) continue;
  const batch = JSON.parse(line);
  const out = await Promise.all(batch.map(one)); // a batch runs at once (each on its own thread)
  process.stdout.write(JSON.stringify(out) + "\n");
}
