"""The ACP door in process: the ``acp`` library's client over a memory channel."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from acp import RequestError, text_block
from acp_harness import DoorHarness, load_approval_module  # type: ignore[import-not-found]
from onedoor.kernel import Backend, Kernel
from onedoor.testing import scripted_kernel
from onedoor_test_support import await_for

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(autouse=True, params=["threads", "door-kept"])
async def sessions_kept_in(request: pytest.FixtureRequest, data_dir: Path) -> Any:
    """Every test twice: sessions as threads of the kernel's store (the default of
    `onedoor serve`), and kept by the door itself (a kernel without a store, `--store none`)."""
    import acp_harness  # type: ignore[import-not-found]
    from onedoor.threads.sqlite import SQLiteThreadStore

    store = SQLiteThreadStore(data_dir / "threads.sqlite3") if request.param == "threads" else None
    acp_harness.THREAD_STORE = store
    try:
        yield request.param
    finally:
        acp_harness.THREAD_STORE = None
        if store is not None:
            await store.close()


def _message_kinds(kinds: list[str]) -> list[str]:
    """Collapse runs of the same update kind, for order checks."""
    out: list[str] = []
    for kind in kinds:
        if not out or out[-1] != kind:
            out.append(kind)
    return out


async def test_initialize_is_honest(data_dir: Path) -> None:
    async with DoorHarness(scripted_kernel(), data_dir) as door:
        for asked in (1, 2, 7):
            reply = await door.conn.initialize(protocol_version=asked)
            assert reply.protocol_version == 1
        caps = reply.agent_capabilities
        assert caps.load_session is True
        # what the backend takes (the scripted one: every kind)
        assert caps.prompt_capabilities.image is True
        assert caps.prompt_capabilities.audio is True
        assert caps.prompt_capabilities.embedded_context is True
        assert caps.session_capabilities.list is not None
        assert caps.mcp_capabilities.http is False
        assert reply.agent_info.name == "onedoor"
    for accepts, image, audio in (("", False, False), ("image", True, False), ("audio,resource", False, True)):
        async with DoorHarness(scripted_kernel(accepts=accepts), data_dir) as door:
            caps = (await door.conn.initialize(protocol_version=1)).agent_capabilities.prompt_capabilities
            assert (caps.image, caps.audio, caps.embedded_context) == (image, audio, True), accepts


async def test_prompt_streams_thoughts_tool_call_and_text_in_order(data_dir: Path) -> None:
    async with DoorHarness(scripted_kernel(), data_dir) as door:
        sid = await door.new_session()
        response = await door.prompt(sid, "hello world")
        assert response.stop_reason == "end_turn"
        rec = door.recorder
        kinds = [k for k in rec.kinds(sid) if k != "available_commands_update"]
        assert _message_kinds(kinds) == [
            "agent_thought_chunk", "tool_call", "tool_call_update", "agent_message_chunk",
        ]
        tool_updates = [u for s, u in rec.updates if u["sessionUpdate"].startswith("tool_call")]
        assert [u.get("status") for u in tool_updates] == ["pending", "in_progress", "completed"]
        assert tool_updates[0]["rawInput"] == {"text": "hello world"}
        assert tool_updates[2]["rawOutput"] == {"words": 2}
        assert tool_updates[2]["content"][0]["content"]["text"] == '{"words": 2}'
        assert rec.text() == "You said: hello world (2 words, turn 1)"
        assert rec.text("agent_thought_chunk").startswith("The user wrote 2 words")


async def test_history_carries_into_the_next_prompt(data_dir: Path) -> None:
    async with DoorHarness(scripted_kernel(tool=False, reasoning=False), data_dir) as door:
        sid = await door.new_session()
        await door.prompt(sid, "one")
        door.recorder.updates.clear()
        await door.prompt(sid, "two")
        assert door.recorder.text() == "You said: two"
        # the scripted backend counts user turns in the history it was given
    async with DoorHarness(scripted_kernel(reasoning=False), data_dir) as door:
        sid = await door.new_session()
        await door.prompt(sid, "one")
        door.recorder.updates.clear()
        await door.prompt(sid, "two")
        assert "turn 2" in door.recorder.text()


async def test_embedded_text_and_resource_links_reach_the_agent(data_dir: Path) -> None:
    from acp import embedded_text_resource, resource_block, resource_link_block

    async with DoorHarness(scripted_kernel(tool=False, reasoning=False), data_dir) as door:
        sid = await door.new_session()
        blocks = [
            text_block("look"),
            resource_link_block(name="a.py", uri="file:///tmp/a.py"),
            resource_block(embedded_text_resource("file:///tmp/b.py", "print(1)")),
        ]
        response = await door.conn.prompt(session_id=sid, prompt=blocks)
        assert response.stop_reason == "end_turn"
        text = door.recorder.text()
        # the client cannot read files (no fs.readTextFile): the link stays a link
        assert text.startswith("Received: 1 resource_link (file:///tmp/a.py, a.py); 1 resource (8 bytes, file:///tmp/b.py). ")
        assert "[file: file:///tmp/a.py]" in text
        assert "--- file:///tmp/b.py ---\nprint(1)\n--- end of file:///tmp/b.py ---" in text


async def test_available_commands_come_after_the_new_session_reply(data_dir: Path) -> None:
    from onedoor.composition import ServeContext
    from onedoor.testing import serve_in_memory
    from onedoor_door_acp.door import AcpDoor, AcpOptions

    options = AcpOptions(data_dir=str(data_dir))
    ctx = ServeContext(kernel=scripted_kernel(), options={"acp": options})
    async with serve_in_memory(AcpDoor(), ctx) as client:
        await client.send_json({"jsonrpc": "2.0", "id": 1, "method": "session/new",
                                "params": {"cwd": "/tmp", "mcpServers": []}})
        first = await client.recv_json(10)
        second = await client.recv_json(10)
    assert first["id"] == 1 and "sessionId" in first["result"]
    assert second["method"] == "session/update"
    update = second["params"]["update"]
    assert update["sessionUpdate"] == "available_commands_update"
    assert {"help", "reset", "backend", "model", "version"} <= {c["name"] for c in update["availableCommands"]}


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_cancel_stops_the_backend_and_reports_cancelled(data_dir: Path, mode: str) -> None:
    kernel = scripted_kernel(mode=mode)
    async with DoorHarness(kernel, data_dir) as door:
        sid = await door.new_session()
        prompt = asyncio.create_task(door.prompt(sid, "/hang wait for me"))
        await door.recorder.wait_for(lambda: "agent_thought_chunk" in door.recorder.kinds(sid))
        assert kernel.active_runs == 1
        await door.conn.cancel(session_id=sid)
        response = await asyncio.wait_for(prompt, 15)
        assert response.stop_reason == "cancelled"
        assert kernel.active_runs == 0
        await await_for(lambda: kernel.worker_threads() == [], "the sync backend's worker thread to end")
        # the session keeps serving after a cancel
        response = await door.prompt(sid, "again")
        assert response.stop_reason == "end_turn"
        assert "turn 2" in door.recorder.text()


async def test_cancel_mid_stream_of_a_long_reply(data_dir: Path) -> None:
    kernel = scripted_kernel(mode="async", delay=0.01, reasoning=False, tool=False)
    async with DoorHarness(kernel, data_dir) as door:
        sid = await door.new_session()
        prompt = asyncio.create_task(door.prompt(sid, "/long 100000 go"))
        await door.recorder.wait_for(lambda: door.recorder.kinds(sid).count("agent_message_chunk") >= 3)
        await door.conn.cancel(session_id=sid)
        response = await asyncio.wait_for(prompt, 15)
        assert response.stop_reason == "cancelled"
        assert door.recorder.kinds(sid).count("agent_message_chunk") < 100000


async def test_prompt_while_another_runs_is_refused_but_after_cancel_it_waits(data_dir: Path) -> None:
    async with DoorHarness(scripted_kernel(mode="async"), data_dir) as door:
        sid = await door.new_session()
        first = asyncio.create_task(door.prompt(sid, "/hang one"))
        await door.recorder.wait_for(lambda: "agent_thought_chunk" in door.recorder.kinds(sid))
        with pytest.raises(RequestError) as err:
            await door.prompt(sid, "two")
        assert err.value.code == -32600
        assert "already running" in str(err.value)
        await door.conn.cancel(session_id=sid)
        second = await door.prompt(sid, "three")
        assert (await first).stop_reason == "cancelled"
        assert second.stop_reason == "end_turn"


async def test_load_session_replays_history_in_a_new_door(data_dir: Path, sessions_kept_in: str) -> None:
    async with DoorHarness(scripted_kernel(), data_dir) as door:
        sid = await door.new_session(cwd="/work/project")
        await door.prompt(sid, "first question")
        await door.prompt(sid, "second question")
        original = [u for s, u in door.recorder.updates if u["sessionUpdate"] != "available_commands_update"]
    async with DoorHarness(scripted_kernel(), data_dir) as door:
        listed = await door.conn.list_sessions(cwd="/work/project")
        assert [s.session_id for s in listed.sessions] == [sid]
        assert listed.sessions[0].title == "first question"
        assert (await door.conn.list_sessions(cwd="/elsewhere")).sessions == []
        await door.conn.load_session(cwd="/work/project", session_id=sid, mcp_servers=[])
        replayed = door.recorder
        assert replayed.text("user_message_chunk") == "first questionsecond question"
        assert replayed.text() == "".join(
            u["content"]["text"] for u in original if u["sessionUpdate"] == "agent_message_chunk"
        )
        calls = [u for s, u in replayed.updates if u["sessionUpdate"] == "tool_call"]
        assert len(calls) == 2 and calls[0]["rawInput"] == {"text": "first question"}
        ends = [u for s, u in replayed.updates if u.get("status") == "completed"]
        # a thread keeps a tool's result as text (every door reads it); the door-kept history kept the value
        kept = '{"words": 2}' if sessions_kept_in == "threads" else {"words": 2}
        assert [u["rawOutput"] for u in ends] == [kept, kept]
        # and the loaded session continues with its history
        replayed.updates.clear()
        await door.prompt(sid, "third")
        assert "turn 3" in replayed.text()


async def test_fork_resume_and_close(data_dir: Path) -> None:
    async with DoorHarness(scripted_kernel(reasoning=False), data_dir) as door:
        sid = await door.new_session()
        await door.prompt(sid, "hello")
        forked = await door.conn.fork_session(session_id=sid, cwd="/tmp", mcp_servers=[])
        assert forked.session_id != sid
        door.recorder.updates.clear()
        await door.prompt(forked.session_id, "more")
        assert "turn 2" in door.recorder.text()
        await door.conn.close_session(session_id=sid)
        with pytest.raises(RequestError) as err:
            await door.prompt(sid, "after close")
        assert err.value.code == -32002
        assert "closed" in str(err.value)
    async with DoorHarness(scripted_kernel(reasoning=False), data_dir) as door:
        await door.conn.resume_session(session_id=sid, cwd="/tmp", mcp_servers=[])
        assert door.recorder.text("user_message_chunk") == ""  # resume does not replay
        await door.prompt(sid, "back")
        assert "turn 2" in door.recorder.text()


async def test_slash_commands_are_answered_locally(data_dir: Path) -> None:
    kernel = scripted_kernel(reasoning=False)
    async with DoorHarness(kernel, data_dir) as door:
        sid = await door.new_session()
        response = await door.prompt(sid, "/help")
        assert response.stop_reason == "end_turn"
        assert "/reset" in door.recorder.text() and "/backend" in door.recorder.text()
        assert "tool_call" not in door.recorder.kinds()
        door.recorder.updates.clear()
        await door.prompt(sid, "/version")
        assert "agent-client-protocol 0.12" in door.recorder.text()
        await door.prompt(sid, "hello")
        door.recorder.updates.clear()
        await door.prompt(sid, "/reset")
        assert "Conversation reset" in door.recorder.text()
        door.recorder.updates.clear()
        await door.prompt(sid, "hello again")
        assert "turn 1" in door.recorder.text()
        # an unknown /word goes to the agent (the scripted backend's /long directive)
        door.recorder.updates.clear()
        await door.prompt(sid, "/long 5 hi")
        assert door.recorder.kinds().count("agent_message_chunk") == 5


async def test_backend_picker_switches_the_session_backend(data_dir: Path) -> None:
    from onedoor import plugins

    if "echo" not in plugins.names("backend"):
        pytest.skip("the example backend 'echo' (examples/backend-echo) is not installed")
    async with DoorHarness(scripted_kernel(reasoning=False, tool=False), data_dir) as door:
        response = await door.conn.new_session(cwd="/tmp", mcp_servers=[])
        sid = response.session_id
        option = response.config_options[0]
        assert option.id == "backend" and option.current_value == "scripted"
        assert {o.value for o in option.options} >= {"scripted", "echo"}
        changed = await door.conn.set_config_option(config_id="backend", session_id=sid, value="echo")
        assert changed.config_options[0].current_value == "echo"
        await door.prompt(sid, "quiet words")
        assert door.recorder.text() == "QUIET WORDS"
        with pytest.raises(RequestError) as err:
            await door.conn.set_config_option(config_id="backend", session_id=sid, value="nope")
        assert err.value.code == -32602
        door.recorder.updates.clear()
        await door.prompt(sid, "/backend scripted")
        assert "config_option_update" in door.recorder.kinds()
        door.recorder.updates.clear()
        await door.prompt(sid, "hi")
        assert door.recorder.text() == "You said: hi"
    async with DoorHarness(scripted_kernel(reasoning=False, tool=False), data_dir) as door:
        await door.conn.load_session(cwd="/tmp", session_id=sid, mcp_servers=[])
        await door.conn.set_config_option(config_id="backend", session_id=sid, value="echo")
        door.recorder.updates.clear()
        await door.prompt(sid, "persisted")
        assert door.recorder.text() == "PERSISTED"


@pytest.mark.parametrize("mode", ["async", "sync"])
async def test_permission_allow_once_and_reject(data_dir: Path, mode: str) -> None:
    module = load_approval_module()
    factory = module.SyncApprovalAgent if mode == "sync" else module.AsyncApprovalAgent
    async with DoorHarness(Kernel(Backend("approver", factory)), data_dir) as door:
        sid = await door.new_session()
        door.recorder.answers = ["allow_once", "reject_once"]
        response = await door.prompt(sid, "hello")
        assert response.stop_reason == "end_turn"
        rec = door.recorder
        assert rec.permission_requests[0]["toolCall"]["rawInput"] == {"path": "notes.txt", "content": "hello"}
        assert set(rec.permission_requests[0]["options"]) == {"allow_once", "allow_always", "reject_once", "reject_always"}
        kinds = [k for k in rec.kinds(sid) if k != "available_commands_update"]
        assert _message_kinds(kinds) == ["agent_message_chunk", "tool_call", "tool_call_update", "agent_message_chunk"]
        statuses = [u.get("status") for s, u in rec.updates if u["sessionUpdate"].startswith("tool_call")]
        assert statuses == ["pending", "in_progress", "completed"]
        assert rec.text() == "I will write the file. Done."
        rec.updates.clear()
        await door.prompt(sid, "again")
        statuses = [u.get("status") for s, u in rec.updates if u["sessionUpdate"].startswith("tool_call")]
        assert statuses == ["pending", "failed"]
        assert rec.text() == "I will write the file. Not written."
        assert len(rec.permission_requests) == 2


async def test_permission_allow_always_is_remembered(data_dir: Path) -> None:
    module = load_approval_module()
    async with DoorHarness(Kernel(Backend("approver", module.AsyncApprovalAgent)), data_dir) as door:
        sid = await door.new_session()
        door.recorder.answers = ["allow_always"]
        await door.prompt(sid, "one")
        door.recorder.updates.clear()
        await door.prompt(sid, "two")
        assert len(door.recorder.permission_requests) == 1
        assert door.recorder.text() == "I will write the file. Done."
    async with DoorHarness(Kernel(Backend("approver", module.AsyncApprovalAgent)), data_dir) as door:
        await door.conn.load_session(cwd="/tmp", session_id=sid, mcp_servers=[])
        door.recorder.updates.clear()
        await door.prompt(sid, "three")
        assert door.recorder.permission_requests == []  # the answer was saved with the session


@pytest.mark.parametrize("mode", ["async", "sync"])
async def test_cancel_while_a_permission_request_is_pending(data_dir: Path, mode: str) -> None:
    module = load_approval_module()
    factory = module.SyncApprovalAgent if mode == "sync" else module.AsyncApprovalAgent
    kernel = Kernel(Backend("approver", factory))
    async with DoorHarness(kernel, data_dir) as door:
        sid = await door.new_session()
        door.recorder.hold_permission = asyncio.Event()
        door.recorder.answers = ["cancelled"]
        prompt = asyncio.create_task(door.prompt(sid, "hello"))
        await asyncio.wait_for(door.recorder.permission_asked.wait(), 15)
        await door.conn.cancel(session_id=sid)
        response = await asyncio.wait_for(prompt, 15)
        assert response.stop_reason == "cancelled"
        door.recorder.hold_permission.set()  # the editor answers "cancelled" afterwards, as ACP asks
        statuses = [u.get("status") for s, u in door.recorder.updates if u["sessionUpdate"].startswith("tool_call")]
        assert statuses == ["pending", "failed"]
        assert kernel.active_runs == 0


async def test_editor_disconnect_cancels_running_sessions(data_dir: Path) -> None:
    kernel = scripted_kernel(mode="sync")
    async with DoorHarness(kernel, data_dir) as door:
        sids = [await door.new_session() for _ in range(2)]
        prompts = [asyncio.create_task(door.prompt(sid, "/hang forever")) for sid in sids]
        await door.recorder.wait_for(lambda: all("agent_thought_chunk" in door.recorder.kinds(s) for s in sids))
        assert kernel.active_runs == 2
        await door.disconnect()
        assert kernel.active_runs == 0
        for task in prompts:
            task.cancel()
        await asyncio.gather(*prompts, return_exceptions=True)


async def test_editor_mcp_servers_give_tools_to_backends_that_use_tools(data_dir: Path) -> None:
    pytest.importorskip("mcp", reason="the mcp package (onedoor-door-acp[mcp]) is not installed")
    import sys

    from acp.schema import HttpMcpServer, McpServerStdio
    from acp_harness import HERE, ToolUserAgent  # type: ignore[import-not-found]

    kernel = Kernel(Backend("tooluser", ToolUserAgent, frozenset({"tools"})))
    async with DoorHarness(kernel, data_dir, backends="tooluser") as door:
        servers = [
            McpServerStdio(name="echo", command=sys.executable, args=[str(HERE / "mcp_echo_server.py")], env=[]),
            HttpMcpServer(name="remote", url="http://127.0.0.1:9/mcp", headers=[], type="http"),
        ]
        response = await door.conn.new_session(cwd="/tmp", mcp_servers=servers)
        sid = response.session_id
        result = await door.prompt(sid, "hi there")
        assert result.stop_reason == "end_turn"
        rec = door.recorder
        assert "remote" in rec.text() and "stdio MCP servers only" in rec.text()
        assert rec.text().endswith("tools: echo__shout, echo__refuse")
        ends = [u for s, u in rec.updates if u["sessionUpdate"] == "tool_call_update" and u.get("status") in ("completed", "failed")]
        assert ends[0]["status"] == "completed" and ends[0]["rawOutput"] == "HI THERE"
        assert ends[1]["status"] == "failed"
        await door.conn.close_session(session_id=sid)


async def test_a_backend_without_tools_says_so_for_editor_mcp_servers(data_dir: Path) -> None:
    from acp.schema import McpServerStdio

    async with DoorHarness(scripted_kernel(), data_dir) as door:
        server = McpServerStdio(name="files", command="/bin/true", args=[], env=[])
        response = await door.conn.new_session(cwd="/tmp", mcp_servers=[server])
        await door.recorder.wait_for(lambda: "agent_message_chunk" in door.recorder.kinds(response.session_id))
        text = door.recorder.text()
        assert "'scripted' cannot use tools" in text and "files" in text


@pytest.mark.parametrize("mode", ["async", "sync"])
async def test_editor_disconnect_while_a_permission_request_is_pending(
    data_dir: Path, mode: str, sessions_kept_in: str
) -> None:
    module = load_approval_module()
    factory = module.SyncApprovalAgent if mode == "sync" else module.AsyncApprovalAgent
    kernel = Kernel(Backend("approver", factory))
    async with DoorHarness(kernel, data_dir) as door:
        sid = await door.new_session()
        door.recorder.hold_permission = asyncio.Event()  # the editor never answers
        prompt = asyncio.create_task(door.prompt(sid, "hello"))
        await asyncio.wait_for(door.recorder.permission_asked.wait(), 15)
        await door.disconnect()
        assert kernel.active_runs == 0
        prompt.cancel()
        await asyncio.gather(prompt, return_exceptions=True)
    async with DoorHarness(kernel, data_dir) as door:  # the turn was saved
        await door.conn.load_session(cwd="/tmp", session_id=sid, mcp_servers=[])
        assert door.recorder.text("user_message_chunk") == "hello"
        statuses = [u.get("status") for s, u in door.recorder.updates if u["sessionUpdate"].startswith("tool_call")]
        if sessions_kept_in == "threads":  # the kernel keeps what the backend did: it never ran the tool
            assert statuses == []
            assert door.recorder.text() == "I will write the file. \n[reply cancelled]"
        else:  # the door-kept history records the editor's (missing) answer as a rejected call
            assert statuses == ["in_progress", "failed"]


async def test_permissions_allow_option_approves_without_asking(data_dir: Path) -> None:
    module = load_approval_module()
    async with DoorHarness(Kernel(Backend("approver", module.AsyncApprovalAgent)), data_dir, permissions="allow") as door:
        sid = await door.new_session()
        await door.prompt(sid, "hello")
        assert door.recorder.permission_requests == []
        assert door.recorder.text() == "I will write the file. Done."
        statuses = [u.get("status") for s, u in door.recorder.updates if u["sessionUpdate"].startswith("tool_call")]
        assert statuses == ["pending", "in_progress", "completed"]
