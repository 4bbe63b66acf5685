"""Benchmark: a question through the MCP door on 2026-07-28 (multi-round-trip) vs 2025-11-25 (elicitation).

One `onedoor serve --door mcp --transport http` server with the ``qbench`` backend of
:mod:`bench_questions_mcp` (it asks one tool approval per call and notes, on
``time.monotonic()``, when it asked and when the answer woke it). Two clients of the MCP
Python SDK 2.x against it, turn about, one call each per round:

``rounds``       ``Client(url, elicitation_callback=...)``: negotiates 2026-07-28; the call
                 answers ``input_required`` (the run parks in the kernel), the client's
                 callback answers, the client retries the call with the answer (a second
                 POST), the door resumes the run and reads it on through its journal
``elicitation``  ``ClientSession`` with ``initialize``: 2025-11-25 in a session; the door
                 sends ``elicitation/create`` on the call's SSE stream and waits for the answer

Per call: ``question`` (backend asks -> the client's callback has it, plus the callback's
answer -> the backend runs again: the question's own round trip through kernel, door and
SDK) and ``call`` (the whole ``call_tool`` as the client sees it). The ratios are the
rounds' median over elicitation's (no target: MRTR does more by design, a second request
and a parked run; this says how much more).

The last stdout line is one JSON object: {"name", "metrics", "ratios"}.

    python bench/bench_questions_mcp_rounds.py [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from typing import Any

from bench_questions_mcp import Clock, p99, start_http, stop

KINDS = ("rounds", "elicitation")


async def one_call(call: Any, clock: Clock, index: int) -> dict[str, float]:
    start = time.monotonic()
    result = await call("ask", {"message": str(index)})
    whole = time.monotonic() - start
    times = json.loads("".join(getattr(c, "text", "") for c in result.content))
    if times["outcome"] != "allow_once":
        raise SystemExit(f"unexpected answer {times}")
    question = (clock.received - times["asked"]) + (times["resumed"] - clock.replied)
    return {"question": question * 1000, "call": whole * 1000}


async def measure(url: str, calls: int, warmup: int) -> dict[str, dict[str, list[float]]]:
    from mcp import ClientSession
    from mcp.client import Client
    from mcp.client.streamable_http import streamable_http_client

    samples: dict[str, dict[str, list[float]]] = {kind: {"question": [], "call": []} for kind in KINDS}
    rounds_clock, elicit_clock = Clock(), Clock()
    async with Client(url, elicitation_callback=rounds_clock) as client:
        if client.session.protocol_version != "2026-07-28":
            raise SystemExit(f"the Client negotiated {client.session.protocol_version}, not 2026-07-28")
        async with streamable_http_client(url) as streams:
            async with ClientSession(streams[0], streams[1], elicitation_callback=elicit_clock) as session:
                await session.initialize()
                for index in range(warmup + calls):
                    got = {"rounds": await one_call(client.call_tool, rounds_clock, index),
                           "elicitation": await one_call(session.call_tool, elicit_clock, index)}
                    if index >= warmup:
                        for kind, values in got.items():
                            for key, value in values.items():
                                samples[kind][key].append(value)
    return samples


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    calls, warmup = (40, 5) if args.quick else (300, 20)
    proc, url = start_http()
    try:
        samples = asyncio.run(measure(url, calls, warmup))
    finally:
        stop(proc)
    metrics: dict[str, Any] = {}
    for kind, values in samples.items():
        for key, numbers in values.items():
            metrics[f"{kind}_{key}_p50_ms"] = round(statistics.median(numbers), 3)
            metrics[f"{kind}_{key}_p99_ms"] = round(p99(numbers), 3)
    ratios = {
        f"rounds_vs_elicitation_{key}_p50": {
            "value": round(statistics.median(samples["rounds"][key]) / statistics.median(samples["elicitation"][key]), 3),
            "target": "info",
        }
        for key in ("question", "call")
    }
    from importlib.metadata import version

    metrics["mcp_sdk"] = version("mcp")
    metrics["calls_per_kind"] = calls
    print(json.dumps({"name": "questions_mcp_rounds", "metrics": metrics, "ratios": ratios}))


if __name__ == "__main__":
    main()
