"""Benchmark: a tool-call round trip through the MCP door vs a bare MCP server.

Both servers answer the same text ("pong") to the same MCP Python SDK client, over the
same transport, in the same run:

- stdio: ``onedoor serve --door mcp --transport stdio`` (scripted backend, short reply,
  async mode; the sync mode, which adds the kernel's worker thread, is reported too)
  vs a bare low-level SDK server on the SDK's own stdio transport whose tool returns the
  text directly;
- http: ``onedoor serve --door mcp --transport http`` vs the bare server's streamable HTTP
  app on uvicorn (stateful, SSE responses, like the door). Skipped when the HTTP
  transport is not installed.

Both servers run at once and the client calls them turn about, one call at a time, so
load from elsewhere on the machine hits both sides alike; the metric is the median round
trip in milliseconds. The last stdout line is one JSON object: {"name", "metrics", "ratios"}.

    python bench/bench_mcp.py [--quick]
    python bench/bench_mcp.py --bare stdio|http PORT   (internal: the baseline server)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any, AsyncIterator

REPLY = "pong"
SYNC_OPTIONS = ["-o", f"scripted.reply={REPLY}", "-o", "scripted.tool=false", "-o", "scripted.reasoning=false"]
# The ratios use the scripted backend's async mode, so they measure the door; the sync
# mode (a worker thread per run, the kernel's business) is reported beside them.
DOOR_OPTIONS = [*SYNC_OPTIONS, "-o", "scripted.mode=async"]


# -- the bare baseline server ---------------------------------------------------------------------


def bare_server() -> Any:
    from onedoor_door_mcp import sdk

    spec = {"name": "ask", "description": "Returns a fixed text.", "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}}}}

    async def call(name: str, arguments: Any, progress: Any) -> Any:
        return sdk.Outcome(REPLY)

    return sdk.build_server("bare", "1.0", "", lambda: [spec], call, lambda level: None)


def run_bare(kind: str, port: int) -> None:
    server = bare_server()
    if kind == "stdio":
        import anyio
        from mcp.server.stdio import stdio_server

        async def main() -> None:
            async with stdio_server() as (read, write):
                await server.run(read, write, server.create_initialization_options())

        anyio.run(main)
        return
    import uvicorn
    from onedoor_door_mcp import sdk
    from onedoor_door_mcp.asgi import McpApp, allowed_hosts, allowed_origins
    from onedoor_door_mcp.options import McpOptions

    hosts, origins = allowed_hosts(McpOptions()), allowed_origins(McpOptions())
    manager = sdk.session_manager(server, stateless=False, hosts=hosts, origins=origins, protect=True, max_body=4 << 20)

    async def app(scope: Any, receive: Any, send: Any) -> None:  # the SDK's manager, nothing else
        if scope["type"] == "lifespan":
            await McpApp(manager, hosts, origins, True)._own_lifespan(receive, send)
        elif scope["type"] == "http":
            await manager.handle_request(scope, receive, send)

    print(f"listening on http://127.0.0.1:{port}", flush=True)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on")


# -- the client ------------------------------------------------------------------------------------


async def call(session: Any) -> float:
    start = time.perf_counter()
    result = await session.call_tool("ask", {"message": "ping"})
    elapsed = (time.perf_counter() - start) * 1000
    text = "".join(getattr(c, "text", "") for c in result.content)
    if text != REPLY:
        raise SystemExit(f"unexpected reply {text!r}")
    return elapsed


async def alternate(sessions: dict[str, Any], calls: int, warmup: int) -> dict[str, list[float]]:
    """Call the servers turn about (rotating who goes first), so load from elsewhere on
    the machine hits every side alike."""
    names = list(sessions)
    for _ in range(warmup):
        for name in names:
            await call(sessions[name])
    times: dict[str, list[float]] = {name: [] for name in names}
    for index in range(calls):
        shift = index % len(names)
        for name in names[shift:] + names[:shift]:
            times[name].append(await call(sessions[name]))
    return times


@asynccontextmanager
async def stdio_session(argv: list[str]) -> AsyncIterator[Any]:
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=argv[0], args=argv[1:], env=dict(os.environ))
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            yield session


@asynccontextmanager
async def http_session(url: str) -> AsyncIterator[Any]:
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async with streamable_http_client(url) as streams:
        async with ClientSession(streams[0], streams[1]) as session:
            await session.initialize()
            yield session


async def over_stdio(argvs: dict[str, list[str]], calls: int, warmup: int) -> dict[str, list[float]]:
    async with AsyncExitStack() as stack:
        sessions = {name: await stack.enter_async_context(stdio_session(argv)) for name, argv in argvs.items()}
        return await alternate(sessions, calls, warmup)


async def over_http(urls: dict[str, str], calls: int, warmup: int) -> dict[str, list[float]]:
    async with AsyncExitStack() as stack:
        sessions = {name: await stack.enter_async_context(http_session(url)) for name, url in urls.items()}
        return await alternate(sessions, calls, warmup)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start(argv: list[str]) -> subprocess.Popen:
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    deadline = time.monotonic() + 30
    assert proc.stdout is not None
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        if "listening on" in line:
            return proc
    proc.kill()
    raise SystemExit(f"server did not start: {argv}")


def stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(15)
    except subprocess.TimeoutExpired:
        proc.kill()


def http_transport_installed() -> bool:
    from importlib.metadata import PackageNotFoundError, distribution

    try:
        distribution("onedoor-transport-http")
        return True
    except PackageNotFoundError:
        return False


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--bare", nargs=2, metavar=("KIND", "PORT"))
    args = parser.parse_args()
    if args.bare:
        run_bare(args.bare[0], int(args.bare[1]))
        return
    calls, warmup, rounds = (40, 5, 1) if args.quick else (200, 20, 2)
    me = os.path.abspath(__file__)
    door = [sys.executable, "-m", "onedoor", "serve", "--door", "mcp"]
    stdio_argvs = {
        "door_stdio": [*door, "--transport", "stdio", *DOOR_OPTIONS],
        "door_sync_stdio": [*door, "--transport", "stdio", *SYNC_OPTIONS],
        "bare_stdio": [sys.executable, me, "--bare", "stdio", "0"],
    }
    samples: dict[str, list[float]] = {}
    for _ in range(rounds):
        for name, values in asyncio.run(over_stdio(stdio_argvs, calls, warmup)).items():
            samples.setdefault(name, []).extend(values)
        if http_transport_installed():
            door_port, bare_port = free_port(), free_port()
            bare_proc = start([sys.executable, me, "--bare", "http", str(bare_port)])
            door_proc = start([*door, "--transport", "http", "--port", str(door_port), *DOOR_OPTIONS])
            try:
                urls = {"door_http": f"http://127.0.0.1:{door_port}/mcp/", "bare_http": f"http://127.0.0.1:{bare_port}/mcp"}
                for name, values in asyncio.run(over_http(urls, calls, warmup)).items():
                    samples.setdefault(name, []).extend(values)
            finally:
                stop(door_proc)
                stop(bare_proc)
    metrics: dict[str, Any] = {}
    for key, values in samples.items():
        if values:
            metrics[f"{key}_p50_ms"] = round(statistics.median(values), 3)
            metrics[f"{key}_p90_ms"] = round(statistics.quantiles(values, n=10)[-1], 3)
    ratios: dict[str, Any] = {}
    for kind in ("stdio", "http"):
        if samples.get(f"door_{kind}") and samples.get(f"bare_{kind}"):
            ratio = statistics.median(samples[f"door_{kind}"]) / statistics.median(samples[f"bare_{kind}"])
            ratios[f"{kind}_round_trip_p50"] = {"value": round(ratio, 3), "target": "<= 1.3"}
    from importlib.metadata import version

    if samples.get("door_sync_stdio") and samples.get("bare_stdio"):
        metrics["stdio_sync_backend_ratio_p50"] = round(
            statistics.median(samples["door_sync_stdio"]) / statistics.median(samples["bare_stdio"]), 3
        )
    import mcp  # noqa: F401

    metrics["mcp_sdk"] = version("mcp")
    metrics["calls_per_side"] = calls * rounds
    print(json.dumps({"name": "mcp", "metrics": metrics, "ratios": ratios}))


if __name__ == "__main__":
    main()
