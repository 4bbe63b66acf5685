// An independent ACP client (@agentclientprotocol/sdk) driving `onedoor acp`.
//
//   node client.mjs basic '["onedoor","acp"]'
//   node client.mjs permission '["python","approval_agent.py"]'
//   node client.mjs questions '["onedoor","acp"]'          (approvals and elicitation, issue 15)
//   node client.mjs always '["python","approval_agent.py","twice"]'
//   node client.mjs hostile '["onedoor","acp"]'            (unreadable permission answers)
//   node client.mjs disconnect '["onedoor","acp"]'         (the client goes while asked)
//   node client.mjs threads '["onedoor","acp"]' THREAD_ID  (issue 16: list every thread, load one, bad input)
//   node client.mjs content '["onedoor","acp"]' CONFIG     (issue 25: what Zed sends; issue 27: usage)
//   node client.mjs replay '["onedoor","acp"]' CONFIG      (issue 25: session/load shows the blocks again)
//   node client.mjs models '["onedoor","acp",...]' CONFIG  (issue 30: the model picker; CONFIG {phase, sid?})
//
// Prints one JSON object (what it saw) on its last stdout line; exits 1 on a failed check.
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import { client, methods, ndJsonStream } from "@agentclientprotocol/sdk";

const [scenario, rawCommand] = process.argv.slice(2);
const command = JSON.parse(rawCommand);
const child = spawn(command[0], command.slice(1), { stdio: ["pipe", "pipe", "inherit"] });
const stream = ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));

const updates = []; // [sessionId, update], in arrival order
const permissionRequests = [];
const answers = []; // optionIds (or whole results) to answer permission requests with, in order
const elicitations = [];
const elicitationAnswers = []; // results of elicitation/create, in order
const editorFiles = new Map(); // path -> text: what the editor holds (fs/read_text_file reads it, not the disk)
const fsRequests = [];
let onAsked = () => {}; // called when a permission or elicitation request arrives
let onUpdate = () => {};

function check(condition, message) {
  if (!condition) throw new Error(`check failed: ${message}`);
}

function textOf(kind, from = 0) {
  return updates.slice(from)
    .filter(([, u]) => u.sessionUpdate === kind)
    .map(([, u]) => u.content.text).join("");
}

const app = client({ name: "onedoor-ts-test" })
  .onNotification(methods.client.session.update, (ctx) => {
    updates.push([ctx.params.sessionId, ctx.params.update]); // record before any await
    onUpdate();
  })
  .onRequest(methods.client.session.requestPermission, (ctx) => {
    permissionRequests.push(ctx.params);
    onAsked();
    const answer = answers.shift() ?? "reject_once";
    if (answer === "never") return new Promise(() => {}); // the user never answers
    return typeof answer === "string" ? { outcome: { outcome: "selected", optionId: answer } } : answer;
  })
  .onRequest(methods.client.fs.readTextFile, (ctx) => {
    fsRequests.push(ctx.params);
    const text = editorFiles.get(ctx.params.path);
    if (text === undefined) throw new Error(`no such file in the editor: ${ctx.params.path}`);
    const lines = text.split("\n");
    const first = (ctx.params.line ?? 1) - 1;
    const last = ctx.params.limit == null ? lines.length : first + ctx.params.limit;
    return { content: lines.slice(first, last).join("\n") };
  })
  .onRequest(methods.client.elicitation.create, (ctx) => {
    elicitations.push(ctx.params);
    onAsked();
    const answer = elicitationAnswers.shift() ?? { action: "decline" };
    if (answer === "never") return new Promise(() => {});
    return answer;
  });

function waitFor(predicate, ms = 20000) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("timed out waiting for an update")), ms);
    onUpdate = () => {
      if (predicate()) {
        clearTimeout(timer);
        onUpdate = () => {};
        resolve();
      }
    };
    onUpdate();
  });
}

