"""The same over SLIM: a session opened with W3C trace context in its metadata is served
inside a SERVER span continuing that trace, and the runs of the session are inside it
(`onedoor serve --door mcp --transport slim` workers, the MCP SDK client over the SLIM
bridge, a node on a unix socket: tests/transport_slim's harness)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from otel_support import PARENT_ID, TRACE_ID, TRACEPARENT, ancestors, named, one, otel_env

pytest.importorskip("slim_bindings", reason="the SLIM transport's bindings are not installed")
pytest.importorskip("onedoor_transport_slim", reason="the SLIM transport is not installed")
pytest.importorskip("onedoor_door_mcp", reason="the MCP door is not installed")
pytest.importorskip("mcp")

sys.path.insert(0, str(Path(__file__).parents[1] / "transport_slim"))

from mcp import ClientSession
from onedoor_transport_slim.client import SlimClient, mcp_streams, mcp_timeout
from slim_harness import SECRET, Cluster


@pytest.fixture
def cluster(tmp_path_factory):
    import shutil
    import tempfile

    root = Path(tempfile.mkdtemp(prefix="odotel-", dir="/tmp"))  # a short path: unix socket names are short
    found = Cluster(root)
    try:
        found.start_node()
        yield found
    finally:
        found.close()
        shutil.rmtree(root, ignore_errors=True)


async def ask(options, message: str, metadata: dict[str, str]) -> str:
    client = await SlimClient(options, SECRET).connect()
    try:
        channel = await client.open(metadata=metadata)
        try:
            async with mcp_streams(channel) as (read, write):
                async with ClientSession(read, write, read_timeout_seconds=mcp_timeout(30)) as session:
                    await session.initialize()
                    result = await session.call_tool("ask", {"message": message})
                    return "".join(getattr(block, "text", "") for block in result.content)
        finally:
            await channel.close()
    finally:
        await client.close()


async def test_a_slim_sessions_trace_context_is_continued(cluster, receiver):
    worker = cluster.worker("mcp", env=otel_env(receiver.url))
    reply = await ask(cluster.options(), "over slim", {"traceparent": TRACEPARENT})
    assert "over slim" in reply
    spans = receiver.wait_for_spans(lambda s: named(s, "invoke_agent scripted") and named(s, "mcp session"),
                                    "the run and the SLIM session's span")
    session, run = one(spans, "mcp session"), one(spans, "invoke_agent scripted")
    assert session.kind == "server" and session.trace_id == TRACE_ID and session.parent_id == PARENT_ID
    assert session.attributes["onedoor.transport"] == "slim" and session.attributes["onedoor.door"] == "mcp"
    assert run.trace_id == TRACE_ID and session in ancestors(run, spans), [s.name for s in ancestors(run, spans)]
    assert worker.stop() == 0
