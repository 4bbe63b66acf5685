"""Content benchmark (#25): a 5 MB image through each door to the backend, against the same
bytes as a plain JSON string to a bare endpoint, in the same server and run.

One HTTP server process (uvicorn, the HTTP transport's guarded app, ``max_body_bytes``
32 MiB, the scripted backend, which answers what it received: "Received: 1 image
(image/png, 5,242,880 bytes, …)"; every reply is checked for it), each door with its
protocol's own way to carry an image:

``rest_json``    ``POST /rest/chat``, the image as a part (base64 ``data``)
``rest_upload``  ``POST /rest/chat`` as ``multipart/form-data`` (raw bytes)
``agui``         ``POST /agui/`` RunAgentInput, a user message with an AG-UI 1.0 image part
                 (``source: {type: "data", value: base64, mimeType}``), SSE back
``mcp``          ``tools/call ask`` with an ``attachments`` image block (raw JSON-RPC over
                 streamable HTTP, after ``initialize``), SSE back
``a2a``          JSON-RPC ``SendMessage`` (A2A 1.0) with a ``raw`` part
``bare``         a raw ASGI endpoint behind the same guard: the body decoded as JSON once by
                 the guard (as for the doors); it answers the string's length

The server resets its peak RSS (``/proc/self/clear_refs``) before each request and reports
the peak over what it held before, so each figure is one request's own memory. Requests go
over one keep-alive connection, interleaved round by round.

ACP is stdio: ``onedoor acp`` (a child process, ``--store none``) gets ``session/prompt``
with an ACP image block on a new session each round, against a bare stdio child that
decodes the same line as JSON and answers its length; the peak RSS of each child is its
``VmHWM`` after ``clear_refs``, over its ``VmRSS`` before.

Targets: each door's time <= 2x its bare, its peak RSS <= 4x the payload.

    python bench/bench_content.py            # ~30 s
    python bench/bench_content.py --quick    # ~12 s
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any, Callable

PAYLOAD = 5 * 1024 * 1024
PNG = b"\x89PNG\r\n\x1a\n"
RECEIVED = "Received: 1 image (image/png, 5,242,880 bytes"  # what the scripted backend says it got
BIG = 32 * 1024 * 1024
# glibc's first mmap threshold, kept fixed: big blocks are unmapped when freed, so RSS is what is held (else they
# stay resident and the next request's peak hides in them)
MALLOC = {"MALLOC_MMAP_THRESHOLD_": "131072"}
FRESH = "f" * 32  # a run or message id, made new before each request (AG-UI refuses a run id used again)
MCP_HEADERS = {"accept": "application/json, text/event-stream", "mcp-protocol-version": "2025-11-25"}


def _rss_kib(field: str, pid: str = "self") -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def _clear_peak(pid: str = "self") -> None:
    with open(f"/proc/{pid}/clear_refs", "w") as refs:
        refs.write("5")  # the peak RSS starts again from now


def _stop(proc: subprocess.Popen) -> None:
    """Close the child's stdin (its cue to exit) and wait for it, a bounded time."""
    if proc.stdin:
        proc.stdin.close()
    try:
        proc.wait(15)
    except subprocess.TimeoutExpired:
        proc.kill()


