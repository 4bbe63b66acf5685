"""Kernel overhead per real backend: kernel.run against the backend's own stream API.

For each installed backend (pydantic-ai, hermes), the same fake model server streams
the same reply of N chunks. The baseline consumes the library's own streaming API
directly (pydantic-ai: ``Agent.run_stream_events``; hermes: ``AIAgent.run_conversation``
with a stream callback); the measured side runs the onedoor backend through
``kernel.run``. Runs alternate and the median of each side is kept.

    python bench/bench_backends.py [--quick]

The last stdout line is one JSON object: {"name", "metrics", "ratios"}.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import statistics
import sys
import tempfile
import time
from typing import Any, Awaitable, Callable

from onedoor.events import TextDelta
from onedoor.testing import kernel_for_agent
from onedoor_fake_model_server import fake_model_server


async def _through_kernel(kernel: Any, message: str) -> int:
    count = 0
    async with kernel.run(message) as run:
        async for event in run:
            if type(event) is TextDelta:
                count += 1
    return count


# -- pydantic-ai ---------------------------------------------------------------------------
def pydantic_ai_sides(base_url: str) -> tuple[Callable[[str], Awaitable[int]], Callable[[str], Awaitable[int]]]:
    from onedoor_backend_pydantic_ai import PydanticAIOptions, pydantic_ai_backend

    opts = PydanticAIOptions(model="fake-model", base_url=base_url, api_key="bench", retries=0)
    kernel = kernel_for_agent(lambda: pydantic_ai_backend(opts), "pydantic-ai")

    async def direct(message: str) -> int:
        from openai import AsyncOpenAI
        from pydantic_ai import Agent, PartDeltaEvent, PartStartEvent
        from pydantic_ai.messages import TextPart, TextPartDelta
        from pydantic_ai.models.openai import OpenAIChatModel
        from pydantic_ai.providers.openai import OpenAIProvider

        client = AsyncOpenAI(base_url=base_url, api_key="bench", max_retries=0)
        agent = Agent(OpenAIChatModel("fake-model", provider=OpenAIProvider(openai_client=client)))
        count = 0
        try:
            async with agent.run_stream_events(message) as events:
                async for ev in events:
                    if isinstance(ev, PartStartEvent) and isinstance(ev.part, TextPart) and ev.part.content:
                        count += 1
                    elif isinstance(ev, PartDeltaEvent) and isinstance(ev.delta, TextPartDelta) and ev.delta.content_delta:
                        count += 1
        finally:
            await client.close()
        return count

    return direct, lambda message: _through_kernel(kernel, message)


# -- hermes ----------------------------------------------------------------------------------
def hermes_sides(base_url: str) -> tuple[Callable[[str], Awaitable[int]], Callable[[str], Awaitable[int]]]:
    from onedoor_backend_hermes import HermesOptions, hermes_backend
    from onedoor_backend_hermes.embed import build_agent

    home = tempfile.mkdtemp(prefix="onedoor-bench-hermes-")
    opts = HermesOptions(model="fake-model", base_url=base_url, api_key="bench", home=home)
    kernel = kernel_for_agent(lambda: hermes_backend(opts), "hermes")

    def direct_sync(message: str) -> int:
        count = [0]

        def on_delta(text: Any) -> None:
            if text:
                count[0] += 1

        agent = build_agent(
            home, opts.context_length, model="fake-model", base_url=base_url, api_key="bench", provider="custom",
            api_mode="chat_completions", quiet_mode=True, skip_memory=True, skip_context_files=True,
            save_trajectories=False, enabled_toolsets=[], max_iterations=opts.max_iterations,
            stream_delta_callback=on_delta,
        )
        try:
            agent.run_conversation(message, conversation_history=[])
        finally:
            agent.close()
        return count[0]

    async def direct(message: str) -> int:
        return await asyncio.to_thread(direct_sync, message)

    return direct, lambda message: _through_kernel(kernel, message)


BACKENDS = {
    "pydantic_ai": ("onedoor_backend_pydantic_ai", pydantic_ai_sides),
    "hermes": ("onedoor_backend_hermes", hermes_sides),
}


async def measure(name: str, sides: Any, deltas: int, rounds: int) -> dict[str, float]:
    direct, kernel = sides
    message = f"/long {deltas}"
    await direct("warm up")
    await kernel("warm up")
    times: dict[str, list[float]] = {"direct": [], "kernel": []}
    counts: dict[str, int] = {}
    sides = [("direct", direct), ("kernel", kernel)]
    for index in range(rounds):
        for side, fn in sides if index % 2 == 0 else sides[::-1]:  # alternate who goes first
            start = time.perf_counter()
            counts[side] = await fn(message)
            times[side].append(time.perf_counter() - start)
    direct_s = statistics.median(times["direct"])
    kernel_s = statistics.median(times["kernel"])
    if counts["direct"] != counts["kernel"]:
        print(f"{name}: delta counts differ: direct {counts['direct']}, kernel {counts['kernel']}", file=sys.stderr)
    n = max(counts["kernel"], 1)
    return {
        f"{name}_deltas": counts["kernel"],
        f"{name}_direct_events_per_s": round(counts["direct"] / direct_s, 1),
        f"{name}_kernel_events_per_s": round(counts["kernel"] / kernel_s, 1),
        f"{name}_added_us_per_delta": round((kernel_s - direct_s) / n * 1e6, 2),
        f"{name}_time_ratio": round(kernel_s / direct_s, 3),
    }


async def main_async(quick: bool) -> dict[str, Any]:
    deltas, rounds = (150, 2) if quick else (800, 4)
    metrics: dict[str, Any] = {}
    ratios: dict[str, Any] = {}
    skipped = []
    with fake_model_server() as server:
        for name, (module, make) in BACKENDS.items():
            if importlib.util.find_spec(module) is None:
                skipped.append(name)
                continue
            result = await measure(name, make(server.base_url), deltas, rounds)
            metrics.update(result)
            ratios[f"{name}_time_ratio"] = {"value": result[f"{name}_time_ratio"], "target": "<= 1.3"}
    if skipped:
        metrics["not_installed"] = skipped
    return {"name": "backends", "metrics": metrics, "ratios": ratios}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer deltas and rounds (under 15 s)")
    args = parser.parse_args()
    result = asyncio.run(main_async(args.quick))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
