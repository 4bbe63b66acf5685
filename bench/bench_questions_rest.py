"""REST door, human in the loop: how long a question takes to reach the client, and an answer the backend.

One server process (uvicorn, the HTTP transport's guarded app) hosts the REST door twice,
on a kernel with a sync (``/sync``) and an async (``/async``) timing backend. The backend
stamps what it sends with ``time.monotonic()`` (system-wide on Linux, so comparable
across the two processes): each text delta carries the moment it was sent, each question
(``metadata.asked_at``) the moment the backend asked. A separate client process (this
one) notes when each SSE event arrives. Per round, over loopback:

1. ``POST /chat/stream`` "ask": the backend sends one text delta, then asks a question;
   the response ends with ``question_asked`` and ``run_finished`` (``suspended``).
   (a) **ask → client**: the question's arrival minus ``asked_at``; its bare twin is
   **event → client**, the delta's arrival minus its stamp (same run, same stream).
2. ``POST /runs/{run_id}/answers/stream``: (b) **answer → first event**, from sending the
   POST to the first event of the resumed stream; (b') **answer → backend**, from sending
   to the backend resuming (the stamp of its next delta).
3. ``POST /chat/stream`` "plain": the bare round trip of the same protocol, **chat → first
   event** and **chat → backend** (the stamp of the backend's first delta).

Metrics: median and p99 of each, per mode. Ratios (target <= 1.5): ask→client over
event→client, answer→first event over chat→first event, answer→backend over chat→backend
(medians; the p99 ratios are informational).

    python bench/bench_questions_rest.py            # ~30 s
    python bench/bench_questions_rest.py --quick    # under 15 s
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
from typing import Any

MODES = ("sync", "async")


# --------------------------------------------------------------------------- server side
def _stamp() -> str:
    return f"@{time.monotonic():.6f};"


class TimedAgent:
    """Sync backend: a stamped delta, then (for "ask") a question and a stamped delta after it."""

    def run(self, message: str, *, history: Any = None, context: Any = None) -> Any:
        from onedoor.events import RunFinished, RunStarted, TextDelta
        from onedoor.questions import Question

        yield RunStarted(context.run_id)
        text = _stamp()
        yield TextDelta(text)
        if message == "ask":
            context.ask_sync(Question.input("Your name?", asked_at=time.monotonic()))
            after = _stamp()
            text += after
            yield TextDelta(after)
        yield RunFinished(context.run_id, text)


class AsyncTimedAgent:
    """The async twin of :class:`TimedAgent`."""

    async def run(self, message: str, *, history: Any = None, context: Any = None) -> Any:
        from onedoor.events import RunFinished, RunStarted, TextDelta
        from onedoor.questions import Question

        yield RunStarted(context.run_id)
        text = _stamp()
        yield TextDelta(text)
        if message == "ask":
            await context.ask(Question.input("Your name?", asked_at=time.monotonic()))
            after = _stamp()
            text += after
            yield TextDelta(after)
        yield RunFinished(context.run_id, text)


def serve() -> None:
    import uvicorn
    from onedoor.composition import AsgiMount, ServeContext
    from onedoor.kernel import Limits
    from onedoor.testing import kernel_for_agent
    from onedoor_door_rest import RestDoor, RestOptions
    from onedoor_transport_http import HttpOptions
    from onedoor_transport_http.app import build_app

    limits = Limits(max_concurrent_runs=8)
    kernels = {"sync": kernel_for_agent(TimedAgent, "timed", limits),
               "async": kernel_for_agent(AsyncTimedAgent, "timed", limits)}

    class Door:
        def __init__(self, name: str, mount: AsgiMount) -> None:
            self.name = name
            self.mount = mount

        def asgi_mount(self, ctx: object) -> AsgiMount:
            return self.mount

    doors = [
        Door(mode, RestDoor().asgi_mount(ServeContext(kernel=kernels[mode], options={"rest": RestOptions(prefix=f"/{mode}")})))
        for mode in MODES
    ]
    app, _ = build_app(doors, ServeContext(kernel=kernels["sync"]), HttpOptions(port=0))
    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="on", access_log=False)
    server = uvicorn.Server(config)

    async def main() -> None:
        task = asyncio.create_task(server.serve())
        while not server.started:
            await asyncio.sleep(0.02)
        port = server.servers[0].sockets[0].getsockname()[1]
        print(f"PORT {port}", flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)  # until the parent closes stdin
        server.should_exit = True
        await task

    asyncio.run(main())


# --------------------------------------------------------------------------- client side
async def events_of(client: Any, path: str, body: dict) -> tuple[float, list[tuple[float, str, dict]]]:
    """(when the request was sent, [(arrival, event name, data)]) for one streamed request."""
    sent = time.monotonic()
    out: list[tuple[float, str, dict]] = []
    buffer = b""
    async with client.stream("POST", path, json=body) as response:
        response.raise_for_status()
        async for chunk in response.aiter_raw():
            arrived = time.monotonic()
            buffer += chunk
            *frames, buffer = buffer.split(b"\n\n")
            for frame in frames:
                name, data = "", b""
                for line in frame.split(b"\n"):
                    if line.startswith(b"event: "):
                        name = line[7:].decode()
                    elif line.startswith(b"data: "):
                        data = line[6:]
                if name:
                    out.append((arrived, name, json.loads(data)))
    return sent, out


def stamps(text: str) -> list[float]:
    return [float(part[1:]) for part in text.split(";") if part.startswith("@")]


async def one_round(client: Any, mode: str, samples: dict[str, list[float]]) -> None:
    # 1. a run that asks: the delta (bare) and the question, each from backend to client
    _, events = await events_of(client, f"/{mode}/chat/stream", {"message": "ask"})
    delta = next(e for e in events if e[1] == "text_delta")
    asked = next(e for e in events if e[1] == "question_asked")
    assert events[-1][2]["stop_reason"] == "suspended", events[-1]
    question = asked[2]["question"]
    samples["event_to_client"].append(delta[0] - stamps(delta[2]["text"])[0])
    samples["ask_to_client"].append(asked[0] - question["metadata"]["asked_at"])
    # 2. the answer: to the resumed stream's first event, and to the backend going on
    body = {"answers": [{"question_id": question["id"], "outcome": "accept", "value": {"answer": "bench"}}]}
    sent, events = await events_of(client, f"/{mode}/runs/{question['run_id']}/answers/stream", body)
    assert events[-1][1] == "run_finished" and events[-1][2]["stop_reason"] == "end_turn", events[-1]
    samples["answer_to_first_event"].append(events[0][0] - sent)
    resumed = next(e for e in events if e[1] == "text_delta")
    samples["answer_to_backend"].append(stamps(resumed[2]["text"])[0] - sent)
    # 3. the bare round trip: a plain chat request
    sent, events = await events_of(client, f"/{mode}/chat/stream", {"message": "plain"})
    samples["chat_to_first_event"].append(events[0][0] - sent)
    first_delta = next(e for e in events if e[1] == "text_delta")
    samples["chat_to_backend"].append(stamps(first_delta[2]["text"])[0] - sent)


def p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]


async def measure(base: str, rounds: int, warmup: int) -> dict[str, dict[str, list[float]]]:
    import httpx

    keys = ("event_to_client", "ask_to_client", "answer_to_first_event", "answer_to_backend",
            "chat_to_first_event", "chat_to_backend")
    out: dict[str, dict[str, list[float]]] = {mode: {key: [] for key in keys} for mode in MODES}
    async with httpx.AsyncClient(base_url=base, timeout=60) as client:
        scratch: dict[str, list[float]] = {key: [] for key in keys}
        for _ in range(warmup):
            for mode in MODES:
                await one_round(client, mode, scratch)
        for _ in range(rounds):  # interleaved, so drift hits both modes alike
            for mode in MODES:
                await one_round(client, mode, out[mode])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds (under 15 s)")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve()
        return
    rounds, warmup = (60, 5) if args.quick else (400, 20)
    proc = subprocess.Popen(
        [sys.executable, __file__, "--serve"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if not line.startswith("PORT "):
            raise SystemExit(f"bench server did not start: {line!r}")
        samples = asyncio.run(measure(f"http://127.0.0.1:{int(line.split()[1])}", rounds, warmup))
    finally:
        if proc.stdin:
            proc.stdin.close()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
    metrics: dict[str, float] = {"rounds": rounds}
    ratios: dict[str, dict[str, Any]] = {}
    for mode in MODES:
        for key, values in samples[mode].items():
            metrics[f"{mode}_{key}_p50_ms"] = round(statistics.median(values) * 1000, 3)
            metrics[f"{mode}_{key}_p99_ms"] = round(p99(values) * 1000, 3)
        for name, over, bare in (("ask", "ask_to_client", "event_to_client"),
                                 ("answer", "answer_to_first_event", "chat_to_first_event"),
                                 ("answer_backend", "answer_to_backend", "chat_to_backend")):
            for stat, target in (("p50", "<= 1.5"), ("p99", "info")):
                value = metrics[f"{mode}_{over}_{stat}_ms"] / metrics[f"{mode}_{bare}_{stat}_ms"]
                ratios[f"{mode}_{name}_vs_bare_{stat}"] = {"value": round(value, 3), "target": target}
    print(json.dumps({"name": "questions_rest", "metrics": metrics, "ratios": ratios}))


if __name__ == "__main__":
    main()
