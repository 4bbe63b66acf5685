"""AG-UI shared state: what a 100 KB state with 100 changes costs a run, as deltas and as snapshots.

One `onedoor` AG-UI server (the door's app on uvicorn, in its own process, no thread store)
with a backend that streams 100 text deltas and, per the prompt, changes the run's state
after each of them. Three runs, read by the same raw socket reader, interleaved round by
round (each figure: the median round):

``no-state``    the 100 text deltas alone, no state sent
``deltas``      the client sends a 100 KB state (1,000 to-do items); each change is a
                STATE_DELTA (one ``replace`` of an item's ``done``)
``snapshots``   the same state and changes, each sent as a whole STATE_SNAPSHOT

Measured: time from the request to the last event, and the bytes of the response (the
request's own bytes, the state sent, are given apart). Ratios: deltas / no-state (the cost
of carrying a state) and snapshots / deltas (what deltas save). The last stdout line is one
JSON object.

    python bench/bench_agui_state.py            # 7 rounds
    python bench/bench_agui_state.py --quick    # 2 rounds
"""

from __future__ import annotations

import argparse
import copy
import json
import socket
import statistics
import subprocess
import sys
import time
import uuid

from benchlib import start_server

HOST = "127.0.0.1"
CHANGES = 100
ITEMS = 1000


def big_state() -> dict:
    """About 100 KB of JSON: a to-do list of 1,000 items."""
    return {"items": [{"id": i, "title": f"item {i:04d} " + "x" * 70, "done": False} for i in range(ITEMS)]}


# -- the server (a child process) -----------------------------------------------------------------
def app():
    from onedoor import Backend, Kernel, RunFinished, RunStarted, StateDelta, StateSnapshot, TextDelta
    from onedoor.composition import ServeContext
    from onedoor.state import copy_state
    from onedoor_door_agui import AguiDoor, AguiOptions
    from onedoor_transport_http import HttpOptions
    from onedoor_transport_http.app import build_app

    class Changer:
        """100 text deltas; after each, the state changes as the prompt says (deltas, snapshots or none)."""

        async def run(self, message, *, history=None, context=None):
            yield RunStarted(context.run_id)
            state = context.state  # the backend's own copy: it may change it freely
            for i in range(CHANGES):
                yield TextDelta("word ")
                if message == "deltas":
                    yield StateDelta(({"op": "replace", "path": f"/items/{i}/done", "value": True},))
                elif message == "snapshots":
                    state["items"][i]["done"] = True
                    yield StateSnapshot(copy_state(state))  # each snapshot its own document
            yield RunFinished(context.run_id, "word " * CHANGES)

    kernel = Kernel(Backend("changer", Changer))
    ctx = ServeContext(kernel=kernel, options={"agui": AguiOptions(keepalive=0)}, door_names=["agui"], transport_name="http")
    built, _ = build_app([AguiDoor()], ctx, HttpOptions(port=0, max_body_bytes=4 * 1024 * 1024))
    return built


def serve() -> None:
    import uvicorn

    sock = socket.socket()
    sock.bind((HOST, 0))
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    uvicorn.Server(uvicorn.Config(app(), log_level="warning", access_log=False, lifespan="on")).run(sockets=[sock])


