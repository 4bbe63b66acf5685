// The onedoor chat page: the official AG-UI client (HttpAgent) talking to the door that
// serves this page. Streams the reply, shows tool calls (arguments and result), folds
// reasoning away, shows errors, and stops a run on request. Two frontend tools run here,
// in the browser: browser_time (answered at once) and ask_user (answered by a click).
import { HttpAgent } from "@ag-ui/client";

// Opened with ?token=…, the server answered with an HttpOnly, SameSite=Strict cookie that
// this page's own requests carry: drop the token from the address bar (and history).
const params = new URLSearchParams(location.search);
if (params.has("token")) {
  params.delete("token");
  const query = params.toString();
  history.replaceState(history.state, "", location.pathname + (query ? `?${query}` : "") + location.hash);
}
const endpoint = location.pathname.endsWith("/") ? location.pathname : location.pathname + "/";
const headers = {};
const agent = new HttpAgent({ url: endpoint, headers });

const $ = (id) => document.getElementById(id);
const log = $("log");
const input = $("input");
const sendButton = $("send");
const stopButton = $("stop");
const statusLine = $("status");

const TOOLS = [
  {
    name: "browser_time",
    description: "The current date, time and time zone in the user's browser.",
    parameters: { type: "object", properties: {} },
  },
  {
    name: "ask_user",
    description: "Ask the user a yes/no question and wait for the answer.",
    parameters: { type: "object", properties: { question: { type: "string" } }, required: ["question"] },
  },
];

let counter = 0;
const newId = () =>
  globalThis.crypto?.randomUUID?.() ?? `id-${Date.now().toString(36)}-${(counter++).toString(36)}-${Math.random().toString(36).slice(2)}`;

function setState(state, text) {
  document.body.dataset.state = state;
  statusLine.textContent = text ?? state;
  const running = state === "running";
  sendButton.disabled = running;
  stopButton.hidden = !running;
  stopButton.disabled = false;
}

function add(tag, className, text) {
  const el = document.createElement(tag);
  if (className) el.className = className;
  if (text !== undefined) el.textContent = text;
  log.append(el);
  log.scrollTop = log.scrollHeight;
  return el;
}

function pretty(text) {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}

let activeRunId = null;

// One run of the agent; returns the pending frontend tool calls, if any.
async function runOnce(view) {
  const runId = newId();
  view.runId = activeRunId = runId;
  setState("running", "thinking…");
  const texts = new Map();
  const thoughts = new Map();
  let outcome = null;
  let failed = false;
  const subscriber = {
    onTextMessageStartEvent({ event }) {
      texts.set(event.messageId, add("div", "msg assistant streaming"));
      setState("running", "writing…");
    },
    onTextMessageContentEvent({ event }) {
      const el = texts.get(event.messageId);
      if (el) {
        el.textContent += event.delta;
        log.scrollTop = log.scrollHeight;
      }
    },
    onTextMessageEndEvent({ event }) {
      texts.get(event.messageId)?.classList.remove("streaming");
    },
    onReasoningStartEvent({ event }) {
      const box = add("details", "reasoning");
      box.append(Object.assign(document.createElement("summary"), { textContent: "Thinking" }));
      thoughts.set(event.messageId, box.appendChild(document.createElement("div")));
    },
    onReasoningMessageContentEvent({ event }) {
      const el = thoughts.get(event.messageId);
      if (el) el.textContent += event.delta;
    },
    onToolCallStartEvent({ event }) {
      const card = add("div", "tool");
      card.dataset.toolCallId = event.toolCallId;
      card.innerHTML = `<span class="name"></span><span class="state">running…</span><pre class="args"></pre>`;
      card.querySelector(".name").textContent = event.toolCallName;
      view.calls.set(event.toolCallId, { card, name: event.toolCallName, args: "" });
      setState("running", `calling ${event.toolCallName}…`);
    },
    onToolCallArgsEvent({ event }) {
      const call = view.calls.get(event.toolCallId);
      if (call) call.args += event.delta;
    },
    onToolCallEndEvent({ event }) {
      const call = view.calls.get(event.toolCallId);
      if (call) call.card.querySelector(".args").textContent = pretty(call.args);
    },
    onToolCallResultEvent({ event }) {
      const call = view.calls.get(event.toolCallId);
      if (!call) return;
      showResult(call, typeof event.content === "string" ? event.content : JSON.stringify(event.content), event.metadata?.isError);
    },
    onRunErrorEvent({ event }) {
      failed = true;
      add("div", "error", `The agent failed: ${event.message}`);
    },
    onRunFinishedEvent({ event }) {
      outcome = event.outcome ?? { type: "success" };
    },
    onRunFailed({ error }) {
      if (failed || error?.name === "AbortError") return;
      failed = true;
      view.refused = typeof error?.status === "number";
      add("div", "error", describe(error));
    },
  };
  try {
    await agent.runAgent({ runId, tools: TOOLS }, subscriber);
  } catch (error) {
    if (!failed && error?.name !== "AbortError") add("div", "error", describe(error));
    failed = true;
    view.refused = typeof error?.status === "number";
  }
  activeRunId = null;
  for (const el of texts.values()) el.classList.remove("streaming");
  if (outcome?.type === "cancelled" || (!outcome && !failed)) {
    add("div", "note", "Stopped.");
    setState("idle", "stopped");
    return [];
  }
  setState(failed ? "error" : "idle", failed ? "failed" : "ready");
  return outcome?.pendingToolCallIds ?? [];
}

