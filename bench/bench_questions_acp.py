"""Benchmark: a run's approval questions through the ACP door, against a bare ACP round trip.

One turn asks N approval questions, one after the other. Two latencies per question,
over stdio between real processes on this machine (both sides read the same system-wide
monotonic clock):

- ask -> client: from the backend asking (``await context.ask(Question.approval(...))``)
  to ``session/request_permission`` reaching the client's handler;
- reply -> resume: from the client's handler returning its answer to the backend
  resuming with it.

Baseline, in the same run: a bare agent on the agent-client-protocol SDK that itself
sends ``session/request_permission`` N times in its prompt handler (ask = just before
the request, resume = just after its reply), to the same client. Each side reports its
own times to the client as agent_message_chunk text. The door is measured with an async
and a sync (worker-thread) backend. Target: door / bare <= 1.5 (medians).

    python bench/bench_questions_acp.py [--quick] [--questions N] [--repeat R]

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


def now() -> float:
    """The system-wide monotonic clock (the same in every process of this machine)."""
    return time.clock_gettime(time.CLOCK_MONOTONIC)


# -- the agents (run as: bench_questions_acp.py --agent bare|async|sync N) ------------------


def bare_agent(questions: int) -> None:
    from acp import run_agent, start_tool_call, update_agent_message_text
    from acp.schema import (
        AgentCapabilities,
        InitializeResponse,
        NewSessionResponse,
        PermissionOption,
        PromptResponse,
        ToolCallUpdate,
    )

    options = [PermissionOption(option_id=k, name=k, kind=k) for k in ("allow_once", "allow_always", "reject_once",
                                                                        "reject_always")]

    class Bare:
        def on_connect(self, conn: Any) -> None:
            self.conn = conn

        async def initialize(self, protocol_version: int, **_: Any) -> Any:
            return InitializeResponse(protocol_version=1, agent_capabilities=AgentCapabilities())

        async def new_session(self, cwd: str, **_: Any) -> Any:
            return NewSessionResponse(session_id="bare")

        async def prompt(self, session_id: str, prompt: Any, **_: Any) -> Any:
            reports = []
            for i in range(questions):
                call = ToolCallUpdate(tool_call_id=f"call_{i}", title="rm", kind="delete", status="pending",
                                      raw_input={"path": "x"})
                asked = now()
                # as ACP wants (and the door does): the call is shown, then permission is asked for it
                await self.conn.session_update(session_id, start_tool_call(f"call_{i}", "rm", kind="delete",
                                                                           status="pending", raw_input={"path": "x"}))
                await self.conn.request_permission(session_id=session_id, tool_call=call, options=options)
                resumed = now()
                reports.append(f"{asked} {resumed}\n")
            await self.conn.session_update(session_id, update_agent_message_text("".join(reports)))
            return PromptResponse(stop_reason="end_turn")

    asyncio.run(run_agent(Bare()))


def door_agent(mode: str, questions: int) -> None:
    from onedoor.builtins.stdio import StdioTransport
    from onedoor.composition import ServeContext
    from onedoor.events import RunFinished, RunStarted, TextDelta
    from onedoor.kernel import Backend, Kernel
    from onedoor.questions import Question
    from onedoor_door_acp.door import AcpDoor, AcpOptions

    class AsyncAsker:
        async def run(self, message: str, *, history: Any = None, context: Any = None) -> Any:
            yield RunStarted(context.run_id)
            reports = []
            for i in range(questions):
                asked = now()
                await context.ask(Question.approval(f"call_{i}", "rm", {"path": "x"}))
                resumed = now()
                reports.append(f"{asked} {resumed}\n")
            yield TextDelta("".join(reports))  # at the end: no event waits to go out before a question
            yield RunFinished(context.run_id, "".join(reports))

    class SyncAsker:
        def run(self, message: str, *, history: Any = None, context: Any = None) -> Any:
            yield RunStarted(context.run_id)
            reports = []
            for i in range(questions):
                asked = now()
                context.ask_sync(Question.approval(f"call_{i}", "rm", {"path": "x"}))
                resumed = now()
                reports.append(f"{asked} {resumed}\n")
            yield TextDelta("".join(reports))  # at the end: no event waits to go out before a question
            yield RunFinished(context.run_id, "".join(reports))

    transport = StdioTransport()
    transport.prepare(None)
    ctx = ServeContext(
        kernel=Kernel(Backend("bench", AsyncAsker if mode == "async" else SyncAsker)),
        options={"acp": AcpOptions(backends="bench")},
        door_names=["acp"],
        transport_name="stdio",
    )
    sys.exit(transport.serve([AcpDoor()], ctx))


# -- the client ------------------------------------------------------------------------------


class Client:
    """Answers every permission request allow_once; notes when each arrived and was answered."""

    def __init__(self) -> None:
        self.received: list[float] = []
        self.replied: list[float] = []
        self.text: list[str] = []

    async def session_update(self, session_id: str, update: Any, **_: Any) -> None:
        if update.session_update == "agent_message_chunk":
            self.text.append(update.content.text)

    async def request_permission(self, *args: Any, **kwargs: Any) -> Any:
        self.received.append(now())
        answer = {"outcome": {"outcome": "selected", "optionId": "allow_once"}}
        self.replied.append(now())
        return answer


async def one_turn(cmd: list[str], env: dict[str, str], questions: int) -> tuple[list[float], list[float]]:
    """(ask -> client, reply -> resume) in seconds, one pair per question."""
    from acp import spawn_agent_process, text_block

    client = Client()
    async with spawn_agent_process(client, cmd[0], *cmd[1:], env=env, transport_kwargs={"stderr": None}) as (conn, _):
        await conn.initialize(protocol_version=1)
        session = await conn.new_session(cwd=os.getcwd(), mcp_servers=[])
        response = await conn.prompt(session_id=session.session_id, prompt=[text_block("go")])
    pairs = [line.split() for line in "".join(client.text).splitlines() if line.strip()]
    if response.stop_reason != "end_turn" or len(pairs) != questions or len(client.received) != questions:
        raise SystemExit(f"{cmd}: {len(client.received)} questions, {len(pairs)} reports, stop {response.stop_reason}")
    to_client = [got - float(asked) for got, (asked, _) in zip(client.received, pairs)]
    to_resume = [float(resumed) - replied for replied, (_, resumed) in zip(client.replied, pairs)]
    return to_client, to_resume


def summary(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, int(round(0.99 * (len(ordered) - 1))))]
    return {"median_ms": round(statistics.median(ordered) * 1000, 3), "p99_ms": round(p99 * 1000, 3)}


async def main_async(questions: int, repeat: int) -> dict[str, Any]:
    me = str(Path(__file__).resolve())
    samples: dict[str, tuple[list[float], list[float]]] = {k: ([], []) for k in ("bare", "async", "sync")}
    with tempfile.TemporaryDirectory() as tmp:
        env = {k: v for k, v in os.environ.items() if not k.startswith("ONEDOOR_")}
        env["ONEDOOR_DATA_DIR"] = tmp
        for _ in range(repeat):  # interleaved, so drift on a shared machine hits every side
            for kind in samples:
                to_client, to_resume = await one_turn([sys.executable, me, "--agent", kind, str(questions)], env,
                                                      questions)
                samples[kind][0].extend(to_client)
                samples[kind][1].extend(to_resume)
    metrics: dict[str, Any] = {"questions": questions, "repeat": repeat}
    medians: dict[tuple[str, int], float] = {}
    for kind, (to_client, to_resume) in samples.items():
        for index, (label, values) in enumerate((("ask_to_client", to_client), ("reply_to_resume", to_resume))):
            figures = summary(values)
            metrics[f"{kind}_{label}_median_ms"] = figures["median_ms"]
            metrics[f"{kind}_{label}_p99_ms"] = figures["p99_ms"]
            medians[(kind, index)] = statistics.median(values)
    ratios = {}
    for kind in ("async", "sync"):
        for index, label in enumerate(("ask_to_client", "reply_to_resume")):
            ratios[f"{label}_{kind}"] = {"value": round(medians[(kind, index)] / medians[("bare", index)], 3),
                                         "target": "<= 1.5"}
    return {"name": "questions_acp", "metrics": metrics, "ratios": ratios}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one round of 200 questions per side (under 15 s)")
    parser.add_argument("--questions", type=int, default=None)
    parser.add_argument("--repeat", type=int, default=None)
    parser.add_argument("--agent", nargs=2, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.agent is not None:
        kind, count = args.agent[0], int(args.agent[1])
        if kind == "bare":
            bare_agent(count)
        else:
            door_agent(kind, count)
        return
    questions = args.questions or (200 if args.quick else 1000)
    repeat = args.repeat or (1 if args.quick else 3)
    print(json.dumps(asyncio.run(main_async(questions, repeat))))


if __name__ == "__main__":
    main()
