// The onedoor chat page: the official AG-UI client (HttpAgent) talking to the door that
// serves this page. Streams the reply, shows tool calls (arguments and result), folds
// reasoning away, shows errors, and stops a run on request. Two frontend tools run here,
// in the browser: browser_time (answered at once) and ask_user (answered by a click).
// Interrupts (AG-UI 1.0): a run that ends asking for approval shows an approval card, one
// that asks a question shows a form built from its responseSchema; the answer resumes the
// run and the reply streams on below. Everything the server sends is shown as text.
// Threads (when the server keeps them): a list to switch, start and delete conversations;
// the open thread's id lives in the URL hash and localStorage, so a reload restores it from
// the server (its messages, MESSAGES_SNAPSHOT-shaped) and reattaches to a reply that is
// still being written (GET runs/{id}/events replays it from its start). The page's runs ask
// the server to finish a reply whose page went away (forwardedProps.onDisconnect) and send
// only what is new since the last assistant message: the server keeps the rest.
// Content: files attached (the attach button, or an image pasted into the composer) go as
// AG-UI content parts and show in the conversation, reloaded ones too (parts.js); tool
// results and the reply's parts show their images. State: a panel shows the shared state
// and lets the user edit it; the edit goes with the next message (state.js). What the page
// offers follows the server's capabilities (GET capabilities).
import { HttpAgent, buildResumeArray, isInterruptExpired } from "@ag-ui/client";
import { fileToPart, partElement, partName, partsBox, textOf } from "./parts.js";
import { StatePanel } from "./state.js";

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
const STORAGE_KEY = "onedoor.agui.thread";
const PAST_ROLES = new Set(["assistant", "reasoning", "activity"]);
let threadsOn = false; // the server keeps threads (GET threads answered)

// Sends only the new part of the conversation on a stored thread (not for a resume: the
// door's snapshot of a resumed run is built from the messages it gets), says the page holds
// the thread (no MESSAGES_SNAPSHOT) and which state version its state is based on. Reads
// the door's capabilities (the official HttpAgent declares getCapabilities, calls no URL).
class ThreadAgent extends HttpAgent {
  prepareRunAgentInput(parameters) {
    const input = super.prepareRunAgentInput(parameters);
    if (threadsOn && input.resume === undefined) {
      let last = -1;
      input.messages.forEach((m, i) => {
        if (PAST_ROLES.has(m.role)) last = i;
      });
      input.messages = input.messages.slice(last + 1);
      input.forwardedProps = { ...input.forwardedProps, messagesSnapshot: false, onedoor: statePanel.forwarded() };
    }
    return input;
  }

  async getCapabilities() {
    const response = await fetch(`${this.url}capabilities`, { headers: { ...this.headers, Accept: "application/json" } });
    if (!response.ok) throw new Error(`capabilities: ${response.status}`);
    return response.json();
  }
}

// Follows a run that is still going (after a reload): the same events, by GET.
class FollowAgent extends HttpAgent {
  requestInit() {
    return { method: "GET", headers: { ...this.headers, Accept: "text/event-stream" }, signal: this.abortController.signal };
  }
}

const agent = new ThreadAgent({ url: endpoint, headers });
const statePanel = new StatePanel(agent);
agent.subscribe({ onStateChanged: ({ state }) => statePanel.show(state) });

const $ = (id) => document.getElementById(id);
const log = $("log");
const input = $("input");
const sendButton = $("send");
const stopButton = $("stop");
const statusLine = $("status");
const attachButton = $("attach");
const fileInput = $("attach-input");
const pendingBox = $("pending");
let pending = []; // attachments for the next message: {part, name}

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
  sendButton.disabled = running || state === "waiting";
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

