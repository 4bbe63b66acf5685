"""REST door content benchmark (#25): a 5 MB image through POST /rest/chat to the backend,
against the same bytes as a plain JSON string to a bare endpoint, in the same server and run.

One server process (uvicorn, the HTTP transport's guarded app, ``max_body_bytes`` 32 MiB):

``/rest/chat``  the REST door on the scripted backend: the image as a part in JSON (base64,
                decoded and checked by the door and the kernel), or uploaded as
                ``multipart/form-data`` (raw bytes); the backend gets it as a Part and
                answers what it received
``/bare``       a raw ASGI endpoint behind the same guard: the body is decoded as JSON
                once by the guard (as for the door), the endpoint takes the string's length
                and answers a small JSON

A client process (this one) sends pre-encoded bodies over one keep-alive connection,
interleaving the three, and measures each round trip; the server resets its peak RSS
(``/proc/self/clear_refs``) before each request and reports the peak over what it held
before, so each figure is one request's own memory. Targets: door time <= 2x bare, door
peak RSS <= 4x the payload.

    python bench/bench_rest_content.py            # ~20 s
    python bench/bench_rest_content.py --quick    # ~8 s
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import statistics
import subprocess
import sys
import time
import uuid

PAYLOAD = 5 * 1024 * 1024
PNG = b"\x89PNG\r\n\x1a\n"


def _rss_kib(field: str) -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


# --------------------------------------------------------------------------- server side
def serve() -> None:
    import asyncio

    import uvicorn
    from onedoor.composition import AsgiMount, ServeContext
    from onedoor.kernel import Limits
    from onedoor.testing import scripted_kernel
    from onedoor_door_rest import RestDoor, RestOptions
    from onedoor_transport_http import HttpOptions
    from onedoor_transport_http.app import build_app
    from onedoor_transport_http.body import read_json

    kernel = scripted_kernel(Limits(max_concurrent_runs=4), reasoning=False, tool=False)
    ctx = ServeContext(kernel=kernel, options={"rest": RestOptions()})

    async def bare(scope, receive, send):  # type: ignore[no-untyped-def]
        if scope["type"] != "http":
            return
        body = await read_json(scope, receive)  # the guard decoded it, as for the door
        reply = json.dumps({"length": len(body.get("message", ""))}).encode()
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": reply})

    class Door:
        def __init__(self, name: str, mount: AsgiMount) -> None:
            self.name, self.mount = name, mount

        def asgi_mount(self, ctx: object) -> AsgiMount:
            return self.mount

    rest = RestDoor().asgi_mount(ctx)
    app, _ = build_app([Door("rest", rest), Door("bare", AsgiMount(app=bare, prefix="/bare"))], ctx,
                       HttpOptions(port=0, max_body_bytes=32 * 1024 * 1024))

    async def measured(scope, receive, send):  # type: ignore[no-untyped-def]
        """Each request's peak RSS over what the process held before it, on the response."""
        if scope["type"] != "http" or scope["path"] == "/rss":
            if scope["type"] == "http":
                value = json.dumps(last).encode()
                await send({"type": "http.response.start", "status": 200, "headers": []})
                await send({"type": "http.response.body", "body": value})
                return
            await app(scope, receive, send)
            return
        with open("/proc/self/clear_refs", "w") as refs:
            refs.write("5")  # the peak RSS starts again from now
        before = _rss_kib("VmRSS")
        await app(scope, receive, send)
        last["peak_kib"] = _rss_kib("VmHWM") - before

    last: dict[str, int] = {}
    config = uvicorn.Config(measured, host="127.0.0.1", port=0, log_level="warning", lifespan="on", access_log=False)
    server = uvicorn.Server(config)

    async def main() -> None:
        task = asyncio.create_task(server.serve())
        while not server.started:
            await asyncio.sleep(0.02)
        print(f"PORT {server.servers[0].sockets[0].getsockname()[1]}", flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)  # until the parent closes stdin
        server.should_exit = True
        await task

    asyncio.run(main())