# --------------------------------------------------------------------------- server side
def serve() -> None:
    import asyncio

    import uvicorn
    from onedoor.composition import AsgiMount, ServeContext
    from onedoor.kernel import Limits
    from onedoor.testing import scripted_kernel
    from onedoor_door_a2a import A2aDoor, A2aOptions
    from onedoor_door_agui import AguiDoor, AguiOptions
    from onedoor_door_mcp import McpDoor
    from onedoor_door_mcp.options import McpOptions
    from onedoor_door_rest import RestDoor, RestOptions
    from onedoor_transport_http import HttpOptions
    from onedoor_transport_http.app import build_app
    from onedoor_transport_http.body import read_json

    kernel = scripted_kernel(Limits(max_concurrent_runs=4), reasoning=False, tool=False)
    options = {"rest": RestOptions(), "agui": AguiOptions(keepalive=0, page=False), "a2a": A2aOptions(),
               "mcp": McpOptions(max_body_bytes=BIG)}
    ctx = ServeContext(kernel=kernel, options=options, door_names=list(options), transport_name="http")

    async def bare(scope, receive, send):  # type: ignore[no-untyped-def]
        if scope["type"] != "http":
            return
        body = await read_json(scope, receive)  # the guard decoded it, as for the doors
        reply = json.dumps({"length": len(body.get("message", ""))}).encode()
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": reply})

    class Bare:
        name = "bare"

        def asgi_mount(self, ctx: object) -> AsgiMount:
            return AsgiMount(app=bare, prefix="/bare")

    app, _ = build_app([RestDoor(), AguiDoor(), McpDoor(), A2aDoor(), Bare()], ctx,
                       HttpOptions(port=0, max_body_bytes=BIG))

    async def measured(scope, receive, send):  # type: ignore[no-untyped-def]
        """Each request's peak RSS over what the process held before it, for /rss to tell."""
        if scope["type"] != "http" or scope["path"] == "/rss":
            if scope["type"] == "http":
                await send({"type": "http.response.start", "status": 200, "headers": []})
                await send({"type": "http.response.body", "body": json.dumps(last).encode()})
                return
            await app(scope, receive, send)
            return
        _clear_peak()
        before = _rss_kib("VmRSS")
        await app(scope, receive, send)
        last["peak_kib"] = _rss_kib("VmHWM") - before
        last["done"] += 1  # a client may read /rss before an app returns (MCP's ends after its response)

    last: dict[str, int] = {"done": 0}
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


def bare_stdio() -> None:
    """The stdio baseline: each line decoded as JSON once (as the ACP door's channel does), its length answered."""
    from onedoor.wire import decode_json

    for line in sys.stdin.buffer:
        message = decode_json(line)
        sys.stdout.write(json.dumps({"id": message["id"], "length": len(message["params"]["data"])}) + "\n")
        sys.stdout.flush()


# --------------------------------------------------------------------------- client side
def _sse_data(text: str) -> list[Any]:
    return [json.loads(line[5:]) for line in text.splitlines() if line.startswith("data:")]


def _texts(value: Any) -> str:
    """Every ``text`` string in a JSON value, joined (a reply's text, wherever the protocol puts it)."""
    if isinstance(value, dict):
        return "".join(v if k == "text" and isinstance(v, str) else _texts(v) for k, v in value.items())
    return "".join(_texts(v) for v in value) if isinstance(value, list) else ""


def _agui_reply(text: str) -> str:
    return "".join(e["delta"] for e in _sse_data(text) if e.get("type") == "TEXT_MESSAGE_CONTENT")


def _mcp_reply(text: str) -> str:
    (result,) = [m["result"] for m in _sse_data(text) if m.get("id") == 2]
    return "" if result.get("isError") else _texts(result.get("content"))


Case = tuple[str, bytes, dict[str, str], Callable[[str], str]]


def cases(image: bytes, encoded: str) -> dict[str, Case]:
    """(path, body, headers, the reply's text from the response) of each HTTP case, encoded once."""
    asked = "what is this?"
    boundary = uuid.uuid4().hex
    upload = (f'--{boundary}\r\nContent-Disposition: form-data; name="message"\r\n\r\n{asked}\r\n'
              f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.png"\r\n'
              "Content-Type: image/png\r\n\r\n").encode() + image + f"\r\n--{boundary}--\r\n".encode()
    rest = [{"type": "text", "text": asked}, {"type": "image", "media_type": "image/png", "data": encoded, "name": "big.png"}]
    agui = {"threadId": uuid.uuid4().hex, "runId": FRESH, "tools": [], "context": [], "forwardedProps": {},
            "messages": [{"id": "u1", "role": "user", "content": [
                {"type": "text", "text": asked},
                {"type": "image", "source": {"type": "data", "value": encoded, "mimeType": "image/png"},
                 "metadata": {"filename": "big.png"}}]}]}
    mcp = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "ask", "arguments": {
        "message": asked, "attachments": [{"type": "image", "data": encoded, "mimeType": "image/png", "name": "big.png"}]}}}
    a2a = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {
        "messageId": FRESH, "role": "ROLE_USER",
        "parts": [{"text": asked}, {"raw": encoded, "mediaType": "image/png", "filename": "big.png"}]}}}
    as_json = {"content-type": "application/json"}
    return {
        "bare": ("/bare", json.dumps({"message": encoded}).encode(), as_json,
                 lambda text: RECEIVED if json.loads(text)["length"] == len(encoded) else text),
        "rest_json": ("/rest/chat", json.dumps({"message": rest}).encode(), as_json,
                      lambda text: json.loads(text)["reply"]),
        "rest_upload": ("/rest/chat", upload, {"content-type": f"multipart/form-data; boundary={boundary}"},
                        lambda text: json.loads(text)["reply"]),
        "agui": ("/agui/", json.dumps(agui).encode(), {**as_json, "accept": "text/event-stream"}, _agui_reply),
        "mcp": ("/mcp/", json.dumps(mcp).encode(), {**as_json, **MCP_HEADERS}, _mcp_reply),
        "a2a": ("/a2a/", json.dumps(a2a).encode(), {**as_json, "a2a-version": "1.0"},
                lambda text: _texts(json.loads(text)["result"])),
    }