// One run of the agent (resuming interrupts when `resume` is given); returns the pending
// frontend tool calls and the interrupts the run ended with.
async function runOnce(view, resume, follow) {
  const runId = follow?.runId ?? newId();
  view.runId = activeRunId = runId;
  setState("running", "thinking…");
  const texts = new Map();
  const thoughts = new Map();
  let outcome = null;
  let failed = false;
  view.refused = false;
  view.refusedStatus = null;
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
      const known = view.calls.get(event.toolCallId);
      if (known) {
        // a call of the interrupted run, reopened by the run that resumed it: same card
        known.card.querySelector(".state").textContent = "running…";
        return;
      }
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
      showResult(call, event.content, event.metadata?.isError);
    },
    onActivitySnapshotEvent({ event }) {
      // a part of the reply that is not text (its text names it): shown under the reply
      if (event.activityType !== "onedoor.part") return;
      const box = add("div", "reply-part");
      box.append(partElement(event.content?.part));
    },
    onStateChanged({ state }) {
      statePanel.show(state);
    },
    onCustomEvent({ event }) {
      const value = event.value;
      if (event.name === "onedoor.question_answered" && value?.how === "policy") {
        add("div", "note", `Answered by the server's policy: ${String(value.outcome)}`);
      }
    },
    onRunErrorEvent({ event }) {
      failed = true;
      statePanel.finished(event);
      add("div", "error", `The agent failed: ${event.message}`);
    },
    onRunFinishedEvent({ event }) {
      statePanel.finished(event);
      outcome = event.outcome ?? { type: "success" };
    },
    onRunFailed({ error }) {
      if (failed || error?.name === "AbortError") return;
      failed = true;
      view.refused = typeof error?.status === "number";
      view.refusedStatus = error?.status ?? null;
      view.refusedCode = error?.payload?.error ?? null;
      add("div", "error", describe(error));
    },
  };
  try {
    if (follow) {
      await follow.agent.runAgent({ runId }, subscriber);
    } else {
      const forwardedProps = threadsOn ? { onDisconnect: "finish" } : {};
      await agent.runAgent({ runId, tools: TOOLS, forwardedProps, ...(resume ? { resume } : {}) }, subscriber);
    }
  } catch (error) {
    if (!failed && error?.name !== "AbortError") add("div", "error", describe(error));
    failed = true;
    view.refused = typeof error?.status === "number";
    view.refusedStatus = error?.status ?? null;
  }
  view.failed = failed;
  activeRunId = null;
  for (const el of texts.values()) el.classList.remove("streaming");
  if (outcome?.type === "cancelled" || (!outcome && !failed)) {
    add("div", "note", view.abandoning ? "The question expired; the run ended." : "Stopped.");
    setState("idle", "stopped");
    return { pending: [], interrupts: [] };
  }
  if (outcome?.type === "interrupt") {
    setState("waiting", "waiting for your answer");
    return { pending: [], interrupts: outcome.interrupts ?? [] };
  }
  setState(failed ? "error" : "idle", failed ? "failed" : "ready");
  return { pending: outcome?.pendingToolCallIds ?? [], interrupts: [] };
}

// -- interrupts --------------------------------------------------------------------------
// Each interrupt gets a card; once every card has an answer, they go back as `resume`
// entries (the client's buildResumeArray). An interrupt that expires before it is
// answered is abandoned (status "cancelled"), the only way a thread can move past it.
async function answerInterrupts(view, interrupts) {
  setState("waiting", "waiting for your answer");
  const responses = Object.create(null); // ids come from the server: no prototype to trip over
  await Promise.all(
    interrupts.map(async (interrupt) => {
      responses[interrupt.id] = await askCard(view, interrupt);
    }),
  );
  view.abandoning = interrupts.every((i) => responses[i.id].expired);
  for (const id of Object.keys(responses)) delete responses[id].expired;
  return buildResumeArray(interrupts, responses);
}

function asText(value) {
  return typeof value === "string" ? value : value === undefined || value === null ? "" : JSON.stringify(value);
}

function element(tag, className, content) {
  const el = document.createElement(tag);
  if (className) el.className = className;
  if (content !== undefined) el.textContent = content;
  return el;
}

const EXPIRY_GRACE_MS = 1500;

