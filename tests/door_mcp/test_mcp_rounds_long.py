"""More of MCP 2026-07-28 from a client that can be asked (so the run goes through the
door's rounds, :mod:`onedoor_door_mcp.rounds`): a long run's progress streams, a client
that gives up on the call (closing the response stream) cancels it, and a question on a
stored thread keeps the thread. A real HTTP server and the SDK 2.x ``Client``."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytestmark = [pytest.mark.timeout(180), pytest.mark.skipif(
    int(__import__("importlib.metadata").metadata.version("mcp").split(".")[0]) < 2,
    reason="the 2026-07-28 revision needs the MCP SDK 2.x")]


async def never_asked(context: Any, params: Any) -> Any:
    raise AssertionError("the run asks nothing")


async def test_a_long_run_streams_progress_and_closing_the_stream_cancels_it(start_http_server: Any,
                                                                              outcomes: Any) -> None:
    from mcp.client import Client

    server = start_http_server("-o", "scripted.delay=0")
    progress: list[str] = []
    first = asyncio.Event()

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(message or "")
        first.set()

    async with Client(server.url, elicitation_callback=never_asked) as client:
        assert client.session.protocol_version == "2026-07-28"
        whole = await client.call_tool("ask", {"message": "/long 50 count"}, progress_callback=on_progress)
        assert "".join(p for p in progress if not p.startswith("[tool")) == whole.content[0].text
        assert len(progress) >= 50
    first.clear()


    progress.clear()
    async with Client(server.url, elicitation_callback=never_asked) as client:
        call = asyncio.ensure_future(client.call_tool("ask", {"message": "/slow /long 400 cancel me"},
                                                      progress_callback=on_progress))
        await asyncio.wait_for(first.wait(), 60)
        call.cancel()  # (the SDK's client keeps the request's stream open: leaving the client closes it)
        await asyncio.gather(call, return_exceptions=True)
    record = outcomes.wait_for(lambda r: r["message"].startswith("/slow /long 400"), timeout=60)
    assert record["stop_reason"] == "cancelled" and record["workers_alive"] == 0, record
    async with Client(server.url, elicitation_callback=never_asked) as client:
        after = await client.call_tool("ask", {"message": "after"})
    assert after.content[0].text.startswith("You said: after")


async def test_a_question_on_a_stored_thread(start_http_server: Any, tmp_path: Any) -> None:
    """The first round opens the thread; the retry (the same arguments: ``new_thread`` too)
    continues the run on it instead of opening another, and the result names it."""
    import mcp.types as types
    from mcp.client import Client

    async def allow(context: Any, params: Any) -> Any:
        return types.ElicitResult(action="accept", content={"decision": "allow_once"})

    server = start_http_server("-o", "scripted.delay=0", "-o", f"sqlite.path={tmp_path / 'threads.sqlite3'}")
    async with Client(server.url, elicitation_callback=allow) as client:
        await client.list_tools()
        first = await client.call_tool("ask", {"message": "/ask rm {}", "new_thread": True})
        thread = first.structured_content["thread"]
        assert first.content[0].text == "Approved (allow_once): ran rm" and thread in first.content[-1].text
        second = await client.call_tool("ask", {"message": "/ask ls {}", "thread": thread})
        assert second.structured_content["thread"] == thread
        assert second.content[0].text == "Approved (allow_once): ran ls"
        third = await client.call_tool("ask", {"message": "how many turns?", "thread": thread})
    assert "turn 3" in third.content[0].text, third.content[0].text