# -- the reader ------------------------------------------------------------------------------------
def run(port: int, kind: str, state: dict | None) -> tuple[float, int, int, bytes]:
    """One run: (seconds to the last byte, response bytes, request bytes, the response body)."""
    payload: dict = {"threadId": "bench", "runId": uuid.uuid4().hex,
                     "messages": [{"id": "u1", "role": "user", "content": "go" if kind == "no-state" else kind}]}
    if state is not None:
        payload["state"] = state
    body = json.dumps(payload, separators=(",", ":")).encode()
    head = (f"POST /agui/ HTTP/1.1\r\nHost: {HOST}:{port}\r\nContent-Type: application/json\r\nAccept: text/event-stream\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode()
    data = bytearray()
    with socket.create_connection((HOST, port), timeout=120) as sock:
        started = time.perf_counter()
        sock.sendall(head + body)
        while chunk := sock.recv(1 << 18):
            data += chunk
        elapsed = time.perf_counter() - started
    if b" 200 " not in data[: data.find(b"\r\n")] or b"RUN_FINISHED" not in data[-400:]:
        raise RuntimeError(f"{kind}: {bytes(data[:300])!r} ... {bytes(data[-300:])!r}")
    return elapsed, len(data), len(head) + len(body), bytes(data)


def body_of(response: bytes) -> bytes:
    """The response's body (HTTP/1.1 chunked transfer coding undone)."""
    head, _, rest = response.partition(b"\r\n\r\n")
    if b"chunked" not in head.lower():
        return rest
    out = bytearray()
    while rest:
        size_line, _, rest = rest.partition(b"\r\n")
        size = int(size_line.split(b";")[0], 16)
        if size == 0:
            break
        out += rest[:size]
        rest = rest[size + 2:]
    return bytes(out)


def check(kind: str, response: bytes, state: dict) -> None:
    """The run's events make the state the backend made (every item done up to CHANGES)."""
    expected = copy.deepcopy(state)
    for i in range(CHANGES):
        expected["items"][i]["done"] = True
    lines = body_of(response).decode().split("\n")
    events = [json.loads(line[6:]) for line in lines if line.startswith("data: ")]
    held = copy.deepcopy(state)
    for event in events:
        if event["type"] == "STATE_SNAPSHOT":
            held = event["snapshot"]
        elif event["type"] == "STATE_DELTA":
            for op in event["delta"]:
                held["items"][int(op["path"].split("/")[2])]["done"] = op["value"]
    if held != expected:
        raise RuntimeError(f"{kind}: the events do not make the backend's state")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve()
        return 0
    try:
        import onedoor_door_agui  # noqa: F401
    except ImportError as exc:
        print(json.dumps({"name": "agui_state", "skipped": f"onedoor-door-agui is not installed ({exc})"}))
        return 0
    rounds = args.rounds or (2 if args.quick else 7)
    state = big_state()
    proc, port = start_server(__file__, "--serve", what="AG-UI state server")
    kinds = {"no-state": None, "deltas": state, "snapshots": state}
    seen: dict[str, list[tuple[float, int, int]]] = {k: [] for k in kinds}
    try:
        for kind, sent in kinds.items():  # warm up, and check what each run carries
            _, _, _, response = run(port, kind, sent)
            if sent is not None:
                check(kind, response, sent)
        for round_ in range(rounds):
            for kind, sent in kinds.items():
                seconds, received, request, _ = run(port, kind, sent)
                seen[kind].append((seconds, received, request))
                print(f"round {round_ + 1} {kind:<10} {seconds * 1000:8.1f} ms {received:>11,} bytes out {request:>9,} in",
                      file=sys.stderr)
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
    ms = {k: statistics.median(s for s, _, _ in v) * 1000 for k, v in seen.items()}
    out_bytes = {k: v[0][1] for k, v in seen.items()}
    in_bytes = {k: v[0][2] for k, v in seen.items()}
    metrics: dict[str, float] = {"state_bytes": len(json.dumps(state, separators=(",", ":"))), "changes": CHANGES,
                                 "rounds": rounds}
    for kind in kinds:
        key = kind.replace("-", "_")
        metrics[f"{key}_ms"] = round(ms[kind], 2)
        metrics[f"{key}_bytes_out"] = out_bytes[kind]
        metrics[f"{key}_bytes_in"] = in_bytes[kind]
    ratios = {
        "deltas_vs_no_state_time": {"value": round(ms["deltas"] / ms["no-state"], 2), "target": "<= 3"},
        "snapshots_vs_deltas_time": {"value": round(ms["snapshots"] / ms["deltas"], 2), "target": ">= 1"},
        "snapshots_vs_deltas_bytes": {"value": round(out_bytes["snapshots"] / out_bytes["deltas"], 1), "target": ">= 10"},
    }
    print(json.dumps({"name": "agui_state", "metrics": metrics, "ratios": ratios}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
