// The official AG-UI client (HttpAgent) joining a stored thread it holds nothing of: one run
// with only a new message; prints the events' types and the conversation the client holds after.
// usage: node join_thread.mjs BASE_URL THREAD_ID MESSAGE [TOKEN] -> prints one JSON object.
import { HttpAgent } from "@ag-ui/client";

const [base, threadId, message, token] = process.argv.slice(2);
const headers = token ? { Authorization: `Bearer ${token}` } : {};
const agent = new HttpAgent({ url: `${base}/agui/`, headers, threadId });
agent.addMessage({ id: "joined-1", role: "user", content: message });
const out = { events: [], error: null };
try {
  await agent.runAgent({}, { onEvent: ({ event }) => out.events.push(event.type) });
} catch (e) {
  out.error = `${e?.name}: ${e?.message}`;
}
out.messages = agent.messages.map((m) => ({ id: m.id, role: m.role, content: m.content ?? null }));
console.log(JSON.stringify(out));
