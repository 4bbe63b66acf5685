"""One thread through every door: started with REST, continued through MCP's ``ask``,
loaded (and continued) in an editor through ACP's TypeScript SDK client, and shown on
the AG-UI chat page in Chromium: the same messages, in the same order, everywhere.

One real ``onedoor serve`` (REST, MCP, AG-UI) and one ``onedoor acp`` process share one
SQLite threads file, as a user's machine would.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]
ACP_JS = ROOT / "tests" / "door_acp" / "js"
AGUI_JS = ROOT / "tests" / "door_agui" / "js"
MCP_HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


def onedoor() -> list[str]:
    script = Path(sys.executable).with_name("onedoor")
    return [str(script)] if script.exists() else [sys.executable, "-m", "onedoor"]


def tools_missing() -> str | None:
    if shutil.which("node") is None:
        return "node is not installed (the ACP TypeScript client and the page test need it)"
    if not (ACP_JS / "node_modules" / "@agentclientprotocol" / "sdk").is_dir():
        return "node_modules missing: npm ci --prefix tests/door_acp/js"
    if not (AGUI_JS / "node_modules" / "playwright-core").is_dir():
        return "node_modules missing: npm ci --prefix tests/door_agui/js"
    if not Path(os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")).exists():
        return "chromium is not installed (apt-get install chromium)"
    for door in ("rest", "mcp", "agui", "acp"):
        if importlib.util.find_spec(f"onedoor_door_{door}") is None:
            return f"the {door} door is not installed"
    return None


@pytest.fixture
def server(tmp_path: Path) -> Any:
    db = tmp_path / "threads.sqlite3"
    proc = subprocess.Popen(
        onedoor() + ["serve", "--door", "rest", "--door", "mcp", "--door", "agui", "--port", "0",
                     "-o", f"sqlite.path={db}"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    url = None
    assert proc.stdout is not None
    for _ in range(200):  # bounded: the start-up banner is a few lines
        line = proc.stdout.readline()
        found = re.search(r"listening on (http://127\.0\.0\.1:\d+)", line)
        if found or not line:
            url = found.group(1) if found else None
            break
    if url is None:
        proc.kill()
        pytest.fail("onedoor serve did not say where it listens")
    try:
        yield url, db
    finally:
        proc.terminate()
        proc.wait(30)


def mcp_ask(url: str, arguments: dict) -> dict:
    """One MCP tools/call of ``ask`` over streamable HTTP: initialize, initialized, call."""
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "cross", "version": "1"}}}
    with httpx.Client(timeout=60) as client:
        opened = client.post(url + "/mcp/", json=init, headers=MCP_HEADERS)
        headers = {**MCP_HEADERS, "mcp-session-id": opened.headers["mcp-session-id"],
                   "mcp-protocol-version": "2025-06-18"}
        client.post(url + "/mcp/", json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers)
        reply = client.post(url + "/mcp/", headers=headers, json={
            "jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "ask", "arguments": arguments}})
    text = reply.text
    if reply.headers["content-type"].startswith("text/event-stream"):
        text = [line[6:] for line in text.splitlines() if line.startswith("data: ")][-1]
    return json.loads(text)["result"]


def node(folder: Path, *args: str) -> dict:
    done = subprocess.run(["node", *args], cwd=folder, capture_output=True, text=True, timeout=120)
    lines = [line for line in done.stdout.splitlines() if line.strip().startswith("{")]
    assert lines, f"no output from {args[0]}; stderr:\n{done.stderr[-3000:]}"
    return json.loads(lines[-1])


def conversation(messages: list[dict]) -> list[tuple[str, str]]:
    """What a person reads: the user's messages and the assistant's words, in order."""
    return [(m["role"], m["content"]) for m in messages if m["role"] in ("user", "assistant") and m["content"]]


@pytest.mark.skipif(tools_missing() is not None, reason=tools_missing() or "")
def test_one_thread_through_rest_mcp_acp_and_the_page(server: Any) -> None:
    url, db = server
    # 1. REST starts it
    thread_id = httpx.post(url + "/rest/threads", json={"title": "across doors"}, timeout=30).json()["id"]
    first = httpx.post(url + f"/rest/threads/{thread_id}/chat", json={"message": "from the web api"}, timeout=60)
    assert first.status_code == 200 and "turn 1" in first.json()["reply"], first.text
    # 2. an orchestrating agent continues it through MCP
    asked = mcp_ask(url, {"message": "from another agent", "thread": thread_id})
    assert not asked.get("isError") and asked["structuredContent"]["thread"] == thread_id, asked
    assert "turn 2" in asked["structuredContent"]["reply"]
    # 3. an editor loads it (and adds a turn) through ACP's TypeScript SDK client
    acp = node(ACP_JS, "client.mjs", "threads", json.dumps(onedoor() + ["acp", "-o", f"sqlite.path={db}"]), thread_id)
    assert acp.get("ok"), acp
    assert thread_id in [s["sessionId"] for s in acp["listed"]]
    assert "turn 3" in acp["reply"]
    # the thread as every door now stores it
    stored = httpx.get(url + f"/rest/threads/{thread_id}", timeout=30).json()["messages"]
    said = conversation(stored)
    assert [text for role, text in said if role == "user"] == [
        "from the web api", "from another agent", "and from the editor"]
    # ACP replayed the first two turns in order (user chunks and agent chunks)
    replayed = [("user" if u["sessionUpdate"] == "user_message_chunk" else "assistant", u["content"]["text"])
                for u in acp["replay"] if u["sessionUpdate"] in ("user_message_chunk", "agent_message_chunk")]
    assert replayed == said[: len(replayed)] and len(replayed) == 4, (replayed, said)
    # 4. the chat page in Chromium shows the same conversation
    page = node(AGUI_JS, "show_thread.mjs", f"{url}/agui/#thread={thread_id}", str(len(said)))
    assert "error" not in page and page["consoleErrors"] == [], page
    assert page["current"] == thread_id
    assert [tuple(m) for m in page["messages"]] == said, (page["messages"], said)
