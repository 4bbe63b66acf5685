"""A stored thread's shared state through MCP (#26): in the ``ask`` result's structuredContent,
as the resource ``onedoor://threads/{thread_id}/state`` (resources/templates/list, resources/list,
resources/read), changed by the optional state tool; owned by its principal. Real servers
(stdio and streamable HTTP), the MCP Python SDK client (1.x or 2.x), and another kernel on the
same SQLite file standing for another door."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from onedoor.testing import scripted_kernel
from onedoor.threads.sqlite import SQLiteThreadStore

pytestmark = pytest.mark.timeout(120)

ALICE = "alice-token-0123456789abcdef"
BOB = "bob-token-0123456789abcdefgh"
TEMPLATE = "onedoor://threads/{thread_id}/state"


def structured(result: Any) -> Any:
    return result.structuredContent if hasattr(result, "structuredContent") else result.structured_content


def reply(result: Any) -> str:
    """The reply (the first text block; the thread's id follows in a second)."""
    return result.content[0].text


def templates_of(listed: Any) -> list[Any]:
    return listed.resourceTemplates if hasattr(listed, "resourceTemplates") else listed.resource_templates


def uri_template(template: Any) -> str:
    return template.uriTemplate if hasattr(template, "uriTemplate") else template.uri_template


def error_code(exc: BaseException) -> Any:
    """The JSON-RPC error code of the SDK's error (McpError.error.code on 1.x, MCPError.code on 2.x)."""
    error = getattr(exc, "error", None)
    return getattr(error, "code", None) if error is not None else getattr(exc, "code", None)


async def read_state(session: Any, thread_id: str) -> tuple[Any, Any]:
    """(state, version) of a thread, read as its MCP resource."""
    result = await session.read_resource(TEMPLATE.format(thread_id=thread_id))
    (contents,) = result.contents
    mime = contents.mimeType if hasattr(contents, "mimeType") else contents.mime_type
    assert mime == "application/json"
    return json.loads(contents.text), (contents.meta or {})["onedoor/state_version"]


async def refused_code(session: Any, uri: str) -> Any:
    with pytest.raises(Exception) as info:  # McpError / MCPError, depending on the SDK
        await session.read_resource(uri)
    return error_code(info.value)


async def set_elsewhere(db: Path, thread_id: str, state: dict[str, Any], version: int) -> Any:
    """Another server (a kernel of its own on the same SQLite file) changes the thread's state."""
    store = SQLiteThreadStore(db)
    try:
        return await scripted_kernel(store=store).threads.set_state("local", thread_id, state, expected_version=version)
    finally:
        await store.close()


async def test_the_state_is_in_the_result_and_readable_as_a_resource(door_at: Any, sdk: Any, tmp_path: Path) -> None:
    db = tmp_path / "threads.sqlite3"
    connect = door_at("-o", f"sqlite.path={db}")
    async with connect() as session:
        first = await session.call_tool("ask", {"message": '/state {"todo": ["milk"]} plan it', "new_thread": True})
        thread_id, state, version = (structured(first)[k] for k in ("thread", "state", "state_version"))
        templates = [uri_template(t) for t in templates_of(await session.list_resource_templates())]
        read = await read_state(session, thread_id)
        listed = [str(r.uri) for r in (await session.list_resources()).resources]

        changed = await set_elsewhere(db, thread_id, {"todo": ["milk", "eggs"]}, version)
        read_after = await read_state(session, thread_id)
        second = await session.call_tool("ask", {"message": "and now?", "thread": thread_id})
        stateless = await session.call_tool("ask", {"message": '/state {"scratch": 1} no thread'})
        unknown = await refused_code(session, TEMPLATE.format(thread_id="t-000000000000000000000000"))
        malformed = await refused_code(session, "onedoor://threads/x/y/state")
        foreign = await refused_code(session, "https://example.com/state")

    assert state == {"todo": ["milk"]} and reply(first).endswith(' State: {"todo":["milk"]}')
    assert templates == [TEMPLATE]
    assert read == (state, version)
    assert TEMPLATE.format(thread_id=thread_id) in listed
    # set by the other server, read here, seen by the agent on the next call
    assert read_after == ({"todo": ["milk", "eggs"]}, changed.state_version) and changed.state_version > version
    assert reply(second).endswith(' State: {"todo":["milk","eggs"]}')
    assert structured(second)["state"] == {"todo": ["milk", "eggs"]}
    assert structured(second)["state_version"] == changed.state_version
    assert structured(stateless)["state"] == {"scratch": 1} and "state_version" not in structured(stateless)
    assert unknown == malformed == foreign == -32002


STATE_TOOL = ("-o", "mcp.state_tool=update_state")


async def test_the_state_tool_changes_the_state_at_a_version(door_at: Any, sdk: Any, tmp_path: Path) -> None:
    connect = door_at("-o", f"sqlite.path={tmp_path / 'threads.sqlite3'}", *STATE_TOOL)
    async with connect() as session:
        names = [t.name for t in (await session.list_tools()).tools]
        started = await session.call_tool("ask", {"message": '/state {"n": 1} go', "new_thread": True})
        thread_id, version = structured(started)["thread"], structured(started)["state_version"]
        patched = await session.call_tool("update_state", {"thread": thread_id, "version": version,
                                                           "patch": [{"op": "add", "path": "/m", "value": 2}]})
        stale = await session.call_tool("update_state", {"thread": thread_id, "version": version,
                                                         "patch": [{"op": "remove", "path": "/n"}]})
        missing = await session.call_tool("update_state", {"thread": thread_id,
                                                           "patch": [{"op": "replace", "path": "/nope", "value": 0}]})
        bad = [await session.call_tool("update_state", arguments) for arguments in (
            {"thread": thread_id}, {"thread": thread_id, "patch": [], "state": {}}, {"patch": []},
            {"thread": thread_id, "state": [1]}, {"thread": thread_id, "state": {}, "version": -1})]
        after_refusals = await read_state(session, thread_id)
        replaced = await session.call_tool("update_state", {"thread": thread_id, "state": {"fresh": True}})
        seen = await session.call_tool("ask", {"message": "look", "thread": thread_id})

    assert names == ["ask", "update_state"]
    assert not sdk.error(patched) and structured(patched) == {"thread": thread_id, "state": {"n": 1, "m": 2},
                                                              "state_version": version + 1}
    assert sdk.error(stale) and "(stale)" in sdk.text(stale) and stale.meta["onedoor/refused"] == "stale"
    assert sdk.error(missing) and "(invalid)" in sdk.text(missing)
    assert all(sdk.error(result) and "Invalid arguments" in sdk.text(result) for result in bad)
    assert after_refusals == ({"n": 1, "m": 2}, version + 1)  # nothing refused was applied
    assert structured(replaced)["state"] == {"fresh": True}
    assert reply(seen).endswith(' State: {"fresh":true}')


async def test_without_the_option_there_is_no_state_tool(door_at: Any) -> None:
    async with door_at()() as session:
        assert [t.name for t in (await session.list_tools()).tools] == ["ask"]


async def test_a_server_without_a_store_offers_no_resources(door_at: Any) -> None:
    async with door_at("--store", "none")() as session:
        with pytest.raises(Exception) as info:
            await session.list_resource_templates()
    assert error_code(info.value) == -32601


async def test_another_principals_state_is_not_theirs(tmp_path: Path, start_http_server: Any, sdk: Any) -> None:
    tokens = tmp_path / "tokens"
    tokens.write_text(f"alice {ALICE}\nbob {BOB}\n")
    server = start_http_server("-o", "scripted.delay=0", "-o", f"tokens_file={tokens}",
                               "-o", f"sqlite.path={tmp_path / 'threads.sqlite3'}", *STATE_TOOL)

    def as_(token: str) -> Any:
        return sdk.http(server.url, headers={"Authorization": f"Bearer {token}"})

    async with as_(ALICE) as alice:
        started = await alice.call_tool("ask", {"message": '/state {"secret": "a"} mine', "new_thread": True})
        thread_id = structured(started)["thread"]
    uri = TEMPLATE.format(thread_id=thread_id)
    async with as_(BOB) as bob:
        stolen = await refused_code(bob, uri)
        listed = [str(r.uri) for r in (await bob.list_resources()).resources]
        patched = await bob.call_tool("update_state", {"thread": thread_id, "state": {"secret": "b"}})
    async with as_(ALICE) as alice:
        kept = await read_state(alice, thread_id)
        own = [str(r.uri) for r in (await alice.list_resources()).resources]

    assert stolen == -32002 and uri not in listed
    assert sdk.error(patched) and patched.meta["onedoor/refused"] == "not_found"
    assert kept[0] == {"secret": "a"} and uri in own
