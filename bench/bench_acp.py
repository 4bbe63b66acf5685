"""Benchmark: the ACP door against the bare agent-client-protocol SDK.

1. A turn that streams N text chunks (default 10,000) to the SDK's Python client:
   through ``onedoor acp`` (scripted backend, ``deltas=N``) versus a bare SDK agent that
   sends the same N chunks itself. Both are real subprocesses over stdio; the client
   counts every chunk. Target: door / bare <= 1.5.
2. Cold start: spawn to initialize reply, ``onedoor acp`` versus the bare SDK agent.

    python bench/bench_acp.py [--quick] [--chunks N] [--repeat R]

The last stdout line is one JSON object: {"name", "metrics", "ratios"}.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

# -- the bare SDK agent (run as: bench_acp.py --bare-agent N) ----------------------------


def bare_agent(chunks: int) -> None:
    from acp import run_agent, update_agent_message_text
    from acp.schema import AgentCapabilities, InitializeResponse, NewSessionResponse, PromptResponse

    words = ["You ", "said: ", "go "]

    class Bare:
        def on_connect(self, conn: Any) -> None:
            self.conn = conn

        async def initialize(self, protocol_version: int, **_: Any) -> Any:
            return InitializeResponse(protocol_version=1, agent_capabilities=AgentCapabilities())

        async def new_session(self, cwd: str, **_: Any) -> Any:
            return NewSessionResponse(session_id="bare")

        async def prompt(self, session_id: str, prompt: Any, **_: Any) -> Any:
            for i in range(chunks):
                await self.conn.session_update(session_id, update_agent_message_text(words[i % 3]))
            return PromptResponse(stop_reason="end_turn")

    asyncio.run(run_agent(Bare()))


# -- the client side ---------------------------------------------------------------------


class Counter:
    def __init__(self) -> None:
        self.chunks = 0

    async def session_update(self, session_id: str, update: Any, **_: Any) -> None:
        if update.session_update == "agent_message_chunk":
            self.chunks += 1

    async def request_permission(self, *args: Any, **kwargs: Any) -> Any:
        return {"outcome": {"outcome": "cancelled"}}


def onedoor_command() -> list[str]:
    script = Path(sys.executable).with_name("onedoor")
    return [str(script)] if script.exists() else [sys.executable, "-m", "onedoor"]


async def one_turn(cmd: list[str], env: dict[str, str], chunks: int) -> tuple[float, float]:
    """(seconds to stream the turn, seconds from spawn to initialize reply)."""
    from acp import spawn_agent_process, text_block

    counter = Counter()
    started = time.perf_counter()
    async with spawn_agent_process(counter, cmd[0], *cmd[1:], env=env, transport_kwargs={"stderr": None}) as (conn, _proc):
        await conn.initialize(protocol_version=1)
        cold = time.perf_counter() - started
        session = await conn.new_session(cwd=os.getcwd(), mcp_servers=[])
        t0 = time.perf_counter()
        response = await conn.prompt(session_id=session.session_id, prompt=[text_block("go")])
        turn = time.perf_counter() - t0
    if counter.chunks != chunks or response.stop_reason != "end_turn":
        raise SystemExit(f"{cmd[0]}: got {counter.chunks} chunks (want {chunks}), stop {response.stop_reason}")
    return turn, cold


async def main_async(chunks: int, repeat: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        env = {k: v for k, v in os.environ.items() if not k.startswith("ONEDOOR_")}
        env["ONEDOOR_DATA_DIR"] = tmp
        door_cmd = onedoor_command() + ["acp", "-o", f"deltas={chunks}", "-o", "tool=false", "-o", "reasoning=false"]
        bare_cmd = [sys.executable, str(Path(__file__).resolve()), "--bare-agent", str(chunks)]
        door_turns, bare_turns, door_cold, bare_cold = [], [], [], []
        for _ in range(repeat):  # interleaved, so drift on a shared machine hits both
            t, c = await one_turn(bare_cmd, env, chunks)
            bare_turns.append(t)
            bare_cold.append(c)
            t, c = await one_turn(door_cmd, env, chunks)
            door_turns.append(t)
            door_cold.append(c)
    door_t, bare_t = statistics.median(door_turns), statistics.median(bare_turns)
    door_c, bare_c = statistics.median(door_cold), statistics.median(bare_cold)
    return {
        "name": "acp",
        "metrics": {
            "chunks": chunks,
            "repeat": repeat,
            "door_turn_s": round(door_t, 4),
            "sdk_turn_s": round(bare_t, 4),
            "door_chunks_per_s": round(chunks / door_t),
            "sdk_chunks_per_s": round(chunks / bare_t),
            "door_cold_start_s": round(door_c, 4),
            "sdk_cold_start_s": round(bare_c, 4),
        },
        "ratios": {
            "turn_10k_chunks": {"value": round(door_t / bare_t, 3), "target": "<= 1.5"},
            "cold_start": {"value": round(door_c / bare_c, 3), "target": "<= 3.0"},
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one round of 2,000 chunks (under 15 s)")
    parser.add_argument("--chunks", type=int, default=None)
    parser.add_argument("--repeat", type=int, default=None)
    parser.add_argument("--bare-agent", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.bare_agent is not None:
        bare_agent(args.bare_agent)
        return
    chunks = args.chunks or (2_000 if args.quick else 10_000)
    repeat = args.repeat or (1 if args.quick else 3)
    result = asyncio.run(main_async(chunks, repeat))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
