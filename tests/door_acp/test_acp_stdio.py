"""`onedoor acp` as an editor runs it: a real subprocess over stdio."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from acp import spawn_agent_process, text_block
from acp_harness import HERE, Recorder, onedoor_command  # type: ignore[import-not-found]
from onedoor_test_support import await_for

pytestmark = pytest.mark.timeout(90)


async def _start(cmd: list[str], env: dict[str, str]) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        *cmd, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=env
    )


async def _rpc(proc: asyncio.subprocess.Process, message: dict[str, Any]) -> None:
    assert proc.stdin is not None
    proc.stdin.write((json.dumps(message) + "\n").encode())
    await proc.stdin.drain()


async def _read_until(proc: asyncio.subprocess.Process, predicate: Any, seen: list[dict[str, Any]]) -> dict[str, Any]:
    assert proc.stdout is not None
    for _ in range(10_000):
        line = await asyncio.wait_for(proc.stdout.readline(), 30)
        assert line, "the agent closed stdout"
        msg = json.loads(line)  # stdout carries only JSON-RPC
        seen.append(msg)
        if predicate(msg):
            return msg
    raise AssertionError("no matching message")


async def test_python_client_end_to_end_over_stdio(agent_env: dict[str, str]) -> None:
    cmd = onedoor_command() + ["acp", "-o", "delay=0"]
    rec = Recorder()
    async with spawn_agent_process(rec, cmd[0], *cmd[1:], env=agent_env) as (conn, proc):
        init = await conn.initialize(protocol_version=1)
        assert init.protocol_version == 1
        session = await conn.new_session(cwd=str(Path.cwd()), mcp_servers=[])
        response = await conn.prompt(session_id=session.session_id, prompt=[text_block("hello stdio")])
        assert response.stop_reason == "end_turn"
        assert rec.text() == "You said: hello stdio (2 words, turn 1)"
        assert "tool_call" in rec.kinds()


async def test_serve_door_acp_transport_stdio_is_the_same(agent_env: dict[str, str]) -> None:
    cmd = onedoor_command() + ["serve", "--door", "acp", "--transport", "stdio"]
    rec = Recorder()
    async with spawn_agent_process(rec, cmd[0], *cmd[1:], env=agent_env) as (conn, proc):
        await conn.initialize(protocol_version=1)
        session = await conn.new_session(cwd="/tmp", mcp_servers=[])
        response = await conn.prompt(session_id=session.session_id, prompt=[text_block("/help")])
        assert response.stop_reason == "end_turn"
        assert "/reset" in rec.text()


async def test_stdout_carries_only_protocol_even_with_noisy_input(agent_env: dict[str, str]) -> None:
    proc = await _start(onedoor_command() + ["acp"], agent_env)
    seen: list[dict[str, Any]] = []
    try:
        assert proc.stdin is not None
        proc.stdin.write(b"garbage\n\n{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"nope\",\"params\":{}}\n")
        await _rpc(proc, {"jsonrpc": "2.0", "id": 2, "method": "initialize", "params": {"protocolVersion": 1}})
        await _read_until(proc, lambda m: m.get("id") == 2, seen)
        assert [m.get("error", {}).get("code") for m in seen] == [-32700, -32601, None]
    finally:
        proc.stdin.close()  # type: ignore[union-attr]
        await asyncio.wait_for(proc.wait(), 30)
    assert proc.returncode == 0


async def test_editor_disconnect_mid_turn_ends_the_process(agent_env: dict[str, str]) -> None:
    proc = await _start(onedoor_command() + ["acp"], agent_env)
    seen: list[dict[str, Any]] = []
    await _rpc(proc, {"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "/tmp", "mcpServers": []}})
    sid = (await _read_until(proc, lambda m: m.get("id") == 1, seen))["result"]["sessionId"]
    await _rpc(proc, {"jsonrpc": "2.0", "id": 2, "method": "session/prompt",
                      "params": {"sessionId": sid, "prompt": [{"type": "text", "text": "/hang until the editor leaves"}]}})
    await _read_until(proc, lambda m: m.get("params", {}).get("update", {}).get("sessionUpdate") == "agent_thought_chunk", seen)
    proc.stdin.close()  # type: ignore[union-attr]
    # bounded wait: the run is cancelled and the process exits instead of lingering
    await asyncio.wait_for(proc.wait(), 30)
    assert proc.returncode == 0


async def test_killed_agent_without_a_store_loses_nothing_a_new_process_loads_the_history(
    agent_env: dict[str, str],
) -> None:
    """--store none: the door keeps sessions itself, checkpointing the running turn."""
    proc = await _start(onedoor_command() + ["acp", "--store", "none"], agent_env)
    seen: list[dict[str, Any]] = []
    await _rpc(proc, {"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "/tmp/proj", "mcpServers": []}})
    sid = (await _read_until(proc, lambda m: m.get("id") == 1, seen))["result"]["sessionId"]
    await _rpc(proc, {"jsonrpc": "2.0", "id": 2, "method": "session/prompt",
                      "params": {"sessionId": sid, "prompt": [{"type": "text", "text": "remember the blue door"}]}})
    await _read_until(proc, lambda m: m.get("id") == 2, seen)
    first_reply = "".join(
        m["params"]["update"]["content"]["text"] for m in seen
        if m.get("method") == "session/update" and m["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
    )
    await _rpc(proc, {"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
                      "params": {"sessionId": sid, "prompt": [{"type": "text", "text": "/hang and then you die"}]}})
    await _read_until(proc, lambda m: m.get("params", {}).get("update", {}).get("sessionUpdate") == "agent_thought_chunk", seen)
    # the running turn's progress reaches the database (checkpoints) before the crash
    db = Path(agent_env["ONEDOOR_DATA_DIR"]) / "acp-sessions.sqlite3"

    def checkpointed() -> bool:
        with sqlite3.connect(db) as conn_db:
            bodies = conn_db.execute("SELECT body FROM session_messages WHERE session_id = ?", (sid,)).fetchall()
        return any("this is turn 2" in body for (body,) in bodies)

    await await_for(checkpointed, "the running turn's checkpoint in the session database", 20)
    proc.send_signal(signal.SIGKILL)
    await asyncio.wait_for(proc.wait(), 30)

    rec = Recorder()
    cmd = onedoor_command() + ["acp", "--store", "none"]
    async with spawn_agent_process(rec, cmd[0], *cmd[1:], env=agent_env) as (conn, _proc):
        await conn.initialize(protocol_version=1)
        listed = await conn.list_sessions(cwd="/tmp/proj")
        assert [s.session_id for s in listed.sessions] == [sid]
        await conn.load_session(cwd="/tmp/proj", session_id=sid, mcp_servers=[])
        assert rec.text("user_message_chunk") == "remember the blue door/hang and then you die"
        assert rec.text() == first_reply
        assert "this is turn 2" in rec.text("agent_thought_chunk")  # partial turn, saved before the kill
        assert "tool_call" in rec.kinds()
        rec.updates.clear()
        response = await conn.prompt(session_id=sid, prompt=[text_block("still there?")])
        assert response.stop_reason == "end_turn"
        assert "turn 3" in rec.text()


def test_plugins_listing_does_not_import_acp(agent_env: dict[str, str]) -> None:
    code = (
        "import sys, onedoor.plugins as p; p.load('door', 'acp'); import onedoor_door_acp.cli_commands;"
        "print(sorted(m for m in ('acp', 'pydantic') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=agent_env, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_onedoor_acp_help_lists_the_options(agent_env: dict[str, str]) -> None:
    out = subprocess.run(onedoor_command() + ["acp", "--help"], capture_output=True, text=True, env=agent_env, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "--backend" in out.stdout and "--option" in out.stdout
    bad = subprocess.run(onedoor_command() + ["acp", "-o", "permissions=maybe"], capture_output=True, text=True,
                         env=agent_env, timeout=60, stdin=subprocess.DEVNULL)
    assert bad.returncode == 2
    assert "permissions" in bad.stderr


def test_data_dir_env_is_honoured(agent_env: dict[str, str], data_dir: Path) -> None:
    env = dict(agent_env)
    lines = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "/tmp", "mcpServers": []}}) + "\n"
    out = subprocess.run(onedoor_command() + ["acp"], input=lines, capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode == 0, out.stderr
    assert (data_dir / "acp-sessions.sqlite3").exists()
    other = data_dir / "other"
    env["ONEDOOR_ACP_DATA_DIR"] = str(other)
    out = subprocess.run(onedoor_command() + ["acp"], input=lines, capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode == 0, out.stderr
    assert (other / "acp-sessions.sqlite3").exists()
    assert os.path.getsize(other / "acp-sessions.sqlite3") > 0


async def test_a_backend_writing_to_stdout_cannot_corrupt_the_protocol(agent_env: dict[str, str]) -> None:
    proc = await _start([sys.executable, str(HERE / "approval_agent.py"), "noisy"], agent_env)
    seen: list[dict[str, Any]] = []
    try:
        await _rpc(proc, {"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "/tmp", "mcpServers": []}})
        sid = (await _read_until(proc, lambda m: m.get("id") == 1, seen))["result"]["sessionId"]
        await _rpc(proc, {"jsonrpc": "2.0", "id": 2, "method": "session/prompt",
                          "params": {"sessionId": sid, "prompt": [{"type": "text", "text": "hi"}]}})
        reply = await _read_until(proc, lambda m: m.get("id") == 2, seen)  # every stdout line parsed as JSON
        assert reply["result"]["stopReason"] == "end_turn"
    finally:
        proc.stdin.close()  # type: ignore[union-attr]
        await asyncio.wait_for(proc.wait(), 30)
    assert proc.stderr is not None
    noise = (await proc.stderr.read()).decode()
    assert "noise from print()" in noise and "noise on fd 1" in noise and "noise from a child process" in noise
