"""Usage and observability through the ``ask`` tool (#27): the run's token usage in the result's
``_meta["onedoor/usage"]`` and structuredContent, equal to what the kernel summed and the thread
kept; the request's W3C trace context (``_meta`` ``traceparent`` / ``tracestate``) reaching the
run; every request the door serves seen by the observer hooks. Real servers (stdio and
streamable HTTP), the MCP Python SDK client (1.x or 2.x), the test launcher's observer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from onedoor.threads.sqlite import SQLiteThreadStore
from onedoor.usage import usage_to_json

pytestmark = pytest.mark.timeout(120)

TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
TRACESTATE = "vendor=opaque"


def structured(result: Any) -> Any:
    return result.structuredContent if hasattr(result, "structuredContent") else result.structured_content


async def test_usage_is_in_meta_and_structured_content_and_kept_with_the_turn(
    door_at: Any, sdk: Any, outcomes: Any, tmp_path: Path
) -> None:
    db = tmp_path / "threads.sqlite3"
    connect = door_at("-o", f"sqlite.path={db}")
    texts: list[str] = []

    async def progress(value: float, total: float | None, message: str | None) -> None:
        texts.append(message or "")

    async with connect() as session:
        result = await session.call_tool("ask", {"message": "count these words", "new_thread": True},
                                         progress_callback=progress)
        failed = await session.call_tool("ask", {"message": "/fail now"})
    assert not sdk.error(result)
    usage = result.meta["onedoor/usage"]
    assert structured(result)["usage"] == usage
    (entry,) = usage
    assert (entry["model"], entry["provider"], entry["requests"]) == ("scripted", "onedoor", 1)
    assert entry["input_tokens"] == len("count these words".split())  # the scripted backend counts words in
    deltas = [t for t in texts if not t.startswith("[tool ")]
    assert entry["output_tokens"] == len(deltas)  # and one token per text delta out (each went out as progress)
    assert "".join(deltas) == result.content[0].text
    record = outcomes.wait_for(lambda r: r["message"] == "count these words")
    assert record["usage"] == usage  # what the kernel put on the terminal event
    store = SQLiteThreadStore(db)
    try:
        thread = await store.get("local", structured(result)["thread"])
    finally:
        await store.close()
    assert usage_to_json([m for m in thread.messages if m.role == "assistant"][-1].usage) == usage
    failed_record = outcomes.wait_for(lambda r: r["message"] == "/fail now")
    assert sdk.error(failed) and (failed.meta or {}).get("onedoor/usage", []) == failed_record["usage"]


async def test_the_trace_context_in_meta_reaches_the_run_and_the_request_observers(
    door_at: Any, sdk: Any, outcomes: Any
) -> None:
    connect = door_at()
    async with connect() as session:
        await session.list_tools()
        traced = await session.call_tool("ask", {"message": "traced call"},
                                         meta={"traceparent": TRACEPARENT, "tracestate": TRACESTATE, "other": "x"})
        plain = await session.call_tool("ask", {"message": "plain call"})
    assert not sdk.error(traced) and not sdk.error(plain)
    run = outcomes.wait_for(lambda r: r["message"] == "traced call")
    assert run["meta"] == {"traceparent": TRACEPARENT, "tracestate": TRACESTATE}
    assert outcomes.wait_for(lambda r: r["message"] == "plain call")["meta"] == {}

    transport = door_at.transport
    requests = [r for r in outcomes.requests() if r["method"] != "initialize"]
    calls = [r for r in requests if r["method"] == "tools/call"]
    assert [(r["at"], r["meta"]) for r in calls] == [
        ("started", {"traceparent": TRACEPARENT, "tracestate": TRACESTATE}),
        ("finished", {"traceparent": TRACEPARENT, "tracestate": TRACESTATE}),
        ("started", {}), ("finished", {}),
    ]
    assert {(r["door"], r["transport"], r["principal"]) for r in requests} == {("mcp", transport, "local")}
    assert [r["at"] for r in requests if r["method"] == "tools/list"] == ["started", "finished"]
    assert all(r["error"] is None for r in requests if r["at"] == "finished")


async def test_a_refused_request_is_observed_with_its_error(door_at: Any, outcomes: Any) -> None:
    async with door_at()() as session:
        with pytest.raises(Exception) as info:  # McpError / MCPError: an unknown tool is a protocol error
            await session.call_tool("no_such_tool", {"message": "x"})
        await session.call_tool("ask", {"message": "after"})
    assert "Unknown tool" in str(info.value)
    outcomes.wait_for(lambda r: r["message"] == "after")
    finished = [r for r in outcomes.requests() if r["method"] == "tools/call" and r["at"] == "finished"]
    assert "Unknown tool" in finished[0]["error"] and finished[1]["error"] is None


async def test_the_principal_of_a_request_is_its_tokens(tmp_path: Path, start_http_server: Any, sdk: Any,
                                                        outcomes: Any) -> None:
    token = "carol-token-0123456789abcdef"
    tokens = tmp_path / "tokens"
    tokens.write_text(f"carol {token}\n")
    server = start_http_server("-o", "scripted.delay=0", "-o", f"tokens_file={tokens}")
    async with sdk.http(server.url, headers={"Authorization": f"Bearer {token}"}) as session:
        await session.call_tool("ask", {"message": "who am i"}, meta={"traceparent": TRACEPARENT})
    run = outcomes.wait_for(lambda r: r["message"] == "who am i")
    assert run["principal"] == "carol" and run["meta"] == {"traceparent": TRACEPARENT}
    calls = [r for r in outcomes.requests() if r["method"] == "tools/call"]
    assert {(r["principal"], r["transport"]) for r in calls} == {("carol", "http")}


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_the_2x_client_sends_its_trace_context_on_2026_07_28(
    sdk: Any, start_http_server: Any, outcomes: Any, transport: str
) -> None:
    """SDK 2.x's ``Client`` negotiates 2026-07-28 and puts the current OpenTelemetry span's
    context in each request's ``_meta`` itself: the run carries it on."""
    if sdk.major < 2:
        pytest.skip("the 2026-07-28 revision and the client's trace propagation need the MCP SDK 2.x")
    import os

    from mcp.client import Client
    from mcp.client.stdio import StdioServerParameters
    from opentelemetry import trace
    from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

    if transport == "http":
        target: Any = start_http_server("-o", "scripted.delay=0").url
    else:
        argv = sdk.command("-o", "scripted.delay=0")
        target = StdioServerParameters(command=argv[0], args=argv[1:], env={**os.environ, **outcomes.env})
    trace_id, span_id = 0x4BF92F3577B34DA6A3CE929D0E0E4736, 0x00F067AA0BA902B7
    span = NonRecordingSpan(SpanContext(trace_id, span_id, is_remote=False, trace_flags=TraceFlags(1)))
    async with Client(target) as client:
        assert client.session.protocol_version == "2026-07-28"
        with trace.use_span(span):
            result = await client.call_tool("ask", {"message": "/image modern"})
    assert not sdk.error(result) and [block.type for block in result.content] == ["text", "image"]
    assert result.meta["onedoor/usage"] == result.structured_content["usage"]
    run = outcomes.wait_for(lambda r: r["message"] == "/image modern")
    assert run["meta"] == {"traceparent": f"00-{trace_id:032x}-{span_id:016x}-01"}
