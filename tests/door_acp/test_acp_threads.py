"""Issue 16: ACP sessions are threads of the kernel's store (one conversation across doors).

In process (the ``acp`` library's client over a memory channel, a real SQLite store on
disk) and as editors run it (`onedoor acp` subprocesses, kill -9, the TypeScript SDK).
"""

from __future__ import annotations

import asyncio
import json
import signal
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import pytest
from acp import RequestError, spawn_agent_process, text_block
from acp_harness import JS_DIR, DoorHarness, Recorder, node_ready, onedoor_command  # type: ignore[import-not-found]
from onedoor.kernel import INTERRUPTED_REPLY
from onedoor.messages import Message, ToolCall
from onedoor.testing import scripted_kernel
from onedoor.threads.sqlite import SQLiteThreadStore
from onedoor_test_support import await_for

pytestmark = pytest.mark.timeout(90)

# A conversation as another door (REST, the web page) leaves it in the store.
WEB_TURN = [
    Message("user", "plan the trip"),
    Message("assistant", "Let me look.", (ToolCall("c1", "search", {"q": "trains"}),)),
    Message("tool", "3 trains", tool_call_id="c1"),
    Message("assistant", "Take the 9:15."),
]
# ... and how session/load shows it, in order.
WEB_REPLAY = [
    ("user_message_chunk", "plan the trip"),
    ("agent_message_chunk", "Let me look."),
    ("tool_call", "c1"),
    ("tool_call_update", "c1"),
    ("agent_message_chunk", "Take the 9:15."),
]


def _shape(update: dict[str, Any]) -> tuple[str, str]:
    kind = update["sessionUpdate"]
    return kind, update["toolCallId"] if kind.startswith("tool_call") else update["content"]["text"]


async def _web_thread(store: SQLiteThreadStore, messages: list[Message] = WEB_TURN) -> str:
    thread = await store.create("local")
    await store.append("local", thread.id, messages, expected_version=0)
    return thread.id


def _kernel(path: Path, **options: Any) -> Any:
    kernel = scripted_kernel(reasoning=False, **options)
    kernel.store = SQLiteThreadStore(path)
    return kernel


async def test_list_shows_every_doors_threads_and_load_replays_and_continues_them(data_dir: Path) -> None:
    kernel = _kernel(data_dir / "threads.sqlite3")
    store = kernel.store
    try:
        older = await _web_thread(store, [Message("user", "an older question"), Message("assistant", "an answer")])
        web = await _web_thread(store)
        async with DoorHarness(kernel, data_dir) as door:
            listed = await door.conn.list_sessions(cwd="/work/project")
            assert [(s.session_id, s.title) for s in listed.sessions] == [(web, "plan the trip"), (older, "an older question")]
            assert listed.next_cursor is None and listed.sessions[0].cwd == "/work/project"
            await door.conn.load_session(cwd="/work/project", session_id=web, mcp_servers=[])
            replay = [u for s, u in door.recorder.updates if s == web and u["sessionUpdate"] != "available_commands_update"]
            assert [_shape(u) for u in replay] == WEB_REPLAY
            assert replay[2]["rawInput"] == {"q": "trains"} and replay[3]["rawOutput"] == "3 trains"
            assert replay[3]["status"] == "completed"
            door.recorder.updates.clear()
            response = await door.prompt(web, "and from the editor")
            assert response.stop_reason == "end_turn"
            assert door.recorder.text() == "You said: and from the editor (4 words, turn 2)"
            newest = await door.conn.list_sessions()
            assert [s.session_id for s in newest.sessions] == [web, older]
        thread = await store.get("local", web)
        assert thread is not None
        assert list(thread.messages[:4]) == WEB_TURN  # the kernel appended the turn after the web door's
        assert thread.messages[4] == Message("user", "and from the editor")
        assert thread.messages[-1].content == "You said: and from the editor (4 words, turn 2)"
    finally:
        await store.close()


