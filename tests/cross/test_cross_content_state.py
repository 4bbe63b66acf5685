"""What a user sends and shares across doors (#25, #26): one thread started on AG-UI with an
image and a state, its state read over REST and changed through MCP's state tool (two
doors changing one version at once: one wins, the other is told), loaded and continued in
an editor through ACP's TypeScript SDK client, which replays the image as an image block;
the thread still holds the image and the state everyone agreed on, as AG-UI shows it (what
the chat page loads after a reload). Another principal sees none of it on any door.

One real ``onedoor serve`` (REST, MCP with its state tool, AG-UI) with two principals and
one ``onedoor acp`` process share one SQLite threads file.
"""

from __future__ import annotations

import base64
import json
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from onedoor.builtins.scripted_extras import DOT_PNG
from test_cross_threads import ACP_JS, MCP_HEADERS, node, onedoor, tools_missing

ALICE, BOB = "cross-content-alice-token-0123456789", "cross-content-bob-token-0123456789"
PATCH = {"content-type": "application/json-patch+json"}


@pytest.fixture
def server(tmp_path: Path) -> Any:
    from onedoor_transport_http.testing import start_server

    db = tmp_path / "threads.sqlite3"
    tokens = tmp_path / "tokens"
    tokens.write_text(f"bob {BOB}\n")
    # the token's principal is "local": the one an editor's ACP process (stdio) acts as
    args = ["--door", "rest", "--door", "mcp", "--door", "agui", "--port", "0", "-o", f"sqlite.path={db}", "--token", ALICE,
            "-o", f"http.tokens_file={tokens}", "-o", "mcp.state_tool=update_state"]
    with start_server(args) as proc:
        yield proc.base_url, db, tokens


def auth(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


def agui_run(url: str, token: str, thread_id: str, content: Any, state: dict | None = None) -> list[dict]:
    body = {"threadId": thread_id, "runId": uuid.uuid4().hex, "tools": [], "context": [], "forwardedProps": {},
            "messages": [{"id": uuid.uuid4().hex, "role": "user", "content": content}]}
    if state is not None:
        body["state"] = state
    r = httpx.post(url + "/agui/", json=body, headers={**auth(token), "accept": "text/event-stream"}, timeout=60)
    assert r.status_code == 200, r.text
    return [json.loads(line[6:]) for line in r.text.splitlines() if line.startswith("data: ")]


def mcp_call(url: str, token: str, name: str, arguments: dict) -> dict:
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "cross", "version": "1"}}}
    with httpx.Client(timeout=60, headers=auth(token)) as client:
        opened = client.post(url + "/mcp/", json=init, headers=MCP_HEADERS)
        assert opened.status_code == 200, opened.text
        headers = {**MCP_HEADERS, "mcp-session-id": opened.headers["mcp-session-id"], "mcp-protocol-version": "2025-06-18"}
        client.post(url + "/mcp/", json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers)
        reply = client.post(url + "/mcp/", headers=headers, json={
            "jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": name, "arguments": arguments}})
    text = reply.text
    if reply.headers["content-type"].startswith("text/event-stream"):
        text = [line[6:] for line in text.splitlines() if line.startswith("data: ")][-1]
    return json.loads(text)["result"]


def image_of(message: dict) -> bytes | None:
    found = [p for p in message.get("parts", ()) if p["type"] == "image"]
    return base64.b64decode(found[0]["data"]) if found else None


@pytest.mark.skipif(tools_missing() is not None, reason=tools_missing() or "")
def test_an_image_and_a_state_go_through_every_door_and_stay_with_the_thread(server: Any) -> None:
    url, db, tokens = server
    thread_id = "cross-" + uuid.uuid4().hex[:10]
    png = base64.b64encode(DOT_PNG).decode()
    # 1. the web front end (AG-UI) starts the thread with text + an image, and a state
    sent = [{"type": "text", "text": "what is this?"},
            {"type": "image", "source": {"type": "data", "value": png, "mimeType": "image/png"}, "metadata": {"filename": "dot.png"}}]
    events = agui_run(url, ALICE, thread_id, sent, state={"todo": ["milk"]})
    assert events[-1]["type"] == "RUN_FINISHED", events[-3:]
    said = "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")
    assert "image/png" in said  # the backend was given the image, and said what it got
    # 2. REST reads the thread: the image is kept with the user's message; the state is there
    thread = httpx.get(f"{url}/rest/threads/{thread_id}", headers=auth(ALICE), timeout=30).json()
    assert image_of(thread["messages"][0]) == DOT_PNG
    read = httpx.get(f"{url}/rest/threads/{thread_id}/state", headers=auth(ALICE), timeout=30)
    assert read.status_code == 200 and read.json()["state"] == {"todo": ["milk"]}, read.text
    version = read.json()["version"]
    # 3. MCP's state tool and REST change the same version: one wins, the other is told
    changed = mcp_call(url, ALICE, "update_state", {"thread": thread_id, "version": version,
                                                    "patch": [{"op": "add", "path": "/todo/-", "value": "eggs"}]})
    assert not changed.get("isError"), changed
    late = httpx.patch(f"{url}/rest/threads/{thread_id}/state", headers={**auth(ALICE), **PATCH, "if-match": f'"{version}"'},
                       content=json.dumps([{"op": "add", "path": "/todo/-", "value": "bread"}]), timeout=30)
    assert late.status_code == 412 and late.json()["error"] == "state_changed", late.text
    # 4. an editor loads it through ACP (the TypeScript SDK client) and adds a turn
    acp = node(ACP_JS, "client.mjs", "threads",
               json.dumps(onedoor() + ["acp", "-o", f"sqlite.path={db}"]), thread_id)
    assert acp.get("ok"), acp
    images = [u["content"] for u in acp["replay"]
              if u["sessionUpdate"] == "user_message_chunk" and u["content"]["type"] == "image"]
    assert [base64.b64decode(i["data"]) for i in images] == [DOT_PNG] and images[0]["mimeType"] == "image/png", acp["replay"]
    # 5. the thread still holds the image and the state the doors agreed on; AG-UI (the page's
    #    reload) shows both
    shown = httpx.get(f"{url}/agui/threads/{thread_id}", headers=auth(ALICE), timeout=30).json()
    assert shown["state"] == {"todo": ["milk", "eggs"]}
    first = shown["messages"][0]
    assert isinstance(first["content"], list) and any(p.get("type") == "image" for p in first["content"]), first
    thread = httpx.get(f"{url}/rest/threads/{thread_id}", headers=auth(ALICE), timeout=30).json()
    assert image_of(thread["messages"][0]) == DOT_PNG
    assert [m["content"] for m in thread["messages"] if m["role"] == "user"][-1] == "and from the editor"
    # 6. Bob sees none of it on any door
    for path in (f"/rest/threads/{thread_id}", f"/rest/threads/{thread_id}/state", f"/agui/threads/{thread_id}"):
        assert httpx.get(url + path, headers=auth(BOB), timeout=30).status_code == 404, path
    refused = mcp_call(url, BOB, "update_state", {"thread": thread_id, "state": {"mine": True}})
    assert refused.get("isError"), refused
    assert httpx.get(f"{url}/rest/threads/{thread_id}/state", headers=auth(ALICE), timeout=30).json()["state"] == {
        "todo": ["milk", "eggs"]}
