"""Stored threads through the ``ask`` tool: real servers (stdio and streamable HTTP), the
MCP Python SDK client (1.x or 2.x), the server's SQLite file read back after the calls."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from onedoor.threads.sqlite import SQLiteThreadStore

pytestmark = pytest.mark.timeout(120)

ALICE = "alice-token-0123456789abcdef"
BOB = "bob-token-0123456789abcdefgh"


def structured(result: Any) -> Any:
    """A result's structured content, under the SDK's spelling (1.x or 2.x)."""
    if hasattr(result, "structuredContent"):
        return result.structuredContent
    return result.structured_content


def but_usage(result: Any) -> Any:
    """The structured content without the run's usage (tests of its own check it)."""
    return {k: v for k, v in structured(result).items() if k != "usage"}


def first_text(result: Any) -> str:
    return result.content[0].text


async def stored(path: Path, owner: str, thread_id: str) -> list[tuple[str, str]]:
    """(role, content) of every message the server stored in ``thread_id``."""
    store = SQLiteThreadStore(path)
    try:
        thread = await store.get(owner, thread_id)
    finally:
        await store.close()
    assert thread is not None, f"thread {thread_id} of {owner!r} is not in {path}"
    return [(m.role, m.content) for m in thread.messages]


async def test_two_asks_on_one_thread_the_second_sees_the_first(door_at: Any, tmp_path: Path, sdk: Any) -> None:
    db = tmp_path / "threads.sqlite3"
    connect = door_at("-o", f"sqlite.path={db}")
    async with connect() as session:
        first = await session.call_tool("ask", {"message": "hello there", "new_thread": True})
        thread_id = structured(first)["thread"]
        second = await session.call_tool("ask", {"message": "and again", "thread": thread_id})
        stateless = await session.call_tool("ask", {"message": "no thread"})

    assert not sdk.error(first) and first_text(first) == "You said: hello there (2 words, turn 1)"
    assert but_usage(first) == {"reply": first_text(first), "thread": thread_id, "state": {}, "state_version": 0}
    assert thread_id.startswith("t-")
    assert first.content[1].text == f'{{"thread": "{thread_id}"}}'
    # the scripted backend counts the user turns it was given: the thread's first turn came along
    assert not sdk.error(second) and first_text(second) == "You said: and again (2 words, turn 2)"
    assert but_usage(second) == {"reply": first_text(second), "thread": thread_id, "state": {}, "state_version": 0}
    # a call without a thread is as stateless as before: one text block, no thread
    assert sdk.text(stateless) == "You said: no thread (2 words, turn 1)" and len(stateless.content) == 1
    assert but_usage(stateless) == {"reply": sdk.text(stateless)}

    messages = await stored(db, "local", thread_id)
    said = [m for m in messages if m[0] == "user" or (m[0] == "assistant" and m[1])]
    assert said == [
        ("user", "hello there"), ("assistant", "You said: hello there (2 words, turn 1)"),
        ("user", "and again"), ("assistant", "You said: and again (2 words, turn 2)"),
    ]
    assert ("user", "no thread") not in messages


async def test_bad_and_unknown_threads_are_tool_errors_and_the_session_goes_on(
    door_at: Any, tmp_path: Path, sdk: Any
) -> None:
    connect = door_at("-o", f"sqlite.path={tmp_path / 'threads.sqlite3'}")
    cases = [
        ({"message": "x", "thread": "t-000000000000000000000000"}, "no thread 't-000000000000000000000000'"),
        ({"message": "x", "thread": "not a thread id!"}, "a thread id is 1-128"),
        ({"message": "x", "thread": ""}, "a thread id is 1-128"),
        ({"message": "x", "thread": 42}, "a thread id is 1-128"),
        ({"message": "x", "thread": "a" * 129}, "a thread id is 1-128"),
        ({"message": "x", "new_thread": "yes"}, "'new_thread' must be true or false"),
        ({"message": "x", "thread": "t-1", "new_thread": True}, "not both"),
        ({"message": "x", "new_thread": True, "history": [{"role": "user", "content": "hi"}]}, "not both"),
    ]
    async with connect() as session:
        results = [await session.call_tool("ask", arguments) for arguments, _ in cases]
        after = await session.call_tool("ask", {"message": "still here", "new_thread": True})
    for result, (arguments, needle) in zip(results, cases):
        assert sdk.error(result) and needle in sdk.text(result), (arguments, sdk.text(result))
    assert not sdk.error(after) and first_text(after) == "You said: still here (2 words, turn 1)"


async def test_a_server_without_a_store_says_so(door_at: Any, sdk: Any) -> None:
    connect = door_at("--store", "none")
    async with connect() as session:
        refused = await session.call_tool("ask", {"message": "x", "thread": "t-1"})
        new = await session.call_tool("ask", {"message": "x", "new_thread": True})
        stateless = await session.call_tool("ask", {"message": "stateless"})
    for result in (refused, new):
        assert sdk.error(result) and "keeps no threads" in sdk.text(result), sdk.text(result)
    assert sdk.text(stateless) == "You said: stateless (1 word, turn 1)"


@pytest.fixture
def two_principals(tmp_path: Path, start_http_server: Any) -> Any:
    """An HTTP server whose tokens file names alice and bob, and its SQLite file."""
    tokens = tmp_path / "tokens"
    tokens.write_text(f"alice {ALICE}\nbob {BOB}\n")
    db = tmp_path / "threads.sqlite3"
    server = start_http_server("-o", "scripted.delay=0", "-o", f"tokens_file={tokens}", "-o", f"sqlite.path={db}")
    return server, db


