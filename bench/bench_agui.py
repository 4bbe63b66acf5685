"""AG-UI events/s for a long streamed run, onedoor's door side by side with its baselines.

Contenders, each a uvicorn server in its own process, read by the same raw socket reader
(one POST, read to EOF, count SSE frames):

``bare``            an ASGI endpoint streaming the same AG-UI events, pre-encoded
``onedoor-sync``    `onedoor serve --door agui`'s app, scripted backend on a worker thread
``onedoor-async``   the same with the scripted backend as an async agent
``onedoor-*-per_event``  the same with ``coalesce=false``: one write per event, like
                    the bare endpoint (for information: the door's default sends the
                    frames that are ready together in one write)
``pydantic-ai``     pydantic-ai's AG-UI adapter (AGUIAdapter) over a FunctionModel that
                    streams the same number of deltas (skipped if pydantic-ai is missing)

Targets: onedoor >= 0.6 x bare, and >= 8 x pydantic-ai. Rounds interleave the contenders;
each contender's median round counts. The last stdout line is one JSON object.

    python bench/bench_agui.py            # 20,000 deltas, 3 rounds (under a minute)
    python bench/bench_agui.py --quick    # 5,000 deltas, 1 round
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import subprocess
import sys
import uuid

from benchlib import post_sse, start_server

HOST = "127.0.0.1"
PIECE = "word "


# -- servers (run in child processes) -------------------------------------------------------
def bare_app(deltas: int):
    """An ASGI app that streams pre-encoded AG-UI events, one send per event."""
    from onedoor_door_agui.translate import encode_sse

    def frames(thread_id: str, run_id: str) -> list[bytes]:
        head = [
            {"type": "RUN_STARTED", "threadId": thread_id, "runId": run_id, "protocolVersion": "1.0"},
            {"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "assistant"},
        ]
        body = encode_sse({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": PIECE})
        tail = [{"type": "TEXT_MESSAGE_END", "messageId": "m1"}, {"type": "RUN_FINISHED", "threadId": thread_id, "runId": run_id}]
        return [encode_sse(e) for e in head] + [body] * deltas + [encode_sse(e) for e in tail]

    encoded = frames("thread", "run")

    async def app(scope, receive, send):
        if scope["type"] != "http":
            return
        while True:
            message = await receive()
            if not message.get("more_body"):
                break
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")]})
        for frame in encoded:
            await send({"type": "http.response.body", "body": frame, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    return app


def onedoor_app(deltas: int, mode: str, coalesce: bool = True):
    from onedoor.composition import ServeContext
    from onedoor.testing import scripted_kernel
    from onedoor_door_agui import AguiDoor, AguiOptions
    from onedoor_transport_http import HttpOptions
    from onedoor_transport_http.app import build_app

    kernel = scripted_kernel(mode=mode, deltas=deltas, reasoning=False, tool=False, reply=PIECE.strip())
    ctx = ServeContext(kernel=kernel, options={"agui": AguiOptions(coalesce=coalesce)}, door_names=["agui"], transport_name="http")
    app, _ = build_app([AguiDoor()], ctx, HttpOptions(port=0))
    return app


def pydantic_ai_app(deltas: int):
    from pydantic_ai import Agent
    from pydantic_ai.models.function import FunctionModel
    from pydantic_ai.ui.ag_ui import AGUIAdapter
    from starlette.applications import Starlette
    from starlette.routing import Route

    async def stream(messages, info):
        prompt = str(messages[-1].parts[-1].content)
        count = int(prompt.split()[1]) if prompt.startswith("/long ") else deltas  # a short warm-up run
        for _ in range(count):
            yield PIECE

    agent = Agent(FunctionModel(stream_function=stream))

    async def endpoint(request):
        return await AGUIAdapter.dispatch_request(request, agent=agent)

    return Starlette(routes=[Route("/agui/", endpoint, methods=["POST"])])


def serve(kind: str, deltas: int) -> None:
    import uvicorn

    if kind == "bare":
        app = bare_app(deltas)
    elif kind.startswith("onedoor-"):
        parts = kind.split("-")
        app = onedoor_app(deltas, parts[1], coalesce=parts[-1] != "per_event")
    else:
        app = pydantic_ai_app(deltas)
    sock = socket.socket()
    sock.bind((HOST, 0))
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on")
    uvicorn.Server(config).run(sockets=[sock])


# -- the reader --------------------------------------------------------------------------------
def read_run(port: int, prompt: str = "go", path: str = "/agui/") -> tuple[int, float, bytes]:
    """POST a RunAgentInput; return (SSE frames, seconds, last frame)."""
    body = json.dumps(
        {"threadId": "thread", "runId": uuid.uuid4().hex, "messages": [{"id": "u1", "role": "user", "content": prompt}]}
    ).encode()
    return post_sse(port, path, body)


def start(kind: str, deltas: int) -> tuple[subprocess.Popen, int]:
    return start_server(__file__, "--serve", kind, "--deltas", str(deltas), what=f"{kind} server")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--deltas", type=int, default=None)
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--serve", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    deltas = args.deltas or (5_000 if args.quick else 20_000)
    if args.serve:
        serve(args.serve, deltas)
        return 0
    rounds = args.rounds or (1 if args.quick else 3)
    try:
        import onedoor_door_agui  # noqa: F401
        import onedoor_transport_http  # noqa: F401
    except ImportError as exc:
        print(json.dumps({"name": "agui", "skipped": f"onedoor-door-agui is not installed ({exc})"}))
        return 0
    kinds = ["bare", "onedoor-sync", "onedoor-async", "onedoor-sync-per_event", "onedoor-async-per_event"]
    try:
        import pydantic_ai.ui.ag_ui  # noqa: F401

        kinds.append("pydantic-ai")
    except ImportError:
        print("pydantic-ai[ag-ui] is not installed: skipping that baseline", file=sys.stderr)
    servers = {kind: start(kind, deltas) for kind in kinds}
    rates: dict[str, list[float]] = {}
    try:
        for _, port in servers.values():  # warm up: imports, first-run caches
            read_run(port, "/long 500 warm up")
        for round_ in range(rounds):
            for kind, (_, port) in servers.items():
                frames, seconds, last = read_run(port)
                if frames < deltas or b"RUN_FINISHED" not in last:
                    raise RuntimeError(f"{kind}: {frames} frames, last {last!r}")
                rate = frames / seconds
                rates.setdefault(kind, []).append(rate)
                print(f"round {round_ + 1} {kind:<14} {frames} events in {seconds:.3f} s = {rate:,.0f} events/s", file=sys.stderr)
    finally:
        for proc, _ in servers.values():
            proc.terminate()
        for proc, _ in servers.values():
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
    best = {kind: statistics.median(values) for kind, values in rates.items()}
    metrics: dict[str, float] = {f"{k}_events_per_s": round(v) for k, v in best.items()}
    metrics["deltas"] = deltas
    metrics["rounds"] = rounds
    ratios = {}
    for mode in ("sync", "async"):
        ours = best[f"onedoor-{mode}"]
        ratios[f"onedoor_{mode}_vs_bare"] = {"value": round(ours / best["bare"], 3), "target": ">= 0.6"}
        per_event = best[f"onedoor-{mode}-per_event"]
        metrics[f"onedoor_{mode}_per_event_vs_bare"] = round(per_event / best["bare"], 3)  # for information
        if "pydantic-ai" in best:
            ratios[f"onedoor_{mode}_vs_pydantic_ai"] = {"value": round(ours / best["pydantic-ai"], 2), "target": ">= 8"}
    print(json.dumps({"name": "agui", "metrics": metrics, "ratios": ratios}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