# --------------------------------------------------------------------------- client side
def bodies() -> dict[str, tuple[str, bytes, str]]:
    """(path, body, content type) of each case, encoded once."""
    image = PNG + os.urandom(PAYLOAD - len(PNG))
    encoded = base64.b64encode(image).decode()
    parts = [{"type": "text", "text": "what is this?"},
             {"type": "image", "media_type": "image/png", "data": encoded, "name": "big.png"}]
    boundary = uuid.uuid4().hex
    upload = (f'--{boundary}\r\nContent-Disposition: form-data; name="message"\r\n\r\nwhat is this?\r\n'
              f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.png"\r\n'
              "Content-Type: image/png\r\n\r\n").encode() + image + f"\r\n--{boundary}--\r\n".encode()
    return {
        "bare": ("/bare", json.dumps({"message": encoded}).encode(), "application/json"),
        "rest_json": ("/rest/chat", json.dumps({"message": parts}).encode(), "application/json"),
        "rest_upload": ("/rest/chat", upload, f"multipart/form-data; boundary={boundary}"),
    }


def measure(base: str, rounds: int) -> dict[str, float]:
    import httpx

    cases = bodies()
    times: dict[str, list[float]] = {name: [] for name in cases}
    peaks: dict[str, list[int]] = {name: [] for name in cases}
    with httpx.Client(base_url=base, timeout=120) as client:
        for _ in range(rounds + 1):  # the first round warms up
            for name, (path, body, kind) in cases.items():
                started = time.perf_counter()
                response = client.post(path, content=body, headers={"content-type": kind})
                elapsed = time.perf_counter() - started
                response.raise_for_status()
                if name != "bare" and not response.json()["reply"].startswith("Received: 1 image (image/png, 5,242,880"):
                    raise SystemExit(f"{name}: the backend did not get the image: {response.text[:200]}")
                times[name].append(elapsed)
                peaks[name].append(client.get("/rss").json()["peak_kib"])
    out: dict[str, float] = {"payload_bytes": PAYLOAD}
    for name in cases:
        out[f"{name}_ms"] = round(statistics.median(times[name][1:]) * 1000, 1)
        out[f"{name}_peak_rss_mib"] = round(max(peaks[name][1:]) / 1024, 1)
        out[f"{name}_body_bytes"] = len(cases[name][1])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve()
        return
    if not os.path.exists("/proc/self/clear_refs"):
        print(json.dumps({"name": "rest_content", "skipped": "needs Linux /proc (peak RSS per request)"}))
        return
    proc = subprocess.Popen([sys.executable, __file__, "--serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if not line.startswith("PORT "):
            raise SystemExit(f"bench server did not start: {line!r}")
        metrics = measure(f"http://127.0.0.1:{int(line.split()[1])}", 3 if args.quick else 9)
    finally:
        if proc.stdin:
            proc.stdin.close()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
    payload_mib = PAYLOAD / (1024 * 1024)
    ratios = {
        "json_time_vs_bare": {"value": round(metrics["rest_json_ms"] / metrics["bare_ms"], 3), "target": "<= 2"},
        "upload_time_vs_bare": {"value": round(metrics["rest_upload_ms"] / metrics["bare_ms"], 3), "target": "<= 2"},
        "json_peak_rss_vs_payload": {"value": round(metrics["rest_json_peak_rss_mib"] / payload_mib, 3),
                                     "target": "<= 4"},
        "upload_peak_rss_vs_payload": {"value": round(metrics["rest_upload_peak_rss_mib"] / payload_mib, 3),
                                       "target": "<= 4"},
        "bare_peak_rss_vs_payload": {"value": round(metrics["bare_peak_rss_mib"] / payload_mib, 3), "target": "info"},
    }
    print(json.dumps({"name": "rest_content", "metrics": metrics, "ratios": ratios}))


if __name__ == "__main__":
    main()
