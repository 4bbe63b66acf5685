"""Questions over AG-UI: how long an interrupt and a resume take, next to a bare AG-UI round trip.

One server process per backend mode (sync: worker thread, async: task), each the AG-UI
door's app on uvicorn with a small backend that asks for approval before a tool call and
stamps ``time.monotonic()`` (system-wide on Linux, so comparable across processes) when
it asks and when it gets its answer. Each round, over one raw loopback socket per request:

``bare``             a plain run: POST -> its first SSE event (RUN_STARTED)
``ask->interrupt``   the backend asks -> the RUN_FINISHED carrying the interrupt arrives
``resume->event``    the resume POST -> the first event of the resumed stream
``resume->backend``  the resume POST -> the backend holds its answer (for information)

Targets: the median and p99 of ask->interrupt and of resume->event are <= 1.5 x the bare
round trip's (same run, same server). The last stdout line is one JSON object.

    python bench/bench_questions_agui.py            # 300 rounds per mode
    python bench/bench_questions_agui.py --quick    # 40 rounds per mode
"""

from __future__ import annotations

import argparse
import json
import re
import socket
import statistics
import subprocess
import sys
import time
import uuid

from benchlib import start_server

HOST = "127.0.0.1"
FRAME = re.compile(rb"data: (.*?)\n\n", re.S)


# -- the server (a child process) ----------------------------------------------------------
def asking_backend(mode: str):
    """A backend whose "ask" run asks for approval, stamping when it asks and when it resumes."""
    from onedoor.events import RunFinished, RunStarted, TextDelta, ToolFinished, ToolStarted
    from onedoor.questions import Question

    def question(run_id: str) -> Question:
        return Question.approval(f"call-{run_id[:8]}", "deploy", {"env": "prod"}, asked_at=time.monotonic())

    def plain(run_id: str):
        yield RunStarted(run_id)
        yield TextDelta("hi")
        yield RunFinished(run_id, "hi")

    class SyncAgent:
        def run(self, message, *, history=None, context=None):
            if message != "ask":
                yield from plain(context.run_id)
                return
            yield RunStarted(context.run_id)
            q = question(context.run_id)
            yield ToolStarted(q.tool.id, "deploy", {"env": "prod"})
            answer = context.ask_sync(q)
            resumed = time.monotonic()
            yield ToolFinished(q.tool.id, "deploy", {"ran": answer.allowed})
            yield TextDelta(repr(resumed))
            yield RunFinished(context.run_id, repr(resumed))

    class AsyncAgent:
        async def run(self, message, *, history=None, context=None):
            if message != "ask":
                for event in plain(context.run_id):
                    yield event
                return
            yield RunStarted(context.run_id)
            q = question(context.run_id)
            yield ToolStarted(q.tool.id, "deploy", {"env": "prod"})
            answer = await context.ask(q)
            resumed = time.monotonic()
            yield ToolFinished(q.tool.id, "deploy", {"ran": answer.allowed})
            yield TextDelta(repr(resumed))
            yield RunFinished(context.run_id, repr(resumed))

    return SyncAgent if mode == "sync" else AsyncAgent


def serve(mode: str) -> None:
    import uvicorn
    from onedoor.composition import ServeContext
    from onedoor.kernel import Backend, Kernel
    from onedoor_door_agui import AguiDoor, AguiOptions
    from onedoor_transport_http import HttpOptions
    from onedoor_transport_http.app import build_app

    agent = asking_backend(mode)
    kernel = Kernel(Backend(f"asking-{mode}", agent))
    ctx = ServeContext(kernel=kernel, options={"agui": AguiOptions(keepalive=0)}, door_names=["agui"], transport_name="http")
    app, _ = build_app([AguiDoor()], ctx, HttpOptions(port=0))
    sock = socket.socket()
    sock.bind((HOST, 0))
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on")).run(sockets=[sock])


