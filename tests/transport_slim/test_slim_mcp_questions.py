"""The agent's questions over MCP-over-SLIM: elicitation through the SLIM client bridge
(the MCP SDK's ClientSession with an ``elicitation_callback``), the door's policy for a
client without the capability, and a client that goes away while it is being asked.
A real SLIM node and `onedoor serve --door mcp --transport slim` workers, in processes."""

from __future__ import annotations

import asyncio
import json

import pytest
from onedoor_test_support import wait_for

pytest.importorskip("slim_bindings")
pytest.importorskip("mcp")

from onedoor import plugins

if "mcp" not in plugins.names("door"):
    pytest.skip("the MCP door (onedoor-door-mcp) is not installed", allow_module_level=True)

import mcp.types as types
from mcp import ClientSession
from onedoor_transport_slim.client import mcp_streams, mcp_timeout, open_channel

pytestmark = pytest.mark.timeout(180)


def text_of(result) -> str:
    assert not (getattr(result, "is_error", None) or getattr(result, "isError", False)), result
    return "".join(getattr(block, "text", "") for block in result.content)


def blocks_of(result) -> list[str]:
    assert not (getattr(result, "is_error", None) or getattr(result, "isError", False)), result
    return [getattr(block, "text", "") for block in result.content]


def outcome_of(worker, message: str) -> dict:
    def match() -> dict | None:
        if not worker.outcomes.exists():
            return None
        records = [json.loads(line) for line in worker.outcomes.read_text().splitlines() if line.strip()]
        return next((r for r in records if r["message"] == message), None)

    return wait_for(match, f"the outcome of {message!r} from worker {worker.pid}", timeout=60)


async def test_questions_by_elicitation_and_the_policy_over_slim(node_cluster):
    node_cluster.worker("mcp")
    replies = [
        types.ElicitResult(action="accept", content={"decision": "allow_once"}),
        types.ElicitResult(action="decline"),
        types.ElicitResult(action="accept", content={"answer": "over slim"}),
    ]
    asked: list[dict] = []

    async def person(context, params):
        asked.append(params.model_dump(by_alias=True, mode="json", exclude_none=True))
        return replies.pop(0)

    options = node_cluster.options()
    async with open_channel(options=options) as channel, mcp_streams(channel) as (read, write):
        async with ClientSession(read, write, read_timeout_seconds=mcp_timeout(60), elicitation_callback=person) as session:
            await session.initialize()
            approved = text_of(await session.call_tool("ask", {"message": '/ask rm {"path": "/tmp/x"}'}))
            declined = text_of(await session.call_tool("ask", {"message": "/ask rm {}"}))
            answered = text_of(await session.call_tool("ask", {"message": "/question Where are you?"}))
    assert approved == "Approved (allow_once): ran rm"
    assert declined == "Not approved (reject_once): did not run rm"
    assert answered == 'You answered {"answer": "over slim"}'
    assert '"path": "/tmp/x"' in asked[0]["message"]
    assert asked[0]["requestedSchema"]["properties"]["decision"]["enum"][0] == "allow_once"
    assert asked[2]["message"] == "Where are you?" and asked[2]["_meta"]["onedoor/question"]["kind"] == "input"

    # A client without the capability: the door's ask_fallback (deny by default) answers.
    async with open_channel(options=options) as channel, mcp_streams(channel) as (read, write):
        async with ClientSession(read, write, read_timeout_seconds=mcp_timeout(60)) as session:
            await session.initialize()
            denied = blocks_of(await session.call_tool("ask", {"message": "/ask rm {}"}))
    # the reply, then the note that says no person answered
    assert denied == [
        "Not approved (reject_once): did not run rm",
        "The agent asked to run rm; no one could be asked here (the client did not declare the elicitation "
        "capability), so the server's ask_fallback policy (deny) answered reject_once.",
    ]


async def test_a_client_that_leaves_while_asked_cancels_the_run_over_slim(node_cluster):
    worker = node_cluster.worker("mcp")
    init = {"jsonrpc": "2.0", "id": "init", "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}},
                       "clientInfo": {"name": "raw", "version": "1"}}}
    call = {"jsonrpc": "2.0", "id": "call", "method": "tools/call",
            "params": {"name": "ask", "arguments": {"message": "/ask deploy {}"}}}

    async def next_message(channel) -> dict:
        text = await asyncio.wait_for(channel.recv(), 60)
        assert text is not None, f"the session ended ({channel.error})"
        return json.loads(text)

    async with open_channel(options=node_cluster.options()) as channel:
        await channel.send(json.dumps(init))
        while (await next_message(channel)).get("id") != "init":
            pass
        await channel.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        await channel.send(json.dumps(call))
        while (await next_message(channel)).get("method") != "elicitation/create":
            pass
    # The SLIM session is closed without an answer: the worker cancels the run.
    record = outcome_of(worker, "/ask deploy {}")
    assert record["stop_reason"] == "cancelled", record