def _mcp_session(client: Any) -> str:
    hello = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}}
    answer = client.post("/mcp/", json=hello, headers=MCP_HEADERS)
    answer.raise_for_status()
    session = answer.headers["mcp-session-id"]
    done = client.post("/mcp/", json={"jsonrpc": "2.0", "method": "notifications/initialized"},
                       headers={**MCP_HEADERS, "mcp-session-id": session})
    done.raise_for_status()
    return session


def _peak_of(client: Any, requests: int) -> int:
    """The peak RSS of the last request, once the server has measured all ``requests`` (bounded wait)."""
    deadline = time.monotonic() + 30
    while True:
        got = client.get("/rss").json()
        if got["done"] >= requests:
            return int(got["peak_kib"])
        if time.monotonic() > deadline:
            raise SystemExit(f"the server measured {got['done']} requests of {requests}")
        time.sleep(0.005)


def measure_http(base: str, rounds: int, image: bytes, encoded: str) -> dict[str, list[float]]:
    import httpx

    out: dict[str, list[float]] = {}
    with httpx.Client(base_url=base, timeout=120) as client:
        session = _mcp_session(client)
        requests = 2  # initialize, notifications/initialized
        todo = cases(image, encoded)
        todo["mcp"][2]["mcp-session-id"] = session
        for round_ in range(rounds + 1):  # the first round warms up
            for name, (path, body, headers, reply_of) in todo.items():
                body = body.replace(FRESH.encode(), uuid.uuid4().hex.encode(), 1)  # near the start: found at once
                started = time.perf_counter()
                response = client.post(path, content=body, headers=headers)
                elapsed = time.perf_counter() - started
                if response.status_code != 200 or not reply_of(response.text).startswith(RECEIVED):
                    raise SystemExit(f"{name}: the backend did not get the image: {response.status_code} "
                                     f"{response.text[:300]}")
                requests += 1
                peak = _peak_of(client, requests)
                if round_:
                    out.setdefault(f"{name}_s", []).append(elapsed)
                    out.setdefault(f"{name}_peak_kib", []).append(peak)
                    out[f"{name}_reply_bytes"] = [len(response.content)]
                    out[f"{name}_body_bytes"] = [len(body)]
    return out


class StdioChild:
    """A child speaking newline-delimited JSON-RPC on its stdin and stdout."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
        self.next_id = 0

    def call(self, method: str, params: dict[str, Any], seen: list[Any] | None = None) -> Any:
        """Send one request; the answer with its id (notifications before it go to ``seen``)."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.next_id += 1
        request = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        self.proc.stdin.write(json.dumps(request).encode() + b"\n")
        self.proc.stdin.flush()
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise SystemExit(f"{method}: the child closed its stdout")
            message = json.loads(line)
            if message.get("id") == self.next_id and "method" not in message:
                if "error" in message:
                    raise SystemExit(f"{method}: {message['error']}")
                return message.get("result", message)
            if seen is not None:
                seen.append(message)

    def close(self) -> None:
        _stop(self.proc)


def _timed(child: StdioChild, method: str, params: dict[str, Any], seen: list[Any] | None = None) -> tuple[float, int]:
    pid = str(child.proc.pid)
    _clear_peak(pid)
    before = _rss_kib("VmRSS", pid)
    started = time.perf_counter()
    answer = child.call(method, params, seen)
    elapsed, peak = time.perf_counter() - started, _rss_kib("VmHWM", pid) - before
    if method == "bare" and answer.get("length") != len(params["data"]):
        raise SystemExit(f"bare stdio: got {answer}")
    return elapsed, peak