async function basic(ctx) {
  const init = await ctx.request(methods.agent.initialize, {
    protocolVersion: 1,
    clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
  });
  check(init.protocolVersion === 1, "protocol version 1");
  check(init.agentCapabilities.loadSession === true, "loadSession advertised");
  const session = await ctx.request(methods.agent.session.new, { cwd: process.cwd(), mcpServers: [] });
  const sid = session.sessionId;
  const result = await ctx.request(methods.agent.session.prompt, {
    sessionId: sid, prompt: [{ type: "text", text: "hello from typescript" }],
  });
  check(result.stopReason === "end_turn", `stop reason ${result.stopReason}`);
  const kinds = updates.filter(([s]) => s === sid).map(([, u]) => u.sessionUpdate)
    .filter((k) => k !== "available_commands_update");
  const collapsed = kinds.filter((k, i) => i === 0 || kinds[i - 1] !== k);
  const statuses = updates.filter(([, u]) => u.sessionUpdate.startsWith("tool_call")).map(([, u]) => u.status);
  const reply = textOf("agent_message_chunk");
  check(reply === "You said: hello from typescript (3 words, turn 1)", `reply ${reply}`);

  // cancel a long prompt
  const from = updates.length;
  const long = ctx.request(methods.agent.session.prompt, {
    sessionId: sid, prompt: [{ type: "text", text: "/slow /long 100000 keep talking" }],
  });
  await waitFor(() => updates.slice(from).filter(([, u]) => u.sessionUpdate === "agent_message_chunk").length >= 2);
  await ctx.notify(methods.agent.session.cancel, { sessionId: sid });
  const cancelled = await long;
  check(cancelled.stopReason === "cancelled", `cancel stop reason ${cancelled.stopReason}`);
  const chunksAfterCancel = updates.slice(from).filter(([, u]) => u.sessionUpdate === "agent_message_chunk").length;

  // an unknown session is a protocol error
  let unknownCode = null;
  try {
    await ctx.request(methods.agent.session.prompt, { sessionId: "sess_nope", prompt: [{ type: "text", text: "x" }] });
  } catch (err) {
    unknownCode = err.code;
  }
  check(unknownCode === -32002, `unknown session code ${unknownCode}`);
  return { collapsed, statuses, reply, cancelled: cancelled.stopReason, chunksAfterCancel, unknownCode };
}

async function permission(ctx) {
  await ctx.request(methods.agent.initialize, { protocolVersion: 1, clientCapabilities: {} });
  const { sessionId: sid } = await ctx.request(methods.agent.session.new, { cwd: process.cwd(), mcpServers: [] });
  answers.push("allow_once", "reject_once");
  const allowed = await ctx.request(methods.agent.session.prompt, { sessionId: sid, prompt: [{ type: "text", text: "yes" }] });
  const allowedText = textOf("agent_message_chunk");
  const allowedStatuses = updates.filter(([, u]) => u.sessionUpdate.startsWith("tool_call")).map(([, u]) => u.status);
  const from = updates.length;
  const rejected = await ctx.request(methods.agent.session.prompt, { sessionId: sid, prompt: [{ type: "text", text: "no" }] });
  const rejectedText = textOf("agent_message_chunk", from);
  const rejectedStatuses = updates.slice(from).filter(([, u]) => u.sessionUpdate.startsWith("tool_call")).map(([, u]) => u.status);
  check(permissionRequests.length === 2, "two permission requests");
  check(permissionRequests[0].toolCall.rawInput.path === "notes.txt", "tool call input shown");
  return {
    stops: [allowed.stopReason, rejected.stopReason],
    allowedText, rejectedText, allowedStatuses, rejectedStatuses,
    optionKinds: permissionRequests[0].options.map((o) => o.kind),
  };
}

const WITH_ELICITATION = { fs: { readTextFile: false, writeTextFile: false }, terminal: false, elicitation: { form: {} } };

async function prompt(ctx, sid, text) {
  const from = updates.length;
  const asked = permissionRequests.length;
  const result = await ctx.request(methods.agent.session.prompt, { sessionId: sid, prompt: [{ type: "text", text }] });
  return {
    stop: result.stopReason,
    text: textOf("agent_message_chunk", from),
    statuses: updates.slice(from).filter(([, u]) => u.sessionUpdate.startsWith("tool_call")).map(([, u]) => u.status),
    asked: permissionRequests.length - asked,
  };
}

async function questions(ctx) {
  await ctx.request(methods.agent.initialize, { protocolVersion: 1, clientCapabilities: WITH_ELICITATION });
  const { sessionId: sid } = await ctx.request(methods.agent.session.new, { cwd: process.cwd(), mcpServers: [] });
  const ask = '/ask rm {"path": "x"}';
  answers.push("allow_once", "reject_once", "allow_always");
  const allowOnce = await prompt(ctx, sid, ask);
  const rejectOnce = await prompt(ctx, sid, ask);
  const allowAlways = await prompt(ctx, sid, ask);
  const afterAlways = await prompt(ctx, sid, ask);
  elicitationAnswers.push({ action: "accept", content: { answer: "main" } }, { action: "decline" }, { action: "cancel" });
  const accepted = await prompt(ctx, sid, "/question Which branch?");
  const declined = await prompt(ctx, sid, "/question Which branch?");
  const cancelled = await prompt(ctx, sid, "/question Which branch?");
  return {
    allowOnce, rejectOnce, allowAlways, afterAlways, accepted, declined, cancelled,
    optionKinds: permissionRequests[0].options.map((o) => o.kind),
    optionIds: permissionRequests[0].options.map((o) => o.optionId),
    rawInput: permissionRequests[0].toolCall.rawInput,
    elicitation: elicitations[0],
  };
}