async def test_listing_pages_with_a_cursor_and_filters_by_directory(data_dir: Path) -> None:
    kernel = _kernel(data_dir / "threads.sqlite3", tool=False)
    store = kernel.store
    try:
        web = [await _web_thread(store, [Message("user", f"question {i}")]) for i in range(55)]
        async with DoorHarness(kernel, data_dir) as door:
            in_a = await door.new_session(cwd="/a")
            await door.prompt(in_a, "asked in /a")
            seen: list[str] = []
            cursor = None
            for _ in range(10):  # bounded: 56 sessions are two pages
                page = await door.conn.list_sessions(cwd="/b", cursor=cursor)
                seen += [s.session_id for s in page.sessions]
                cursor = page.next_cursor
                if cursor is None:
                    break
            assert seen == web[::-1]  # newest first, each once; /a's session is not /b's
            everywhere = await door.conn.list_sessions(cwd="/a")
            assert everywhere.sessions[0].session_id == in_a and everywhere.sessions[0].cwd == "/a"
            assert len(everywhere.sessions) == 50 and everywhere.next_cursor is not None
    finally:
        await store.close()


async def test_bad_session_ids_and_cursors_get_clear_errors(data_dir: Path) -> None:
    kernel = _kernel(data_dir / "threads.sqlite3", tool=False)
    store = kernel.store
    try:
        async with DoorHarness(kernel, data_dir) as door:
            for bad in ("t-000000000000000000000000", "../../etc/passwd", "x" * 300, ""):
                with pytest.raises(RequestError) as err:
                    await door.conn.load_session(cwd="/tmp", session_id=bad, mcp_servers=[])
                assert err.value.code == -32002 and "unknown session" in str(err.value), bad
            for bad in ("not a cursor!", "t-000000000000000000000000"):
                with pytest.raises(RequestError) as err:
                    await door.conn.list_sessions(cursor=bad)
                assert err.value.code == -32602 and "bad cursor" in str(err.value), bad
            # a thread another door deleted while the editor had it open
            sid = await door.new_session()
            assert await store.delete("local", sid)
            with pytest.raises(RequestError) as err:
                await door.prompt(sid, "hello?")
            assert err.value.code == -32002 and sid in str(err.value)
            assert kernel.active_runs == 0
            # and the agent still serves
            other = await door.new_session()
            assert (await door.prompt(other, "still here")).stop_reason == "end_turn"
    finally:
        await store.close()


async def test_sessions_from_before_threads_move_into_the_store_once(data_dir: Path) -> None:
    from onedoor_door_acp.sessions import DB_NAME, Session, SessionStore

    legacy = SessionStore(data_dir / DB_NAME)
    history = [{"role": "user", "content": "old question"}, {"role": "assistant", "content": "old answer",
                                                             "reasoning": "thinking"}]
    legacy.save(Session(id="sess_0123", cwd="/old", backend="scripted", title="old question", history=history,
                        settings={"always_allow": ["write_file"]}))
    legacy.close()
    for _ in range(2):  # the second start finds nothing left to move
        kernel = _kernel(data_dir / "threads.sqlite3", tool=False)
        try:
            async with DoorHarness(kernel, data_dir) as door:
                listed = await door.conn.list_sessions(cwd="/old")
                assert [(s.session_id, s.title, s.cwd) for s in listed.sessions] == [("sess_0123", "old question", "/old")]
                await door.conn.load_session(cwd="/old", session_id="sess_0123", mcp_servers=[])
                assert door.recorder.text("user_message_chunk") == "old question"
                assert door.recorder.text() == "old answer"
            thread = await kernel.store.get("local", "sess_0123")
            assert thread is not None and [m.content for m in thread.messages] == ["old question", "old answer"]
        finally:
            await kernel.store.close()
    with sqlite3.connect(data_dir / DB_NAME) as db:
        assert db.execute("SELECT count(*) FROM sessions").fetchone() == (0,)
        assert json.loads(db.execute("SELECT settings FROM acp_threads").fetchone()[0]) == {"always_allow": ["write_file"]}


# -- as editors run it ----------------------------------------------------------------------


async def _start(cmd: list[str], env: dict[str, str]) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        *cmd, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL, env=env
    )


