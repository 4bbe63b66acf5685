"""REST door benchmark: SSE events/s through POST /rest/chat/stream vs a bare endpoint.

One server process (uvicorn, the HTTP transport's guarded app) hosts three mounts:

``/sync/chat/stream``   the REST door on a kernel with the sync scripted backend
``/async/chat/stream``  the REST door on a kernel with the async scripted backend
``/bare``               a raw ASGI endpoint that streams the *same* pre-encoded SSE bytes
                        (the events of one run, encoded once at start-up), one ``send``
                        per event, with no kernel and no backend

A separate client process (this one) reads each stream with httpx and counts events
(``\\n\\n`` boundaries), so client and server do not share a GIL. ``/bare/?batched`` sends
the same bytes pre-joined 512 events a chunk (informational: the transport's ceiling). Metrics: events/s for
a 20,000-delta run (median of N), time to first event (median over M short runs).
Ratios: door/bare events/s (target >= 0.6, sync and async); door/bare time to first
event (informational target <= 3).

    python bench/bench_rest.py            # ~30 s
    python bench/bench_rest.py --quick    # ~10 s
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

DELTAS = 20_000
SHORT = {"bare": "/bare/?short", "bare_batched": "/bare/?short"}
MESSAGE = "/long 20000 benchmark"


# --------------------------------------------------------------------------- server side
def serve(deltas: int) -> None:
    import uvicorn
    from onedoor.composition import AsgiMount, ServeContext
    from onedoor.kernel import Limits
    from onedoor.testing import scripted_kernel
    from onedoor_door_rest import RestDoor, RestOptions
    from onedoor_door_rest.sse import SSE_HEADERS, encode_event
    from onedoor_transport_http import HttpOptions
    from onedoor_transport_http.app import build_app

    limits = Limits(max_concurrent_runs=8)
    kernels = {mode: scripted_kernel(limits, mode=mode, reasoning=False, tool=False) for mode in ("sync", "async")}

    async def encoded_run(message: str) -> list[bytes]:
        from onedoor.testing import collect

        return [encode_event(e) for e in await collect(kernels["sync"], message)]

    long_events = asyncio.run(encoded_run(f"/long {deltas} benchmark"))
    short_events = asyncio.run(encoded_run("hello"))

    async def bare(scope, receive, send):  # type: ignore[no-untyped-def]
        if scope["type"] != "http":
            return
        while (await receive()).get("more_body"):
            pass
        query = scope.get("query_string", b"")
        events = short_events if query == b"short" else long_events
        if query == b"batched":  # pre-joined chunks of 512 events: the transport's ceiling
            events = [b"".join(long_events[i : i + 512]) for i in range(0, len(long_events), 512)]
        await send({"type": "http.response.start", "status": 200, "headers": SSE_HEADERS})
        for chunk in events:
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    class Door:
        def __init__(self, name: str, mount: AsgiMount) -> None:
            self.name = name
            self.mount = mount

        def asgi_mount(self, ctx: object) -> AsgiMount:
            return self.mount

    doors = [
        Door(mode, RestDoor().asgi_mount(ServeContext(kernel=kernels[mode], options={"rest": RestOptions(prefix=f"/{mode}")})))
        for mode in ("sync", "async")
    ]
    doors.append(Door("bare", AsgiMount(app=bare, prefix="/bare")))
    ctx = ServeContext(kernel=kernels["sync"])
    app, _ = build_app(doors, ctx, HttpOptions(port=0))
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
async def read_stream(client, url: str, message: str) -> tuple[int, float, float]:  # type: ignore[no-untyped-def]
    """(events, seconds to first event, total seconds) for one streamed request."""
    start = time.perf_counter()
    first = 0.0
    count = 0
    tail = b""
    async with client.stream("POST", url, json={"message": message}) as response:
        response.raise_for_status()
        async for chunk in response.aiter_raw():
            data = tail + chunk
            found = data.count(b"\n\n")
            if found and not count:
                first = time.perf_counter() - start
            count += found
            tail = data[-1:]
    return count, first, time.perf_counter() - start


async def measure(base: str, rounds: int, ttfe_rounds: int) -> dict[str, float]:
    import httpx

    out: dict[str, float] = {}
    async with httpx.AsyncClient(base_url=base, timeout=60, headers={"content-type": "application/json"}) as client:
        targets = {
            "bare": "/bare/",
            "bare_batched": "/bare/?batched",
            "sync": "/sync/chat/stream",
            "async": "/async/chat/stream",
        }
        for name, url in targets.items():  # warm up
            await read_stream(client, SHORT.get(name, url), "hello")
        rates: dict[str, list[float]] = {name: [] for name in targets}
        counts: dict[str, int] = {}
        for _ in range(rounds):  # interleaved, so drift hits every target alike
            for name, url in targets.items():
                events, _first, total = await read_stream(client, url, MESSAGE)
                counts[name] = events
                rates[name].append(events / total)
        firsts: dict[str, list[float]] = {name: [] for name in targets if name != "bare_batched"}
        for _ in range(ttfe_rounds):
            for name in firsts:
                url = targets[name]
                _events, first, _total = await read_stream(client, SHORT.get(name, url), "hello")
                firsts[name].append(first)
    for name in targets:
        out[f"{name}_events_per_s"] = round(statistics.median(rates[name]), 1)
        out[f"{name}_events"] = counts[name]
        if name in firsts:
            out[f"{name}_ttfe_ms"] = round(statistics.median(firsts[name]) * 1000, 3)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds (under 15 s)")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--deltas", type=int, default=DELTAS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.deltas)
        return
    rounds, ttfe_rounds = (3, 20) if args.quick else (9, 60)
    proc = subprocess.Popen(
        [sys.executable, __file__, "--serve", "--deltas", str(DELTAS)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if not line.startswith("PORT "):
            raise SystemExit(f"bench server did not start: {line!r}")
        base = f"http://127.0.0.1:{int(line.split()[1])}"
        metrics = asyncio.run(measure(base, rounds, ttfe_rounds))
    finally:
        if proc.stdin:
            proc.stdin.close()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
    bare = metrics["bare_events_per_s"]
    ratios = {
        "sync_events_per_s_vs_bare": {"value": round(metrics["sync_events_per_s"] / bare, 3), "target": ">= 0.6"},
        "async_events_per_s_vs_bare": {"value": round(metrics["async_events_per_s"] / bare, 3), "target": ">= 0.6"},
        # informational: the door against the same bytes pre-joined 512 events a chunk
        "sync_events_per_s_vs_bare_batched": {
            "value": round(metrics["sync_events_per_s"] / metrics["bare_batched_events_per_s"], 3), "target": "info"},
        "sync_ttfe_vs_bare": {"value": round(metrics["sync_ttfe_ms"] / metrics["bare_ttfe_ms"], 3), "target": "<= 3"},
        "async_ttfe_vs_bare": {"value": round(metrics["async_ttfe_ms"] / metrics["bare_ttfe_ms"], 3), "target": "<= 3"},
    }
    print(json.dumps({"name": "rest", "metrics": metrics, "ratios": ratios}))


if __name__ == "__main__":
    main()