function showResult(call, content, isError) {
  const state = call.card.querySelector(".state");
  state.textContent = isError ? "failed" : "done";
  if (isError) call.card.classList.add("error");
  call.card.querySelector(".result")?.remove();
  const pre = call.card.appendChild(document.createElement("pre"));
  pre.className = "result";
  pre.textContent = "→ " + pretty(content);
}

function describe(error) {
  if (error?.payload?.detail) return `Request refused (${error.status}): ${error.payload.detail}`;
  const text = String(error?.message ?? error);
  const match = text.match(/"detail"\s*:\s*"([^"]*)"/);
  return match ? `Request refused: ${match[1]}` : `Request failed: ${text}`;
}

// Frontend tools: they run here and their results go back in the next run's messages.
function runTool(call) {
  let args = {};
  try {
    args = call.args ? JSON.parse(call.args) : {};
  } catch {}
  if (call.name === "browser_time") {
    const now = new Date();
    return Promise.resolve(
      JSON.stringify({ iso: now.toISOString(), local: now.toLocaleString(), timeZone: Intl.DateTimeFormat().resolvedOptions().timeZone }),
    );
  }
  if (call.name === "ask_user") {
    call.card.querySelector(".state").textContent = "waiting for you";
    const box = call.card.appendChild(document.createElement("div"));
    box.className = "ask";
    box.append(Object.assign(document.createElement("div"), { textContent: String(args.question ?? "Continue?") }));
    setState("waiting", "waiting for your answer");
    return new Promise((resolve) => {
      for (const answer of ["yes", "no"]) {
        const button = box.appendChild(Object.assign(document.createElement("button"), { type: "button", textContent: answer }));
        button.onclick = () => {
          box.remove();
          resolve(answer);
        };
      }
    });
  }
  return Promise.resolve(JSON.stringify({ error: `this page has no tool named ${call.name}` }));
}

async function converse(text) {
  const id = newId();
  agent.addMessage({ id, role: "user", content: text });
  const bubble = add("div", "msg user", text.length > 1500 ? `${text.slice(0, 1500)}… (${text.length} characters)` : text);
  const view = { runId: null, calls: new Map(), refused: false };
  for (let round = 0; round < 8; round++) {
    const pending = await runOnce(view);
    if (view.refused && round === 0) {
      // the server refused the request (too large, busy, …): keep it out of the history
      agent.setMessages(agent.messages.filter((m) => m.id !== id));
      bubble.classList.add("unsent");
      bubble.title = "not sent";
      return;
    }
    if (!pending.length) return;
    for (const id of pending) {
      const call = view.calls.get(id);
      if (!call) continue;
      const content = await runTool(call);
      showResult(call, content, false);
      agent.addMessage({ id: newId(), role: "tool", toolCallId: id, content });
    }
  }
  add("div", "error", "Stopped after 8 rounds of frontend tool calls.");
}

$("composer").addEventListener("submit", (event) => {
  event.preventDefault();
  const text = input.value.trim();
  if (!text || document.body.dataset.state === "running") return;
  input.value = "";
  converse(text);
});

input.addEventListener("keydown", (event) => {
  if (event.key === "Enter" && !event.shiftKey) {
    event.preventDefault();
    $("composer").requestSubmit();
  }
});

// Stop: ask the server to cancel (the stream then ends with the cancelled outcome);
// if it does not end soon, drop the connection, which cancels the run too.
let stopping = null;
stopButton.addEventListener("click", async () => {
  stopButton.disabled = true;
  statusLine.textContent = "stopping…";
  const runId = activeRunId;
  if (!runId) return;
  try {
    await fetch(endpoint + "cancel", {
      method: "POST",
      headers: { ...headers, "Content-Type": "application/json" },
      body: JSON.stringify({ threadId: agent.threadId, runId }),
    });
  } catch {}
  clearTimeout(stopping);
  stopping = setTimeout(() => {
    if (activeRunId === runId) agent.abortRun();
  }, 3000);
});

setState("idle", "ready");
input.focus();