// One card; resolves with the response ({status, payload?, expired?}) once answered or expired.
function askCard(view, interrupt) {
  const metadata = interrupt.metadata && typeof interrupt.metadata === "object" ? interrupt.metadata : {};
  const approval = interrupt.reason === "tool_approval" || metadata.kind === "approval";
  const card = add("div", `interrupt ${approval ? "approval" : "question"}`);
  card.dataset.interruptId = asText(interrupt.id);
  card.append(element("div", "title", approval ? "Approval needed" : "The agent asks"));
  if (interrupt.message) card.append(element("div", "prompt", asText(interrupt.message)));
  const call = interrupt.toolCallId ? view.calls.get(interrupt.toolCallId) : undefined;
  if (call) call.card.querySelector(".state").textContent = "waiting for approval";
  const status = element("div", "outcome");
  return new Promise((resolve) => {
    let timer = null;
    const finish = (response, label) => {
      clearTimeout(timer);
      for (const el of card.querySelectorAll("button, input, select, textarea")) el.disabled = true;
      card.querySelector(".actions")?.remove();
      card.classList.add("answered");
      status.textContent = label;
      card.append(status);
      resolve(response);
    };
    const answer = (response, label) => {
      if (isInterruptExpired(interrupt)) finish({ status: "cancelled", expired: true }, "Expired before it was answered.");
      else finish(response, label);
    };
    if (approval) approvalBody(card, interrupt, metadata, call, answer);
    else formBody(card, interrupt, answer);
    if (interrupt.expiresAt) {
      const at = new Date(interrupt.expiresAt);
      if (!Number.isNaN(at.getTime())) {
        card.append(element("div", "expiry", `Answer before ${at.toLocaleTimeString()}`));
        // the server decides when a question has expired: the card gives up a moment after it
        // has (then the run is ended there, and abandoning it is accepted), never before
        const wait = Math.min(Math.max(at.getTime() - Date.now(), 0) + EXPIRY_GRACE_MS, 2 ** 31 - 1);
        timer = setTimeout(() => finish({ status: "cancelled", expired: true }, "Expired before it was answered."), wait);
      }
    }
  });
}

function approvalBody(card, interrupt, metadata, call, answer) {
  const name = metadata.toolName ?? call?.name ?? "a tool";
  const tool = card.appendChild(element("div", "tool-line"));
  tool.append(element("span", "label", "Tool: "), element("span", "name", asText(name)));
  const args = "arguments" in metadata ? JSON.stringify(metadata.arguments, null, 2) : pretty(call?.args ?? "");
  card.append(element("pre", "args", args ?? ""));
  const choices = Array.isArray(metadata.choices) ? metadata.choices : ["allow_once", "reject_once"];
  const actions = card.appendChild(element("div", "actions"));
  const buttons = [
    ["allow_once", "Approve", "approve", "Approved."],
    ["allow_always", "Always approve", "always", `Approved (${asText(name)} is allowed for the rest of this run).`],
    ["reject_once", "Reject", "reject", "Rejected."],
  ];
  for (const [outcome, label, className, done] of buttons) {
    if (!choices.includes(outcome)) continue;
    const button = actions.appendChild(element("button", className, label));
    button.type = "button";
    button.onclick = () => answer({ status: "resolved", payload: { outcome } }, done);
  }
}

// A form from the flat object schema the door sends (string, number, integer, boolean,
// enum); anything else is answered as JSON in a text box.
function formBody(card, interrupt, answer) {
  const schema = interrupt.responseSchema;
  const props = schema && typeof schema === "object" && schema.properties && typeof schema.properties === "object" ? schema.properties : null;
  const required = new Set(Array.isArray(schema?.required) ? schema.required : []);
  const form = card.appendChild(element("form", "fields"));
  const readers = [];
  if (props) {
    for (const [name, prop] of Object.entries(props).slice(0, 64)) {
      const row = form.appendChild(element("label", "field"));
      row.append(element("span", "label", asText(prop?.title ?? name) + (required.has(name) ? " *" : "")));
      const { input, read } = fieldInput(prop ?? {}, required.has(name));
      input.name = name;
      row.append(input);
      if (prop?.description) row.append(element("span", "hint", asText(prop.description)));
      readers.push([name, read]);
    }
  } else {
    const box = form.appendChild(element("textarea", "json"));
    box.placeholder = "Your answer, as JSON";
    readers.push([null, () => JSON.parse(box.value)]);
  }
  const actions = card.appendChild(element("div", "actions"));
  const submit = actions.appendChild(element("button", "submit", "Send answer"));
  submit.type = "button";
  const decline = actions.appendChild(element("button", "decline", "Decline"));
  decline.type = "button";
  const cancel = actions.appendChild(element("button", "cancel", "Cancel"));
  cancel.type = "button";
  const problem = card.appendChild(element("div", "problem"));
  submit.onclick = () => {
    if (!form.reportValidity()) return;
    try {
      const entries = [];
      for (const [name, read] of readers) {
        const value = read();
        if (name === null) return answer({ status: "resolved", payload: value }, "Answered.");
        if (value !== undefined) entries.push([name, value]);
      }
      answer({ status: "resolved", payload: Object.fromEntries(entries) }, "Answered.");
    } catch (error) {
      problem.textContent = `Not sent: ${error?.message ?? error}`;
    }
  };
  decline.onclick = () => answer({ status: "resolved" }, "Declined.");
  cancel.onclick = () => answer({ status: "cancelled" }, "Cancelled.");
}