async function always(ctx) {
  await ctx.request(methods.agent.initialize, { protocolVersion: 1, clientCapabilities: {} });
  const { sessionId: sid } = await ctx.request(methods.agent.session.new, { cwd: process.cwd(), mcpServers: [] });
  answers.push("allow_always");
  const first = await prompt(ctx, sid, "one");
  const second = await prompt(ctx, sid, "two");
  return { first, second };
}

async function hostile(ctx) {
  await ctx.request(methods.agent.initialize, { protocolVersion: 1, clientCapabilities: {} });
  const { sessionId: sid } = await ctx.request(methods.agent.session.new, { cwd: process.cwd(), mcpServers: [] });
  const ask = '/ask rm {"path": "x"}';
  const seen = [];
  for (const answer of ["no_such_option", { outcome: { outcome: "selected", optionId: 42 } }, { outcome: "allow_once" }, { nope: true }]) {
    answers.push(answer);
    seen.push(await prompt(ctx, sid, ask));
  }
  answers.push("allow_once");
  const good = await prompt(ctx, sid, ask);
  return { seen, good };
}

async function disconnect(ctx) {
  await ctx.request(methods.agent.initialize, { protocolVersion: 1, clientCapabilities: WITH_ELICITATION });
  const { sessionId: sid } = await ctx.request(methods.agent.session.new, { cwd: process.cwd(), mcpServers: [] });
  const what = process.env.ACP_TEST_ASK === "question" ? "/question Which branch?" : '/ask rm {"path": "x"}';
  answers.push("never");
  elicitationAnswers.push("never");
  const asked = new Promise((resolve) => { onAsked = resolve; });
  ctx.request(methods.agent.session.prompt, { sessionId: sid, prompt: [{ type: "text", text: what }] }).catch(() => {});
  await asked;
  const exited = new Promise((resolve) => child.once("exit", (code, signal) => resolve({ code, signal })));
  child.stdin.end(); // the client goes away while the question is open
  const timer = setTimeout(() => child.kill("SIGKILL"), 20000);
  const exit = await exited;
  clearTimeout(timer);
  return { asked: permissionRequests.length + elicitations.length, exit, killed: exit.signal === "SIGKILL" };
}

async function errorOf(request) {
  try {
    await request;
  } catch (err) {
    return { code: err.code, message: err.message };
  }
  return null;
}

async function threads(ctx) {
  const target = process.argv[4];
  await ctx.request(methods.agent.initialize, { protocolVersion: 1, clientCapabilities: {} });
  const listed = [];
  let cursor = undefined;
  for (let page = 0; page < 100; page++) { // bounded: follow nextCursor to the end
    const reply = await ctx.request(methods.agent.session.list, { cwd: process.cwd(), ...(cursor ? { cursor } : {}) });
    listed.push(...reply.sessions.map((s) => ({ sessionId: s.sessionId, title: s.title ?? null, updatedAt: s.updatedAt })));
    cursor = reply.nextCursor;
    if (!cursor) break;
  }
  const before = updates.length;
  await ctx.request(methods.agent.session.load, { sessionId: target, cwd: process.cwd(), mcpServers: [] });
  const replay = updates.slice(before).filter(([s, u]) => s === target && u.sessionUpdate !== "available_commands_update")
    .map(([, u]) => u);
  const from = updates.length;
  const result = await ctx.request(methods.agent.session.prompt, {
    sessionId: target, prompt: [{ type: "text", text: "and from the editor" }],
  });
  check(result.stopReason === "end_turn", `stop reason ${result.stopReason}`);
  const reply = textOf("agent_message_chunk", from);
  const badCursor = await errorOf(ctx.request(methods.agent.session.list, { cursor: "not a cursor!" }));
  const goneCursor = await errorOf(ctx.request(methods.agent.session.list, { cursor: "t-000000000000000000000000" }));
  const unknownLoad = await errorOf(ctx.request(methods.agent.session.load, {
    sessionId: "t-000000000000000000000000", cwd: process.cwd(), mcpServers: [],
  }));
  const badIdLoad = await errorOf(ctx.request(methods.agent.session.load, {
    sessionId: "../../etc/passwd", cwd: process.cwd(), mcpServers: [],
  }));
  // the agent still serves after the refusals
  const again = await ctx.request(methods.agent.session.list, { cwd: process.cwd() });
  return { listed, replay, reply, badCursor, goneCursor, unknownLoad, badIdLoad, listedAfter: again.sessions.length };
}