async def test_another_principals_thread_is_not_theirs_over_http(two_principals: Any, sdk: Any) -> None:
    server, db = two_principals

    def as_(token: str) -> Any:
        return sdk.http(server.url, headers={"Authorization": f"Bearer {token}"})

    async with as_(ALICE) as alice:
        started = await alice.call_tool("ask", {"message": "alice speaking", "new_thread": True})
    thread_id = structured(started)["thread"]
    async with as_(BOB) as bob:
        stolen = await bob.call_tool("ask", {"message": "bob reads it", "thread": thread_id})
        own = await bob.call_tool("ask", {"message": "bob speaking", "new_thread": True})
    async with as_(ALICE) as alice:
        again = await alice.call_tool("ask", {"message": "alice again", "thread": thread_id})
        bobs = await alice.call_tool("ask", {"message": "x", "thread": structured(own)["thread"]})

    assert sdk.error(stolen) and f"no thread {thread_id!r}" in sdk.text(stolen)
    assert sdk.error(bobs) and "no thread" in sdk.text(bobs)
    assert not sdk.error(again) and first_text(again) == "You said: alice again (2 words, turn 2)"
    alice_said = [c for r, c in await stored(db, "alice", thread_id) if r == "user"]
    assert alice_said == ["alice speaking", "alice again"]  # bob's call added nothing
    assert [c for r, c in await stored(db, "bob", structured(own)["thread"]) if r == "user"] == ["bob speaking"]
    store = SQLiteThreadStore(db)
    try:
        assert await store.get("bob", thread_id) is None and await store.get("local", thread_id) is None
    finally:
        await store.close()


async def test_a_thread_started_over_stdio_continues_over_http(tmp_path: Path, sdk: Any, start_http_server: Any) -> None:
    """One store, two doors' transports: the principal without tokens is `local` on both."""
    db = tmp_path / "threads.sqlite3"
    async with sdk.stdio(sdk.command("-o", "scripted.delay=0", "-o", f"sqlite.path={db}")) as session:
        started = await session.call_tool("ask", {"message": "on stdio", "new_thread": True})
    server = start_http_server("-o", "scripted.delay=0", "-o", f"sqlite.path={db}")
    async with sdk.http(server.url) as session:
        continued = await session.call_tool("ask", {"message": "on http", "thread": structured(started)["thread"]})
    assert first_text(continued) == "You said: on http (2 words, turn 2)"


async def test_concurrent_calls_on_one_thread_lose_no_turn(tmp_path: Path, sdk: Any) -> None:
    """Two calls on one thread at once, over one stdio session: both turns are kept."""
    db = tmp_path / "threads.sqlite3"
    async with sdk.stdio(sdk.command("-o", "scripted.delay=0", "-o", f"sqlite.path={db}")) as session:
        first = await session.call_tool("ask", {"message": "first", "new_thread": True})
        thread_id = structured(first)["thread"]
        results = await asyncio.gather(
            session.call_tool("ask", {"message": "left", "thread": thread_id}),
            session.call_tool("ask", {"message": "right", "thread": thread_id}),
        )
    assert not any(sdk.error(r) for r in results), [sdk.text(r) for r in results]
    users = [c for r, c in await stored(db, "local", thread_id) if r == "user"]
    assert users[0] == "first" and sorted(users[1:]) == ["left", "right"]


async def test_a_session_is_used_only_by_the_principal_that_opened_it(two_principals: Any) -> None:
    import httpx

    server, _db = two_principals
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
    accept = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
    async with httpx.AsyncClient(timeout=30) as client:
        opened = await client.post(server.url, json=init, headers={**accept, "authorization": f"Bearer {ALICE}"})
        assert opened.status_code == 200
        session = opened.headers["mcp-session-id"]
        ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
        for token, status in ((BOB, 404), (ALICE, 200)):
            reply = await client.post(server.url, json=ping, headers={
                **accept, "authorization": f"Bearer {token}", "mcp-session-id": session,
                "mcp-protocol-version": "2025-06-18"})
            assert reply.status_code == status, (token[:5], reply.text)
        refused = await client.post(server.url, json=ping, headers={
            **accept, "authorization": f"Bearer {BOB}", "mcp-session-id": session})
        assert refused.json()["error"]["message"] == "Session not found"


async def test_many_asks_on_one_thread_at_once_are_all_kept(door_at: Any, tmp_path: Path, sdk: Any) -> None:
    """#24 item 1: 30 calls on one thread at once, over one session: every call answers, every
    turn is kept."""
    db = tmp_path / "threads.sqlite3"
    connect = door_at("-o", f"sqlite.path={db}")
    async with connect() as session:
        first = await session.call_tool("ask", {"message": "start", "new_thread": True})
        thread_id = structured(first)["thread"]
        results = await asyncio.gather(
            *(session.call_tool("ask", {"message": f"crowd {n}", "thread": thread_id}) for n in range(30))
        )
    assert [sdk.error(r) for r in results] == [False] * 30, [first_text(r) for r in results if sdk.error(r)]
    messages = await stored(db, "local", thread_id)
    assert sorted(c for r, c in messages if r == "user") == sorted(["start", *(f"crowd {n}" for n in range(30))])