function fieldInput(prop, isRequired) {
  if (Array.isArray(prop.enum)) {
    const select = element("select");
    if (!isRequired) select.append(Object.assign(element("option", "", "—"), { value: "" }));
    for (const option of prop.enum) select.append(Object.assign(element("option", "", asText(option)), { value: asText(option) }));
    select.required = isRequired;
    return { input: select, read: () => (select.value === "" && !isRequired ? undefined : select.value) };
  }
  if (prop.type === "boolean") {
    const box = element("input");
    box.type = "checkbox";
    box.checked = prop.default === true;
    return { input: box, read: () => box.checked };
  }
  const input = element("input");
  input.required = isRequired;
  if (prop.type === "number" || prop.type === "integer") {
    input.type = "number";
    input.step = prop.type === "integer" ? "1" : "any";
    if (typeof prop.minimum === "number") input.min = String(prop.minimum);
    if (typeof prop.maximum === "number") input.max = String(prop.maximum);
    return { input, read: () => (input.value === "" ? undefined : Number(input.value)) };
  }
  input.type = { email: "email", uri: "url", date: "date" }[prop.format] ?? "text";
  if (typeof prop.minLength === "number") input.minLength = prop.minLength;
  if (typeof prop.maxLength === "number") input.maxLength = prop.maxLength;
  if (typeof prop.default === "string") input.value = prop.default;
  return { input, read: () => (input.value === "" && !isRequired ? undefined : input.value) };
}

