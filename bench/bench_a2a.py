"""A2A streaming events/s for a long reply: onedoor's A2A door beside a bare a2a-sdk server.

Contenders, each a uvicorn server in its own process, read by the same raw socket reader
(one ``SendStreamingMessage`` JSON-RPC POST, read to EOF, count SSE frames):

``bare``            a2a-sdk's own JSON-RPC routes and DefaultRequestHandler over an
                    AgentExecutor that streams the same number of text deltas as artifact
                    updates (the Task, then N appends, then completed: what the door sends)
``onedoor-sync``    `onedoor serve --door a2a`'s app (the HTTP transport's guarded app),
                    scripted backend on a worker thread
``onedoor-async``   the same with the scripted backend as an async agent

Target: onedoor >= 0.8 x bare. Rounds interleave the contenders; each contender's median
round counts. The last stdout line is one JSON object.

    python bench/bench_a2a.py            # 3,000 deltas, 5 rounds (under a minute)
    python bench/bench_a2a.py --quick    # 1,000 deltas, 1 round
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
    """a2a-sdk alone: its routes, its handler, an executor streaming ``deltas`` artifact updates."""
    from a2a.helpers import new_task_from_user_message, new_text_part
    from a2a.server.agent_execution import AgentExecutor
    from a2a.server.request_handlers import DefaultRequestHandler
    from a2a.server.routes import create_jsonrpc_routes
    from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
    from a2a.types import AgentCapabilities, AgentCard, AgentInterface
    from starlette.applications import Starlette

    class Streamer(AgentExecutor):
        async def execute(self, context, event_queue):
            text = context.get_user_input()
            count = int(text.split()[1]) if text.startswith("/long ") else deltas  # the warm-up run is short
            await event_queue.enqueue_event(new_task_from_user_message(context.message))
            updater = TaskUpdater(event_queue, context.task_id, context.context_id)
            for index in range(count):
                await updater.add_artifact([new_text_part(PIECE)], artifact_id="reply", name="reply", append=index > 0)
            await updater.complete()

        async def cancel(self, context, event_queue):
            await TaskUpdater(event_queue, context.task_id, context.context_id).cancel()

    card = AgentCard(
        name="bare", description="streams deltas", version="0",
        supported_interfaces=[AgentInterface(url=f"http://{HOST}/", protocol_binding="JSONRPC", protocol_version="1.0")],
        capabilities=AgentCapabilities(streaming=True), default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
    )
    handler = DefaultRequestHandler(agent_executor=Streamer(), task_store=InMemoryTaskStore(), agent_card=card)
    return Starlette(routes=create_jsonrpc_routes(handler, rpc_url="/a2a/"))


def onedoor_app(deltas: int, mode: str):
    from onedoor.composition import ServeContext
    from onedoor.testing import scripted_kernel
    from onedoor_door_a2a import A2aDoor, A2aOptions
    from onedoor_transport_http import HttpOptions
    from onedoor_transport_http.app import build_app

    kernel = scripted_kernel(mode=mode, deltas=deltas, reasoning=False, tool=False, reply=PIECE.strip())
    ctx = ServeContext(kernel=kernel, options={"a2a": A2aOptions()}, door_names=["a2a"], transport_name="http")
    app, _ = build_app([A2aDoor()], ctx, HttpOptions(port=0))
    return app


def serve(kind: str, deltas: int) -> None:
    import uvicorn

    app = bare_app(deltas) if kind == "bare" else onedoor_app(deltas, kind.split("-")[1])
    sock = socket.socket()
    sock.bind((HOST, 0))
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on")
    uvicorn.Server(config).run(sockets=[sock])


# -- the reader --------------------------------------------------------------------------------
def read_run(port: int, prompt: str = "go") -> tuple[int, float, bytes]:
    """POST SendStreamingMessage; return (SSE frames, seconds, last frame)."""
    body = json.dumps({
        "jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage",
        "params": {"message": {"messageId": uuid.uuid4().hex, "role": "ROLE_USER", "parts": [{"text": prompt}]}},
    }).encode()
    return post_sse(port, "/a2a/", body, headers="A2A-Version: 1.0\r\n", timeout=300)


def start(kind: str, deltas: int) -> tuple[subprocess.Popen, int]:
    return start_server(__file__, "--serve", kind, "--deltas", str(deltas), what=f"{kind} server")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--deltas", type=int, default=None)
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--serve", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    deltas = args.deltas or (1_000 if args.quick else 3_000)
    if args.serve:
        serve(args.serve, deltas)
        return 0
    rounds = args.rounds or (1 if args.quick else 5)
    try:
        import a2a  # noqa: F401
        import onedoor_door_a2a  # noqa: F401
        import onedoor_transport_http  # noqa: F401
    except ImportError as exc:
        print(json.dumps({"name": "a2a", "skipped": f"onedoor-door-a2a is not installed ({exc})"}))
        return 0
    kinds = ["bare", "onedoor-sync", "onedoor-async"]
    servers = {kind: start(kind, deltas) for kind in kinds}
    rates: dict[str, list[float]] = {}
    try:
        for _, port in servers.values():  # warm up: imports, first-run caches
            read_run(port, "/long 100 warm up")
        for round_ in range(rounds):
            for kind, (_, port) in servers.items():
                frames, seconds, last = read_run(port)
                if frames < deltas or b"TASK_STATE_COMPLETED" not in last:
                    raise RuntimeError(f"{kind}: {frames} frames, last {last!r}")
                rate = frames / seconds
                rates.setdefault(kind, []).append(rate)
                print(f"round {round_ + 1} {kind:<14} {frames} events in {seconds:.3f} s = {rate:,.0f} events/s",
                      file=sys.stderr)
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
    ratios = {
        f"onedoor_{mode}_vs_bare": {"value": round(best[f"onedoor-{mode}"] / best["bare"], 3), "target": ">= 0.8"}
        for mode in ("sync", "async")
    }
    print(json.dumps({"name": "a2a", "metrics": metrics, "ratios": ratios}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