def measure_acp(rounds: int, encoded: str) -> dict[str, list[float]]:
    exe = Path(sys.executable).with_name("onedoor")
    door_argv = [str(exe) if exe.exists() else sys.executable, *([] if exe.exists() else ["-m", "onedoor"]),
                 "acp", "--store", "none", "-o", "tool=false", "-o", "reasoning=false"]
    out: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        env = {**{k: v for k, v in os.environ.items() if not k.startswith("ONEDOOR_")}, "ONEDOOR_DATA_DIR": tmp, **MALLOC}
        door = StdioChild(door_argv, env)
        bare = StdioChild([sys.executable, __file__, "--bare-stdio"], env)
        try:
            door.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
            prompt = [{"type": "text", "text": "what is this?"}, {"type": "image", "data": encoded, "mimeType": "image/png"}]
            for round_ in range(rounds + 1):
                session = door.call("session/new", {"cwd": tmp, "mcpServers": []})["sessionId"]
                seen: list[Any] = []
                door_s, door_kib = _timed(door, "session/prompt", {"sessionId": session, "prompt": prompt}, seen)
                reply = "".join(m["params"]["update"]["content"].get("text", "") for m in seen
                                if m.get("method") == "session/update"
                                and m["params"]["update"].get("sessionUpdate") == "agent_message_chunk")
                if not reply.startswith(RECEIVED):
                    raise SystemExit(f"acp: the backend did not get the image: {reply[:300]!r}")
                bare_s, bare_kib = _timed(bare, "bare", {"data": encoded})
                if round_:
                    for key, value in (("acp_s", door_s), ("acp_peak_kib", door_kib), ("bare_stdio_s", bare_s),
                                       ("bare_stdio_peak_kib", bare_kib)):
                        out.setdefault(key, []).append(value)
        finally:
            door.close()
            bare.close()
    return out


HTTP_DOORS = ("rest_json", "rest_upload", "agui", "mcp", "a2a")


def summarize(raw: dict[str, list[float]]) -> tuple[dict[str, Any], dict[str, Any]]:
    payload_mib = PAYLOAD / (1024 * 1024)
    metrics: dict[str, Any] = {"payload_bytes": PAYLOAD}
    for key, values in raw.items():
        if key.endswith("_s"):
            metrics[key[:-2] + "_ms"] = round(statistics.median(values) * 1000, 1)
        elif key.endswith("_peak_kib"):
            metrics[key[: -len("_kib")] + "_rss_mib"] = round(max(values) / 1024, 1)
        else:
            metrics[key] = int(values[0])
    ratios: dict[str, Any] = {}
    for door, bare in [*((d, "bare") for d in HTTP_DOORS), ("acp", "bare_stdio")]:
        ratios[f"{door}_time_vs_bare"] = {"value": round(metrics[f"{door}_ms"] / metrics[f"{bare}_ms"], 3), "target": "<= 2"}
    for name in (*HTTP_DOORS, "acp", "bare", "bare_stdio"):
        ratios[f"{name}_peak_rss_vs_payload"] = {"value": round(metrics[f"{name}_peak_rss_mib"] / payload_mib, 3),
                                                 "target": "info" if name.startswith("bare") else "<= 4"}
    return metrics, ratios


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--bare-stdio", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve or args.bare_stdio:
        (serve if args.serve else bare_stdio)()
        return
    if not os.path.exists("/proc/self/clear_refs"):
        print(json.dumps({"name": "content", "skipped": "needs Linux /proc (peak RSS per request)"}))
        return
    rounds = 3 if args.quick else 9
    image = PNG + os.urandom(PAYLOAD - len(PNG))
    encoded = base64.b64encode(image).decode()
    proc = subprocess.Popen([sys.executable, __file__, "--serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True, env={**os.environ, "PYTHONUNBUFFERED": "1", **MALLOC})
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if not line.startswith("PORT "):
            raise SystemExit(f"bench server did not start: {line!r}")
        raw = measure_http(f"http://127.0.0.1:{int(line.split()[1])}", rounds, image, encoded)
    finally:
        _stop(proc)
    raw.update(measure_acp(rounds, encoded))
    metrics, ratios = summarize(raw)
    print(json.dumps({"name": "content", "metrics": metrics, "ratios": ratios}))


if __name__ == "__main__":
    main()
