"""Benchmark: a question through the MCP door (elicitation) vs a bare MCP round trip.

A backend made for this run (``qbench``, registered in the server process) asks one tool
approval per call and notes two clock readings: just before it asks, and just after the
answer woke it. The client (the MCP Python SDK's ClientSession) notes when the
``elicitation/create`` request reached its callback and when it returned the answer.
Both sides read ``time.monotonic()`` (CLOCK_MONOTONIC on Linux: one clock for every
process on the machine), so per call:

- ``ask_to_client``: the backend asks -> the request reaches the client's callback;
- ``reply_to_resume``: the callback returns its answer -> the backend runs again;
- ``question``: the two together, the question's own round trip through kernel, door and SDK.

The baseline is a bare MCP round trip in the same session, turn about with the calls: a
``ping`` (client -> server -> client, through the SDK alone). The ratio is the median
question round trip over the median ping (target <= 1.5), per transport: stdio
(``onedoor serve --door mcp --transport stdio``) and streamable HTTP (skipped when the
HTTP transport is not installed). The backend runs as an async agent for the ratios; the
sync mode (worker thread, ``ask_sync``) is reported beside them over stdio.

The last stdout line is one JSON object: {"name", "metrics", "ratios"}.

    python bench/bench_questions_mcp.py [--quick]
    python bench/bench_questions_mcp.py --serve ARGS...   (internal: a door server with qbench)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, AsyncIterator, Literal

ME = os.path.abspath(__file__)


# -- the server side: a backend that asks and notes the time --------------------------------------


@dataclass
class QbenchOptions:
    mode: Literal["sync", "async"] = field(default="async", metadata={"help": "sync (worker thread) or async agent"})


def qbench(options: QbenchOptions | None = None) -> Any:
    """One agent per run: ask an approval, reply with the two clock readings as JSON."""
    from onedoor.events import RunFinished, RunStarted, TextDelta
    from onedoor.questions import Question

    def reply(run_id: str, asked: float, resumed: float, outcome: str) -> list[Any]:
        text = json.dumps({"asked": asked, "resumed": resumed, "outcome": outcome})
        return [TextDelta(text), RunFinished(run_id, text, "end_turn")]

    class AsyncAsker:
        async def run(self, message: str, *, history: Any = None, context: Any = None) -> Any:
            yield RunStarted(context.run_id)
            asked = time.monotonic()
            answer = await context.ask(Question.approval("call-1", "probe", {"n": message}))
            resumed = time.monotonic()
            for event in reply(context.run_id, asked, resumed, answer.outcome):
                yield event

    class SyncAsker:
        def run(self, message: str, *, history: Any = None, context: Any = None) -> Any:
            yield RunStarted(context.run_id)
            asked = time.monotonic()
            answer = context.ask_sync(Question.approval("call-1", "probe", {"n": message}))
            resumed = time.monotonic()
            yield from reply(context.run_id, asked, resumed, answer.outcome)

    return SyncAsker() if (options or QbenchOptions()).mode == "sync" else AsyncAsker()


qbench.Options = QbenchOptions  # type: ignore[attr-defined]


def serve(argv: list[str]) -> None:
    from onedoor import plugins
    from onedoor.cli import main

    plugins.add_in_process_plugin("backend", "qbench", qbench)
    sys.argv = ["onedoor", *argv]
    main()


# -- the client side ---------------------------------------------------------------------------------


class Clock:
    """The elicitation callback: answers allow_once and notes when it was asked and answered."""

    def __init__(self) -> None:
        self.received = 0.0
        self.replied = 0.0

    async def __call__(self, context: Any, params: Any) -> Any:
        import mcp.types as types

        self.received = time.monotonic()
        result = types.ElicitResult(action="accept", content={"decision": "allow_once"})
        self.replied = time.monotonic()
        return result


async def measure(session: Any, clock: Clock, calls: int, warmup: int) -> dict[str, list[float]]:
    samples: dict[str, list[float]] = {"ask_to_client": [], "reply_to_resume": [], "question": [], "ping": []}
    for index in range(warmup + calls):
        start = time.monotonic()
        await session.send_ping()
        ping = time.monotonic() - start
        result = await session.call_tool("ask", {"message": str(index)})
        times = json.loads("".join(getattr(c, "text", "") for c in result.content))
        if times["outcome"] != "allow_once":
            raise SystemExit(f"unexpected answer {times}")
        if index < warmup:
            continue
        to_client = clock.received - times["asked"]
        to_backend = times["resumed"] - clock.replied
        for key, value in (("ask_to_client", to_client), ("reply_to_resume", to_backend),
                           ("question", to_client + to_backend), ("ping", ping)):
            samples[key].append(value * 1000)
    return samples


@asynccontextmanager
async def stdio_session(argv: list[str], clock: Clock) -> AsyncIterator[Any]:
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=argv[0], args=argv[1:], env=dict(os.environ))
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, elicitation_callback=clock) as session:
            await session.initialize()
            yield session


@asynccontextmanager
async def http_session(url: str, clock: Clock) -> AsyncIterator[Any]:
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async with streamable_http_client(url) as streams:
        async with ClientSession(streams[0], streams[1], elicitation_callback=clock) as session:
            await session.initialize()
            yield session


async def over_stdio(mode: str, calls: int, warmup: int) -> dict[str, list[float]]:
    clock = Clock()
    argv = [sys.executable, ME, "--serve", "serve", "--door", "mcp", "--transport", "stdio", "-b", "qbench",
            "-o", f"qbench.mode={mode}"]
    async with stdio_session(argv, clock) as session:
        return await measure(session, clock, calls, warmup)


async def over_http(url: str, calls: int, warmup: int) -> dict[str, list[float]]:
    clock = Clock()
    async with http_session(url, clock) as session:
        return await measure(session, clock, calls, warmup)


def start_http() -> tuple[subprocess.Popen, str]:
    argv = [sys.executable, ME, "--serve", "serve", "--door", "mcp", "--transport", "http", "-b", "qbench",
            "--port", "0", "-o", "qbench.mode=async"]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.stdout is not None
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        if "listening on " in line:
            base = line.split("listening on ", 1)[1].split()[0].rstrip("/")
            return proc, base + "/mcp"
    proc.kill()
    raise SystemExit("the HTTP server did not start")


def stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(5)


def http_transport_installed() -> bool:
    from importlib.metadata import PackageNotFoundError, distribution

    try:
        distribution("onedoor-transport-http")
        return True
    except PackageNotFoundError:
        return False


def p99(values: list[float]) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[-1] if len(values) > 1 else values[0]


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--serve":
        serve(sys.argv[2:])
        return
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    calls, warmup = (40, 5) if args.quick else (300, 20)
    runs: dict[str, dict[str, list[float]]] = {"stdio": asyncio.run(over_stdio("async", calls, warmup))}
    runs["stdio_sync"] = asyncio.run(over_stdio("sync", calls, warmup))
    if http_transport_installed():
        proc, url = start_http()
        try:
            runs["http"] = asyncio.run(over_http(url, calls, warmup))
        finally:
            stop(proc)
    metrics: dict[str, Any] = {}
    ratios: dict[str, Any] = {}
    for transport, samples in runs.items():
        for key, values in samples.items():
            metrics[f"{transport}_{key}_p50_ms"] = round(statistics.median(values), 3)
            metrics[f"{transport}_{key}_p99_ms"] = round(p99(values), 3)
        ratio = statistics.median(samples["question"]) / statistics.median(samples["ping"])
        if transport == "stdio_sync":
            metrics["stdio_sync_question_vs_ping_p50"] = round(ratio, 3)
        else:
            ratios[f"{transport}_question_vs_ping_p50"] = {"value": round(ratio, 3), "target": "<= 1.5"}
    from importlib.metadata import version

    metrics["mcp_sdk"] = version("mcp")
    metrics["calls_per_transport"] = calls
    print(json.dumps({"name": "questions_mcp", "metrics": metrics, "ratios": ratios}))


if __name__ == "__main__":
    main()