// -- issue 25 (content) and 27 (usage) --------------------------------------------------------
async function turn(ctx, sid, prompt) {
  const from = updates.length;
  const result = await ctx.request(methods.agent.session.prompt, { sessionId: sid, prompt });
  const mine = updates.slice(from).filter(([s]) => s === sid).map(([, u]) => u);
  const textChunks = mine.filter((u) => u.sessionUpdate === "agent_message_chunk" && u.content.type === "text");
  return {
    result,
    text: textChunks.map((u) => u.content.text).join(""),
    textChunks: textChunks.length,
    other: mine.filter((u) => !(u.sessionUpdate === "agent_message_chunk" && u.content.type === "text")
      && u.sessionUpdate !== "agent_thought_chunk"),
  };
}

async function content(ctx) {
  const config = JSON.parse(process.argv[4]);
  const ws = config.workspace;
  for (const [path, text] of Object.entries(config.editorFiles)) editorFiles.set(path, text);
  const init = await ctx.request(methods.agent.initialize, {
    protocolVersion: 1, clientCapabilities: { fs: { readTextFile: true, writeTextFile: false }, terminal: false },
  });
  const { sessionId: sid } = await ctx.request(methods.agent.session.new, { cwd: ws, mcpServers: [] });
  // what Zed sends for "explain @sample.py:5-10" without embeddedContext, a pasted file, a screenshot
  const link = await turn(ctx, sid, [
    { type: "text", text: "explain " },
    { type: "resource_link", uri: `file://${ws}/sample.py#L5-L10`, name: "sample.py", mimeType: "text/x-python" },
  ]);
  const fsAfterLink = fsRequests.length;
  const embedded = await turn(ctx, sid, [
    { type: "text", text: "and this" },
    { type: "resource", resource: { uri: `file://${ws}/b.py`, text: "print(2)\n", mimeType: "text/x-python" } },
  ]);
  const image = await turn(ctx, sid, [
    { type: "text", text: "what is this?" },
    { type: "image", data: config.png, mimeType: "image/png", uri: `file://${ws}/dot.png` },
  ]);
  const replyImage = await turn(ctx, sid, [{ type: "text", text: "/image" }]);
  const draw = await turn(ctx, sid, [{ type: "text", text: "/draw" }]);
  const bad = {};
  const hostile = {
    outside: [{ type: "resource_link", uri: "file:///etc/passwd", name: "passwd" }],
    dotdot: [{ type: "resource_link", uri: `file://${ws}/../secret.txt`, name: "secret.txt" }],
    otherHost: [{ type: "resource_link", uri: `file://evil.example${ws}/sample.py`, name: "sample.py" }],
    badRange: [{ type: "resource_link", uri: `file://${ws}/sample.py#L10-L5`, name: "sample.py" }],
    notInEditor: [{ type: "resource_link", uri: `file://${ws}/missing.py`, name: "missing.py" }],
    badBase64: [{ type: "image", data: "not base64!!", mimeType: "image/png" }],
    lyingType: [{ type: "image", data: config.png, mimeType: "image/jpeg" }],
    audioAsImage: [{ type: "image", data: config.png, mimeType: "audio/wav" }],
    unknownBlock: [{ type: "hologram", data: "x" }],
  };
  const fsBeforeBad = fsRequests.length;
  for (const [name, prompt] of Object.entries(hostile)) {
    bad[name] = await errorOf(ctx.request(methods.agent.session.prompt, { sessionId: sid, prompt }));
  }
  const after = await turn(ctx, sid, [{ type: "text", text: "still there?" }]);
  return {
    caps: init.agentCapabilities.promptCapabilities, sid, link, embedded, image, replyImage, draw, bad, after,
    fsRequests, fsAfterLink, fsBadPaths: fsRequests.slice(fsBeforeBad).map((r) => r.path),
  };
}

async function replay(ctx) {
  const config = JSON.parse(process.argv[4]);
  await ctx.request(methods.agent.initialize, { protocolVersion: 1, clientCapabilities: {} });
  const before = updates.length;
  await ctx.request(methods.agent.session.load, { sessionId: config.sid, cwd: config.workspace, mcpServers: [] });
  const replayed = updates.slice(before).filter(([s, u]) => s === config.sid && u.sessionUpdate !== "available_commands_update")
    .map(([, u]) => u);
  return { replayed };
}

