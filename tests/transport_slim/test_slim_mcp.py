"""MCP over SLIM: the MCP Python SDK's ClientSession through the SLIM client bridge,
against `onedoor serve --door mcp --transport slim` workers in their own processes."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys

import pytest
from onedoor_test_support import wait_for
from slim_harness import NAME, SECRET, cli

pytest.importorskip("slim_bindings")
pytest.importorskip("mcp")

from onedoor import plugins

if "mcp" not in plugins.names("door"):
    pytest.skip("the MCP door (onedoor-door-mcp) is not installed", allow_module_level=True)

from mcp import ClientSession
from onedoor_transport_slim.client import mcp_streams, mcp_timeout, open_channel


def outcomes(worker) -> list[dict]:
    path = worker.outcomes
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def wait_outcome(worker, predicate, timeout: float = 20.0) -> dict:
    def match() -> dict | None:
        return next((record for record in outcomes(worker) if predicate(record)), None)

    try:
        return wait_for(match, f"a matching run outcome from worker {worker.pid}", timeout)
    except AssertionError as exc:
        raise AssertionError(f"{exc}; seen: {outcomes(worker)}") from None


def text_of(result) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


def is_error(result) -> bool:
    return bool(getattr(result, "is_error", None) or getattr(result, "isError", False))


async def ask_once(options, message: str) -> str:
    async with open_channel(options=options) as channel:
        try:
            async with mcp_streams(channel) as (read, write):
                async with ClientSession(read, write, read_timeout_seconds=mcp_timeout(30)) as session:
                    await session.initialize()
                    result = await session.call_tool("ask", {"message": message})
                    assert not is_error(result), text_of(result)
                    return text_of(result)
        except BaseException as exc:
            raise AssertionError(f"{message!r} failed; channel error: {channel.error}") from exc


async def test_list_call_and_progress(node_cluster):
    node_cluster.worker("mcp")
    progress: list[str] = []

    async def on_progress(value, total, message):
        progress.append(message or "")

    async with open_channel(options=node_cluster.options()) as channel, mcp_streams(channel) as (read, write):
        async with ClientSession(read, write, read_timeout_seconds=mcp_timeout(30)) as session:
            await session.initialize()
            tools = await session.list_tools()
            assert [t.name for t in tools.tools] == ["ask"]
            result = await session.call_tool("ask", {"message": "hello over slim"}, progress_callback=on_progress)
            assert not is_error(result)
            assert "hello over slim" in text_of(result)
            assert len(progress) >= 2
            assert "hello over slim" in "".join(progress)
            bad = await session.call_tool("ask", {"message": ""})
            assert is_error(bad)


class Recorder:
    """A channel wrapper that remembers the ids of the tools/call requests it sent."""

    def __init__(self, channel) -> None:
        self.channel = channel
        self.peer = channel.peer
        self.call_ids: list = []

    async def recv(self):
        return await self.channel.recv()

    async def send(self, message: str) -> None:
        data = json.loads(message)
        if data.get("method") == "tools/call":
            self.call_ids.append(data["id"])
        await self.channel.send(message)

    async def close(self) -> None:
        await self.channel.close()


async def test_cancel_stops_the_backend(node_cluster):
    worker = node_cluster.worker("mcp", "-o", "max_concurrent_runs=1")
    first_progress = asyncio.Event()

    async def on_progress(value, total, message):
        first_progress.set()

    async with open_channel(options=node_cluster.options()) as channel:
        recorder = Recorder(channel)
        async with mcp_streams(recorder) as (read, write), ClientSession(read, write, read_timeout_seconds=mcp_timeout(30)) as session:
            await session.initialize()
            call = asyncio.ensure_future(
                session.call_tool("ask", {"message": "/slow /long 400"}, progress_callback=on_progress)
            )
            await asyncio.wait_for(first_progress.wait(), 20)
            params = {"requestId": recorder.call_ids[0], "reason": "test"}
            await channel.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": params}))
            record = wait_outcome(worker, lambda r: r["message"].startswith("/slow"))
            assert record["stop_reason"] == "cancelled"
            call.cancel()
            await asyncio.gather(call, return_exceptions=True)
            # The only run slot is free again: the cancelled run really ended.
            result = await session.call_tool("ask", {"message": "after cancel"})
            assert not is_error(result) and "after cancel" in text_of(result)


async def test_worker_killed_mid_call_fails_the_call_in_bounded_time(node_cluster):
    worker = node_cluster.worker("mcp")
    streaming = asyncio.Event()

    async def on_progress(value, total, message):
        streaming.set()

    async with open_channel(options=node_cluster.options()) as channel, mcp_streams(channel) as (read, write):
        async with ClientSession(read, write, read_timeout_seconds=mcp_timeout(60)) as session:
            await session.initialize()
            call = asyncio.ensure_future(
                session.call_tool("ask", {"message": "/slow /long 100000"}, progress_callback=on_progress)
            )
            await asyncio.wait_for(streaming.wait(), 20)  # the call is running in the worker
            worker.kill()
            with pytest.raises(Exception) as info:
                await asyncio.wait_for(call, 30)
            assert not isinstance(info.value, asyncio.TimeoutError)
    assert "stopped answering" in (channel.error or "")


def test_ask_command_streams_the_reply(node_cluster):
    node_cluster.worker("mcp")
    env = {**os.environ, "ONEDOOR_SLIM_SECRET": SECRET}
    done = subprocess.run(
        cli("ask", "--transport", "slim", NAME, "hello from ask", "-o", f"endpoint={node_cluster.endpoint}"),
        env=env, capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "hello from ask" in done.stdout
    assert SECRET not in done.stdout + done.stderr


def test_ask_command_reports_a_missing_worker(node_cluster):
    env = {**os.environ, "ONEDOOR_SLIM_SECRET": SECRET}
    done = subprocess.run(
        cli("ask", "--transport", "slim", "agntcy/onedoor/nobody", "hi", "-o", f"endpoint={node_cluster.endpoint}",
            "-o", "session_retries=2", "-o", "session_interval=0.3"),
        env=env, capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 2
    assert "no answer from agntcy/onedoor/nobody" in done.stderr


async def test_two_workers_share_the_load_and_survive_losing_one(node_cluster):
    first = node_cluster.worker("mcp")
    second = node_cluster.worker("mcp")
    options = node_cluster.options()
    replies = await asyncio.gather(*(ask_once(options, f"client {i}") for i in range(20)))
    assert all(f"client {i}" in reply for i, reply in enumerate(replies))
    # A run's outcome is written by the worker's hook, not necessarily before the reply went out.
    wait_for(lambda: len(outcomes(first)) + len(outcomes(second)) == 20, "20 run outcomes from the two workers")
    served = [len(outcomes(first)), len(outcomes(second))]
    assert min(served) >= 1, served  # the node spread sessions across both workers
    first.kill()
    replies = []
    for i in range(10):
        replies.append(await ask_once(options, f"after {i}"))
    assert all(f"after {i}" in reply for i, reply in enumerate(replies))
    wait_for(lambda: len(outcomes(second)) == served[1] + 10, "10 more run outcomes from the surviving worker")


def test_ask_command_without_the_mcp_package_says_what_to_install(tmp_path):
    code = (
        "import sys; sys.modules['mcp'] = None\n"
        "from onedoor_transport_slim.ask import run_ask\n"
        "from onedoor_transport_slim.options import SlimOptions\n"
        f"sys.exit(run_ask('a/b/c', 'hi', SlimOptions(endpoint='unix://{tmp_path}/x.sock', secret='{SECRET}')))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "pip install" in done.stderr and "mcp" in done.stderr


async def test_sigterm_cancels_running_calls_and_exits_cleanly(node_cluster):
    worker = node_cluster.worker("mcp")
    started = asyncio.Event()

    async def on_progress(value, total, message):
        started.set()

    async with open_channel(options=node_cluster.options()) as channel, mcp_streams(channel) as (read, write):
        async with ClientSession(read, write, read_timeout_seconds=mcp_timeout(60)) as session:
            await session.initialize()
            call = asyncio.ensure_future(session.call_tool("ask", {"message": "/slow /long 2000"}, progress_callback=on_progress))
            await asyncio.wait_for(started.wait(), 20)
            assert worker.stop() == 0
            outcome = await asyncio.wait_for(asyncio.gather(call, return_exceptions=True), 20)
            assert isinstance(outcome[0], Exception) or is_error(outcome[0])
    record = wait_outcome(worker, lambda r: r["message"].startswith("/slow"))
    assert record["stop_reason"] == "cancelled"
    assert "stopped" in worker.text()
    assert worker.stdout() == ""


def test_ask_command_says_why_when_the_worker_dies(node_cluster, tmp_path):
    worker = node_cluster.worker("mcp")
    env = {**os.environ, "ONEDOOR_SLIM_SECRET": SECRET}
    reply = tmp_path / "ask.out"
    with open(reply, "wb") as out_file:
        ask = subprocess.Popen(
            cli("ask", "--transport", "slim", NAME, "/slow /long 100000", "-o", f"endpoint={node_cluster.endpoint}",
                "-o", "probe_interval=1", "-o", "probe_timeout=2"),
            env=env, stdout=out_file, stderr=subprocess.PIPE, text=True,
        )
    try:
        wait_for(lambda: reply.stat().st_size > 0, "`onedoor ask` to stream the first words of the reply", 30)
        worker.kill()
        _, err = ask.communicate(timeout=60)
    finally:
        if ask.poll() is None:
            ask.kill()
    assert ask.returncode == 2
    assert "stopped answering" in err