async def _ask(proc: asyncio.subprocess.Process, request_id: int, method: str, params: dict[str, Any],
               seen: list[dict[str, Any]], until: Any = None) -> dict[str, Any]:
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write((json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}) + "\n").encode())
    await proc.stdin.drain()
    until = until or (lambda m: m.get("id") == request_id)
    for _ in range(10_000):
        line = await asyncio.wait_for(proc.stdout.readline(), 30)
        assert line, f"the agent closed stdout while we waited for the reply to {method}"
        seen.append(json.loads(line))
        if until(seen[-1]):
            return seen[-1]
    raise AssertionError(f"no reply to {method}")


def _agent_text(seen: list[dict[str, Any]]) -> str:
    return "".join(
        m["params"]["update"]["content"]["text"] for m in seen
        if m.get("method") == "session/update" and m["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
    )


async def test_kill_9_mid_run_keeps_every_completed_turn_and_marks_the_interrupted_one(
    agent_env: dict[str, str], data_dir: Path
) -> None:
    threads = data_dir / "shared-threads.sqlite3"
    cmd = onedoor_command() + ["acp", "-o", f"sqlite.path={threads}"]
    proc = await _start(cmd, agent_env)
    seen: list[dict[str, Any]] = []
    sid = (await _ask(proc, 1, "session/new", {"cwd": "/tmp/proj", "mcpServers": []}, seen))["result"]["sessionId"]
    for request_id, text in ((2, "remember the blue door"), (3, "and the red one")):
        await _ask(proc, request_id, "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": text}]}, seen)
    replies = _agent_text(seen)
    await _ask(proc, 4, "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "/hang and then you die"}]},
               seen, until=lambda m: m.get("params", {}).get("update", {}).get("sessionUpdate") == "agent_thought_chunk")

    def checkpointed() -> bool:
        with sqlite3.connect(data_dir / "acp-sessions.sqlite3") as db:
            row = db.execute("SELECT pending FROM acp_threads WHERE thread_id = ?", (sid,)).fetchone()
        return bool(row and row[0] and "/hang and then you die" in row[0])

    await await_for(checkpointed, "the running turn's checkpoint in ACP's side table", 20)
    proc.send_signal(signal.SIGKILL)
    await asyncio.wait_for(proc.wait(), 30)

    store = SQLiteThreadStore(threads)
    try:
        thread = await store.get("local", sid)
        assert thread is not None
        # the completed turns, and the prompt of the cut one (kept as its run started)
        users = [m.content for m in thread.messages if m.role == "user"]
        assert users == ["remember the blue door", "and the red one", "/hang and then you die"]
        assert thread.messages[-1] == Message("user", "/hang and then you die")
    finally:
        await store.close()

    rec = Recorder()
    async with spawn_agent_process(rec, cmd[0], *cmd[1:], env=agent_env) as (conn, _proc):
        await conn.initialize(protocol_version=1)
        listed = await conn.list_sessions(cwd="/tmp/proj")
        assert [s.session_id for s in listed.sessions] == [sid]
        await conn.load_session(cwd="/tmp/proj", session_id=sid, mcp_servers=[])
        assert rec.text("user_message_chunk") == "remember the blue doorand the red one/hang and then you die"
        assert rec.text() == replies + INTERRUPTED_REPLY  # the cut reply is shown as such
        rec.updates.clear()
        response = await conn.prompt(session_id=sid, prompt=[text_block("still there?")])
        assert response.stop_reason == "end_turn"
        assert "turn 4" in rec.text()
    store = SQLiteThreadStore(threads)
    try:
        thread = await store.get("local", sid)
        assert thread is not None  # the interrupted turn was kept once, before the next one
        assert [m.content for m in thread.messages if m.role == "user"] == [
            "remember the blue door", "and the red one", "/hang and then you die", "still there?"]
        assert [m.content for m in thread.messages].count(INTERRUPTED_REPLY) == 1
    finally:
        await store.close()