// -- issue 30 (models) -------------------------------------------------------------------------
const setOption = (ctx, sessionId, configId, value) =>
  ctx.request(methods.agent.session.setConfigOption, { sessionId, configId, value });
const setModel = (ctx, sessionId, modelId) => ctx.request("session/set_model", { sessionId, modelId }); // no constant in the SDK
const say = (text) => [{ type: "text", text }];

async function models(ctx) {
  const config = JSON.parse(process.argv[4]);
  await ctx.request(methods.agent.initialize, { protocolVersion: 1, clientCapabilities: {} });
  if (config.phase === "restore") { // a new agent process: session/load brings the session's model back
    const loaded = await ctx.request(methods.agent.session.load, { sessionId: config.sid, cwd: process.cwd(), mcpServers: [] });
    const next = await turn(ctx, config.sid, say("after load"));
    return { loaded: { configOptions: loaded.configOptions, models: loaded.models ?? null }, next: next.result.stopReason };
  }
  const created = await ctx.request(methods.agent.session.new, { cwd: process.cwd(), mcpServers: [] });
  const sid = created.sessionId;
  const stops = [];
  stops.push((await turn(ctx, sid, say("first turn"))).result.stopReason);
  const picked = await setOption(ctx, sid, "model", "b");
  stops.push((await turn(ctx, sid, say("second turn"))).result.stopReason);
  const from = updates.length;
  const legacy = await setModel(ctx, sid, "a"); // the older, unstable picker
  const notified = updates.slice(from).filter(([s, u]) => s === sid && u.sessionUpdate === "config_option_update")
    .map(([, u]) => u.configOptions);
  stops.push((await turn(ctx, sid, say("third turn"))).result.stopReason);
  const bad = {
    unknownOption: await errorOf(setOption(ctx, sid, "model", "nope")),
    unknownLegacy: await errorOf(setModel(ctx, sid, "nope")),
    notAString: await errorOf(setModel(ctx, sid, 7)),
    unknownSession: await errorOf(setModel(ctx, "t-000000000000000000000000", "a")),
  };
  // a switch while a prompt runs is refused; the prompt goes on until cancelled
  const fromRun = updates.length;
  const running = ctx.request(methods.agent.session.prompt, { sessionId: sid, prompt: say("/slow 0.05 /long 400 go") });
  await waitFor(() => updates.slice(fromRun).some(([s, u]) => s === sid && u.sessionUpdate === "agent_message_chunk"));
  bad.whileRunning = await errorOf(setOption(ctx, sid, "model", "b"));
  bad.whileRunningLegacy = await errorOf(setModel(ctx, sid, "b"));
  bad.backendWhileRunning = await errorOf(setOption(ctx, sid, "backend", "scripted"));
  await ctx.notify(methods.agent.session.cancel, { sessionId: sid });
  stops.push((await running).stopReason);
  // a backend without models: no model option, a switch is refused
  const toScripted = await setOption(ctx, sid, "backend", "scripted");
  bad.noModels = await errorOf(setOption(ctx, sid, "model", "a"));
  bad.noModelsLegacy = await errorOf(setModel(ctx, sid, "a"));
  const scripted = await turn(ctx, sid, say("scripted turn"));
  const back = await setOption(ctx, sid, "backend", "pydantic-ai"); // its model is the one picked for it
  await setOption(ctx, sid, "model", "b");
  stops.push((await turn(ctx, sid, say("last turn"))).result.stopReason);
  return {
    sid, created: { configOptions: created.configOptions, models: created.models ?? null },
    picked: picked.configOptions, legacy, notified, bad, stops, toScripted: toScripted.configOptions,
    scripted: scripted.text, back: back.configOptions,
  };
}

const scenarios = { basic, permission, questions, always, hostile, disconnect, threads, content, replay, models };
let code = 0;
let running = null;
try {
  let seen;
  try {
    seen = await app.connectWith(stream, (ctx) => (running = scenarios[scenario](ctx)));
  } catch (err) {
    if (scenario !== "disconnect" || running === null) throw err;
    seen = await running; // the connection closed on purpose: the scenario's own result counts
  }
  console.log(JSON.stringify({ ok: true, ...seen }));
} catch (err) {
  console.log(JSON.stringify({ ok: false, error: String(err && err.stack || err) }));
  code = 1;
} finally {
  child.stdin.end();
  if (child.exitCode === null && child.signalCode === null) {
    const exited = new Promise((resolve) => child.once("exit", resolve));
    const timer = setTimeout(() => child.kill("SIGKILL"), 10000);
    await exited;
    clearTimeout(timer);
  }
}
process.exit(code);