# -- the client -------------------------------------------------------------------------------
def post(port: int, payload: dict) -> tuple[float, float, list[tuple[float, dict]]]:
    """POST one RunAgentInput; (sent at, first event at, [(arrival, event)]), monotonic seconds."""
    body = json.dumps(payload).encode()
    head = (
        f"POST /agui/ HTTP/1.1\r\nHost: {HOST}:{port}\r\nContent-Type: application/json\r\n"
        f"Accept: text/event-stream\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    ).encode()
    data = bytearray()
    events: list[tuple[float, dict]] = []
    seen = 0
    with socket.create_connection((HOST, port), timeout=60) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sent = time.monotonic()
        sock.sendall(head + body)
        while True:
            chunk = sock.recv(1 << 16)
            now = time.monotonic()
            if not chunk:
                break
            data += chunk
            for match in FRAME.finditer(data, seen):
                events.append((now, json.loads(match.group(1))))
                seen = match.end()
    status = bytes(data[: data.find(b"\r\n")])
    if b" 200 " not in status or not events:
        raise RuntimeError(f"port {port}: {status!r} {bytes(data[-300:])!r}")
    return sent, events[0][0], events


def run_input(text: str) -> dict:
    return {"threadId": "bench", "runId": uuid.uuid4().hex, "messages": [{"id": "u", "role": "user", "content": text}]}


def one_round(port: int) -> dict[str, float]:
    sent, first, _ = post(port, run_input("plain"))
    bare = first - sent
    _, _, events = post(port, run_input("ask"))
    arrived, finished = events[-1]
    interrupt = finished["outcome"]["interrupts"][0]
    asked = interrupt["metadata"]["details"]["asked_at"]
    resume = {**run_input("ask"), "resume": [{"interruptId": interrupt["id"], "status": "resolved", "payload": True}]}
    sent, first, events = post(port, resume)
    resumed = float("".join(e["delta"] for _, e in events if e["type"] == "TEXT_MESSAGE_CONTENT"))
    if events[-1][1]["type"] != "RUN_FINISHED" or events[0][1].get("parentRunId") is None:
        raise RuntimeError(f"unexpected resumed stream: {[e['type'] for _, e in events]}")
    return {"bare": bare, "ask_to_interrupt": arrived - asked, "resume_to_event": first - sent, "resume_to_backend": resumed - sent}


def start(mode: str) -> tuple[subprocess.Popen, int]:
    return start_server(__file__, "--serve", mode, what=f"{mode} server")


def p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--serve", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve)
        return 0
    try:
        import onedoor_door_agui  # noqa: F401
        import onedoor_transport_http  # noqa: F401
    except ImportError as exc:
        print(json.dumps({"name": "questions_agui", "skipped": f"onedoor-door-agui is not installed ({exc})"}))
        return 0
    rounds = args.rounds or (40 if args.quick else 300)
    servers = {mode: start(mode) for mode in ("sync", "async")}
    samples: dict[str, dict[str, list[float]]] = {mode: {} for mode in servers}
    try:
        for _, port in servers.values():
            for _ in range(5):  # warm up: imports, first-run caches
                one_round(port)
        for _ in range(rounds):  # interleave the modes
            for mode, (_, port) in servers.items():
                for key, value in one_round(port).items():
                    samples[mode].setdefault(key, []).append(value)
    finally:
        for proc, _ in servers.values():
            proc.terminate()
        for proc, _ in servers.values():
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
    metrics: dict[str, float] = {"rounds": rounds}
    ratios: dict[str, dict[str, object]] = {}
    for mode, by_key in samples.items():
        stats = {key: (statistics.median(values), p99(values)) for key, values in by_key.items()}
        for key, (median, high) in stats.items():
            metrics[f"{mode}_{key}_median_ms"] = round(median * 1000, 3)
            metrics[f"{mode}_{key}_p99_ms"] = round(high * 1000, 3)
        for key in ("ask_to_interrupt", "resume_to_event"):
            for which, index in (("median", 0), ("p99", 1)):
                value = stats[key][index] / stats["bare"][index]
                ratios[f"{mode}_{key}_{which}_vs_bare"] = {"value": round(value, 3), "target": "<= 1.5"}
        print(
            f"{mode}: bare {stats['bare'][0] * 1000:.2f} ms, ask->interrupt {stats['ask_to_interrupt'][0] * 1000:.2f} ms, "
            f"resume->event {stats['resume_to_event'][0] * 1000:.2f} ms, resume->backend "
            f"{stats['resume_to_backend'][0] * 1000:.2f} ms (medians of {rounds})",
            file=sys.stderr,
        )
    print(json.dumps({"name": "questions_agui", "metrics": metrics, "ratios": ratios}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