@pytest.mark.skipif(node_ready() is not None, reason=node_ready() or "")
def test_typescript_sdk_client_lists_and_loads_a_thread_another_door_started(
    agent_env: dict[str, str], data_dir: Path
) -> None:
    threads = data_dir / "shared-threads.sqlite3"

    async def seed() -> tuple[str, str]:
        store = SQLiteThreadStore(threads)
        try:
            older = await _web_thread(store, [Message("user", "an older question")])
            return older, await _web_thread(store)
        finally:
            await store.close()

    older, web = asyncio.run(seed())
    agent = onedoor_command() + ["acp", "-o", f"sqlite.path={threads}"]
    out = subprocess.run(["node", "client.mjs", "threads", json.dumps(agent), web], capture_output=True, text=True,
                         env=agent_env, cwd=JS_DIR, timeout=90)
    lines = [line for line in out.stdout.splitlines() if line.strip()]
    assert lines, f"no output; stderr:\n{out.stderr[-3000:]}"
    result = json.loads(lines[-1])
    assert out.returncode == 0 and result.get("ok"), f"{result}\nstderr:\n{out.stderr[-3000:]}"
    assert [(s["sessionId"], s["title"]) for s in result["listed"]] == [(web, "plan the trip"), (older, "an older question")]
    assert [_shape(u) for u in result["replay"]] == WEB_REPLAY
    assert result["reply"] == "You said: and from the editor (4 words, turn 2)"
    assert result["badCursor"]["code"] == -32602 and "bad cursor" in result["badCursor"]["message"]
    assert result["goneCursor"]["code"] == -32602 and "list again" in result["goneCursor"]["message"]
    assert result["unknownLoad"]["code"] == -32002 and "unknown session" in result["unknownLoad"]["message"]
    assert result["badIdLoad"]["code"] == -32002 and "not a session id" in result["badIdLoad"]["message"]
    assert result["listedAfter"] == 2

    async def read() -> Any:
        store = SQLiteThreadStore(threads)
        try:
            return await store.get("local", web)
        finally:
            await store.close()

    thread = asyncio.run(read())
    assert list(thread.messages[:4]) == WEB_TURN and thread.messages[4] == Message("user", "and from the editor")


CUT_ELSEWHERE = """
import asyncio, sys
from onedoor import Backend, Kernel
from onedoor.builtins.scripted import ScriptedOptions, scripted
from onedoor.threads.sqlite import SQLiteThreadStore

async def main(path, thread_id):
    store = SQLiteThreadStore(path)
    kernel = Kernel(Backend("scripted", lambda: scripted(ScriptedOptions(mode="async"))), store=store)
    thread = await store.get("local", thread_id)
    async with kernel.run("/hang answered elsewhere", thread=thread, principal="local") as run:
        async for event in run:
            if type(event).__name__ == "ReasoningDelta":
                print("answering", flush=True)

asyncio.run(main(sys.argv[1], sys.argv[2]))
"""


async def test_a_turn_another_process_left_cut_is_loaded_marked(agent_env: dict[str, str], data_dir: Path) -> None:
    """#24 item 6 for ACP: another process (a server) was killed while answering a thread;
    session/load in the editor shows the turn marked, before anyone writes to the thread."""
    import sys

    threads = data_dir / "shared-threads.sqlite3"
    store = SQLiteThreadStore(threads)
    sid = await _web_thread(store)
    await store.close()
    other = subprocess.Popen([sys.executable, "-c", CUT_ELSEWHERE, str(threads), sid], stdout=subprocess.PIPE, text=True)
    assert other.stdout is not None and other.stdout.readline().strip() == "answering"
    other.send_signal(signal.SIGKILL)
    other.wait(timeout=30)
    cmd = onedoor_command() + ["acp", "-o", f"sqlite.path={threads}"]
    rec = Recorder()
    async with spawn_agent_process(rec, cmd[0], *cmd[1:], env=agent_env) as (conn, _proc):
        await conn.initialize(protocol_version=1)
        await conn.load_session(cwd="/tmp/proj", session_id=sid, mcp_servers=[])
        assert rec.text("user_message_chunk").endswith("/hang answered elsewhere")
        assert rec.text().endswith(INTERRUPTED_REPLY), rec.text()
