"""Benchmark: MCP over SLIM (unix socket, MLS on) against MCP over streamable HTTP.

In one run: a SLIM node (`onedoor slim-node`), two workers (`onedoor serve --door mcp
--transport slim`) and one HTTP server (`onedoor serve --door mcp --transport http`),
all with the scripted backend answering a fixed short text. The MCP Python SDK client
measures, in this process:

- ``slim_ask_ms`` / ``http_ask_ms``: median round trip of ``tools/call ask`` on an open
  session (calls one after another); their ratio is the target (<= 2);
- ``slim_session_setup_ms``: median time to open a new SLIM session (MLS handshake
  included) and finish the MCP ``initialize``, on an existing node connection;
- ``slim_sessions_per_s``: new sessions (open + initialize + one ask + close), eight
  at a time, spread over the two workers.

    python bench/bench_slim.py [--quick]

The last stdout line is one JSON object: {"name", "metrics", "ratios"}.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPLY = "pong"
SECRET = "onedoor-bench-slim-secret-0123456789abcdef"
BACKEND = ["-o", f"scripted.reply={REPLY}", "-o", "scripted.tool=false", "-o", "scripted.reasoning=false"]


def onedoor(*args: str) -> list[str]:
    return [sys.executable, "-m", "onedoor", *args]


def start(argv: list[str], needle: str, log: Path, timeout: float = 30.0) -> subprocess.Popen:
    env = {**os.environ, "ONEDOOR_SLIM_SECRET": SECRET, "PYTHONUNBUFFERED": "1"}
    with open(log, "wb") as err:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=err, stderr=subprocess.STDOUT, env=env)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if needle in log.read_text(errors="replace"):
            return proc
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    proc.kill()
    raise RuntimeError(f"{argv[3:5]} did not start: {log.read_text(errors='replace')[-2000:]}")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


async def timed_calls(session, calls: int, warmup: int) -> list[float]:
    times = []
    for i in range(warmup + calls):
        started = time.perf_counter()
        result = await session.call_tool("ask", {"message": "ping"})
        elapsed = (time.perf_counter() - started) * 1000
        assert REPLY in "".join(getattr(b, "text", "") for b in result.content)
        if i >= warmup:
            times.append(elapsed)
    return times


async def slim_side(options, calls: int, warmup: int, setups: int, sessions: int) -> dict:
    from mcp import ClientSession
    from onedoor_transport_slim.client import SlimClient, mcp_streams

    client = await SlimClient(options, SECRET).connect()
    try:
        channel = await client.open()
        async with mcp_streams(channel) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            ask = await timed_calls(session, calls, warmup)
        await channel.close()

        setup = []
        for _ in range(setups):
            started = time.perf_counter()
            channel = await client.open()
            async with mcp_streams(channel) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                setup.append((time.perf_counter() - started) * 1000)
            await channel.close()

        async def one() -> None:
            channel = await client.open()
            try:
                async with mcp_streams(channel) as (read, write), ClientSession(read, write) as session:
                    await session.initialize()
                    await session.call_tool("ask", {"message": "ping"})
            finally:
                await channel.close()

        started = time.perf_counter()
        for start_index in range(0, sessions, 8):
            await asyncio.gather(*(one() for _ in range(min(8, sessions - start_index))))
        rate = sessions / (time.perf_counter() - started)
    finally:
        await client.close()
    return {"ask": statistics.median(ask), "setup": statistics.median(setup), "rate": rate}


async def http_side(url: str, calls: int, warmup: int) -> float:
    from mcp import ClientSession

    try:
        from mcp.client.streamable_http import streamable_http_client as connect
    except ImportError:  # mcp 1.x
        from mcp.client.streamable_http import streamablehttp_client as connect
    async with connect(url) as streams, ClientSession(streams[0], streams[1]) as session:
        await session.initialize()
        return statistics.median(await timed_calls(session, calls, warmup))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer calls (under 15 s)")
    args = parser.parse_args()
    calls, warmup, setups, sessions = (30, 5, 5, 16) if args.quick else (500, 50, 30, 160)

    from onedoor_transport_slim.options import SlimOptions

    root = Path(tempfile.mkdtemp(prefix="odbench-", dir="/tmp"))
    endpoint = f"unix://{root}/node.sock"
    procs: list[subprocess.Popen] = []
    metrics: dict[str, float | None] = {}
    try:
        procs.append(start(onedoor("slim-node", "--endpoint", endpoint), "listening on", root / "node.log"))
        for i in range(2):
            argv = onedoor("serve", "--door", "mcp", "--transport", "slim", "-o", f"endpoint={endpoint}", *BACKEND)
            procs.append(start(argv, "serving door", root / f"worker-{i}.log"))
        options = SlimOptions(endpoint=endpoint, secret=SECRET, probe_interval=5.0, probe_timeout=5.0)
        slim = asyncio.run(slim_side(options, calls, warmup, setups, sessions))
        metrics.update(
            slim_ask_ms=round(slim["ask"], 3),
            slim_session_setup_ms=round(slim["setup"], 3),
            slim_sessions_per_s=round(slim["rate"], 2),
        )
        try:
            import onedoor_transport_http  # noqa: F401

            port = free_port()
            argv = onedoor("serve", "--door", "mcp", "--transport", "http", "--port", str(port), *BACKEND)
            procs.append(start(argv, "listening on", root / "http.log"))
            metrics["http_ask_ms"] = round(asyncio.run(http_side(f"http://127.0.0.1:{port}/mcp", calls, warmup)), 3)
        except ImportError:
            metrics["http_ask_ms"] = None  # the HTTP transport is not installed
    finally:
        for proc in reversed(procs):
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
        shutil.rmtree(root, ignore_errors=True)
    ratios = {}
    if metrics.get("http_ask_ms"):
        ratios["slim_ask_vs_http"] = {
            "value": round(metrics["slim_ask_ms"] / metrics["http_ask_ms"], 3),  # type: ignore[operator]
            "target": "<= 2",
        }
    print(json.dumps({"name": "slim", "metrics": metrics, "ratios": ratios}))


if __name__ == "__main__":
    main()