// A tool's result on its card: its text, and the images (or names) of its other parts.
function showResult(call, content, isError) {
  const state = call.card.querySelector(".state");
  state.textContent = isError ? "failed" : "done";
  if (isError) call.card.classList.add("error");
  call.card.querySelector(".result")?.remove();
  call.card.querySelector(".parts")?.remove();
  const pre = call.card.appendChild(document.createElement("pre"));
  pre.className = "result";
  pre.textContent = "→ " + pretty(textOf(content));
  const box = partsBox(content);
  if (box) call.card.append(box);
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

async function converse(text, parts) {
  try {
    await conversation(text, parts);
  } finally {
    await refreshThreads();
  }
}

// A user's message in the conversation: its text, and its attachments below it.
function userBubble(content) {
  const text = textOf(content);
  const bubble = add("div", "msg user", text.length > 1500 ? `${text.slice(0, 1500)}… (${text.length} characters)` : text);
  const box = partsBox(content);
  if (box) bubble.append(box);
  return bubble;
}

async function conversation(text, parts = []) {
  const id = newId();
  const content = parts.length ? [...(text ? [{ type: "text", text }] : []), ...parts] : text;
  agent.addMessage({ id, role: "user", content });
  const bubble = userBubble(content);
  const view = { runId: null, calls: new Map(), refused: false, abandoning: false };
  let resume;
  for (let round = 0; round < 16; round++) {
    const { pending, interrupts } = await runOnce(view, resume);
    if (view.refused && round === 0) {
      // the server refused the request (too large, busy, …): keep it out of the history
      agent.setMessages(agent.messages.filter((m) => m.id !== id));
      bubble.classList.add("unsent");
      bubble.title = "not sent";
      if (view.refusedCode === "state_conflict") await reloadState("The state changed elsewhere; your edit was not sent.");
      return;
    }
    const open = agent.pendingInterrupts;
    if (resume && view.failed && open.length) {
      // the answers were not taken. 422: a value to correct, ask again; 410: expired on
      // the server, abandon them; 404/409: unknown or answered elsewhere, nothing to send
      if (view.refusedStatus === 410) {
        view.abandoning = true;
        resume = buildResumeArray(open, Object.fromEntries(open.map((i) => [i.id, { status: "cancelled" }])));
        continue;
      }
      if (view.refusedStatus === 404 || view.refusedStatus === 409) {
        agent.pendingInterrupts = [];
        setState("idle", "ready");
        return;
      }
      resume = await answerInterrupts(view, open);
      continue;
    }
    resume = undefined;
    if (interrupts.length) {
      resume = await answerInterrupts(view, interrupts);
      continue;
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
  add("div", "error", "Stopped after 16 rounds of frontend tool calls and questions.");
}

$("composer").addEventListener("submit", (event) => {
  event.preventDefault();
  const text = input.value.trim();
  if ((!text && !pending.length) || ["running", "waiting"].includes(document.body.dataset.state)) return;
  const parts = pending.map((p) => p.part);
  input.value = "";
  pending = [];
  showPending();
  converse(text, parts);
});

// -- attachments -------------------------------------------------------------------------
async function attach(files) {
  for (const file of [...files].slice(0, 16)) {
    try {
      pending.push({ part: await fileToPart(file) });
    } catch (error) {
      add("div", "error", `Could not read ${file.name}: ${error?.message ?? error}`);
    }
  }
  showPending();
}

function showPending() {
  pendingBox.replaceChildren();
  pendingBox.hidden = pending.length === 0;
  pending.forEach((item, index) => {
    const chip = pendingBox.appendChild(element("span", "pending-item"));
    chip.append(partElement(item.part));
    chip.title = partName(item.part);
    const remove = chip.appendChild(element("button", "remove", "×"));
    remove.type = "button";
    remove.title = `Remove ${partName(item.part)}`;
    remove.onclick = () => {
      pending.splice(index, 1);
      showPending();
    };
  });
}

attachButton.addEventListener("click", () => fileInput.click());
fileInput.addEventListener("change", async () => {
  await attach(fileInput.files ?? []);
  fileInput.value = "";
});
input.addEventListener("paste", (event) => {
  const files = [...(event.clipboardData?.files ?? [])].filter((f) => f.type.startsWith("image/"));
  if (!files.length) return;
  event.preventDefault();
  attach(files);
});

// What the backend takes (GET capabilities): the attach button and what it offers.
async function offerAttachments() {
  let input = {};
  try {
    input = (await agent.getCapabilities())?.multimodal?.input ?? {};
  } catch {}
  const accept = [];
  if (input.image) accept.push("image/*");
  if (input.audio) accept.push("audio/*");
  if (input.video) accept.push("video/*");
  if (input.pdf) accept.push("application/pdf");
  attachButton.hidden = accept.length === 0 && !input.file;
  fileInput.accept = input.file ? "" : accept.join(",");
}

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

// -- threads ---------------------------------------------------------------------------
const threadList = $("thread-list");

function clearLog() {
  for (const el of [...log.children]) if (!el.classList.contains("hint")) el.remove();
  pending = [];
  showPending();
}

async function reloadState(note) {
  const { status, body } = await getJson(`threads/${encodeURIComponent(agent.threadId)}`);
  if (status === 200) statePanel.load(body.state, body.stateVersion);
  if (note) statePanel.note.textContent = note;
}

function openThreadId(id) {
  agent.threadId = id;
  try {
    localStorage.setItem(STORAGE_KEY, id);
  } catch {}
  history.replaceState(history.state, "", `${location.pathname}${location.search}#thread=${encodeURIComponent(id)}`);
  for (const item of threadList.children) item.classList.toggle("current", item.dataset.threadId === id);
}

function rememberedThreadId() {
  const match = location.hash.match(/^#thread=([^&]+)$/);
  if (match) return decodeURIComponent(match[1]);
  try {
    return localStorage.getItem(STORAGE_KEY);
  } catch {
    return null;
  }
}

async function getJson(path, method = "GET") {
  const response = await fetch(endpoint + path, { method, headers: { ...headers, Accept: "application/json" } });
  const body = await response.json().catch(() => null);
  return { status: response.status, body };
}

async function refreshThreads() {
  if (!threadsOn) return;
  const { status, body } = await getJson("threads?limit=100");
  if (status !== 200 || !Array.isArray(body?.threads)) return;
  threadList.replaceChildren();
  for (const thread of body.threads) {
    const item = element("li", "thread");
    item.dataset.threadId = asText(thread.threadId);
    const open = item.appendChild(element("button", "open", asText(thread.title) || "(untitled)"));
    open.type = "button";
    open.title = `${thread.messageCount} messages`;
    open.onclick = () => switchTo(thread.threadId);
    const remove = item.appendChild(element("button", "delete", "×"));
    remove.type = "button";
    remove.title = "Delete this conversation";
    remove.onclick = () => deleteThread(thread.threadId);
    item.classList.toggle("current", thread.threadId === agent.threadId);
    threadList.append(item);
  }
}

function busy() {
  return ["running", "waiting"].includes(document.body.dataset.state);
}

function newThread() {
  if (busy()) return;
  clearLog();
  agent.setMessages([]);
  statePanel.load({}, 0);
  openThreadId(newId());
  setState("idle", "ready");
  input.focus();
}

async function switchTo(id) {
  if (busy() || id === agent.threadId) return;
  clearLog();
  await restore(id);
}

async function deleteThread(id) {
  if (busy() && id === agent.threadId) return;
  await getJson(`threads/${encodeURIComponent(id)}`, "DELETE");
  if (id === agent.threadId) newThread();
  await refreshThreads();
}

// The messages of a stored thread, shown as the live page would have shown them.
function render(messages) {
  const calls = new Map();
  for (const m of messages) {
    if (m.role === "user") userBubble(m.content);
    else if (m.role === "assistant") {
      if (m.content) add("div", "msg assistant", asText(m.content));
      for (const call of m.toolCalls ?? []) {
        const card = add("div", "tool");
        card.dataset.toolCallId = asText(call.id);
        card.append(element("span", "name", asText(call.function?.name)), element("span", "state", "called"));
        card.append(element("pre", "args", pretty(asText(call.function?.arguments))));
        calls.set(call.id, { card, name: call.function?.name, args: call.function?.arguments ?? "" });
      }
    } else if (m.role === "tool") {
      const call = calls.get(m.toolCallId);
      if (call) showResult(call, m.content, false);
    }
  }
}

// Open a stored thread: its messages, then the reply still being written, if any.
async function restore(id) {
  const { status, body } = await getJson(`threads/${encodeURIComponent(id)}`);
  openThreadId(id);
  if (status !== 200 || !Array.isArray(body?.messages)) {
    agent.setMessages([]);
    statePanel.load({}, status === 404 ? 0 : null);
    if (status !== 404) add("div", "error", `Could not load the conversation (${status}): ${asText(body?.detail)}`);
    return;
  }
  agent.setMessages(body.messages);
  statePanel.load(body.state, body.stateVersion);
  render(body.messages);
  if (body.running?.runId) reattach(body.running); // streams on; the page is usable meanwhile
  else setState("idle", "ready");
}

async function reattach(running) {
  // (its user message is in the thread already: the server keeps it as the run starts)
  const follower = new FollowAgent({ url: `${endpoint}runs/${encodeURIComponent(running.runId)}/events`, headers });
  follower.threadId = agent.threadId;
  const view = { runId: null, calls: new Map(), refused: false, abandoning: false };
  await runOnce(view, undefined, { runId: running.runId, agent: follower });
  // the thread now holds the whole turn: take the server's copy as the history
  const { status, body } = await getJson(`threads/${encodeURIComponent(agent.threadId)}`);
  if (status === 200 && Array.isArray(body?.messages)) {
    agent.setMessages(body.messages);
    statePanel.load(body.state, body.stateVersion);
  }
  await refreshThreads();
}

$("new-thread").addEventListener("click", newThread);

async function start() {
  setState("idle", "ready");
  await offerAttachments();
  const { status, body } = await getJson("info").catch(() => ({ status: 0 }));
  threadsOn = status === 200 && body?.threads === true;
  $("threads").hidden = !threadsOn;
  if (threadsOn) {
    const id = rememberedThreadId();
    if (id) await restore(id);
    else {
      statePanel.load({}, 0);
      openThreadId(newId());
    }
    await refreshThreads();
  }
  document.body.dataset.ready = "true";
  input.focus();
}

start();
