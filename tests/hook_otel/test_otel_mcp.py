"""An MCP client (the Python SDK) that sends ``traceparent`` in a request's ``_meta`` sees
its trace continued by the run the request starts, over streamable HTTP and stdio.

The ``_meta`` trace context reaches the run through the MCP SDK's own span (mcp 2.x
instruments its server session with OpenTelemetry and makes it current for the tool call)
or, where the door passes ``_meta`` on as the run's meta, through ``RunInfo.meta``."""

from __future__ import annotations

import sys

import pytest
from otel_support import LAUNCHER, TRACEPARENT, Served, ancestors, named, one, otel_env

pytest.importorskip("onedoor_door_mcp", reason="the MCP door is not installed")
pytest.importorskip("mcp")

from mcp import ClientSession

META_TRACE = "5bf92f3577b34da6a3ce929d0e0e4736"
META_PARENT = "00f067aa0ba902b7"
META = {"traceparent": f"00-{META_TRACE}-{META_PARENT}-01"}


def text(result) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


async def call(session: ClientSession) -> str:
    await session.initialize()
    result = await session.call_tool("ask", {"message": "trace me"}, meta=META)
    return text(result)


def check_continued(spans: list, transport: str) -> None:
    run = one(spans, "invoke_agent scripted")
    assert run.trace_id == META_TRACE, "the run is not in the client's _meta trace"
    chain = ancestors(run, spans)
    assert chain and chain[-1].parent_id == META_PARENT, [s.name for s in chain]
    assert one(spans, "execute_tool word_count").parent_id == run.span_id
    request = one([s for s in spans if s.scope == "onedoor"], "mcp tools/call")  # the door's request span
    assert request.kind == "server" and request.attributes["mcp.method.name"] == "tools/call"
    assert request.attributes["onedoor.transport"] == transport and request in chain


async def test_meta_traceparent_over_http(receiver):
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    with Served(["--door", "mcp"], otel_env(receiver.url)) as served:
        async with create_mcp_http_client(headers={"traceparent": TRACEPARENT}) as client:
            async with streamable_http_client(served.base_url + "/mcp/", http_client=client) as streams:
                async with ClientSession(streams[0], streams[1]) as session:
                    assert "trace me" in await call(session)
        assert served.stop() == 0
    check_continued(receiver.spans(), "http")


async def test_meta_traceparent_over_stdio(receiver):
    from mcp.client.stdio import StdioServerParameters, stdio_client

    env = otel_env(receiver.url, ONEDOOR_OTEL_SHUTDOWN_TIMEOUT="5")
    params = StdioServerParameters(command=sys.executable, env=env,
                                   args=[str(LAUNCHER), "serve", "--door", "mcp", "--transport", "stdio"])
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        assert "trace me" in await call(session)
    spans = receiver.wait_for_spans(lambda s: named(s, "invoke_agent scripted") and named(s, "execute_tool word_count"),
                                    "the run's spans from the stdio server")
    check_continued(spans, "stdio")
