"""AG-UI capacity: how many concurrent paced streams one server core carries.

Every stream is a model writing tokens: one TEXT_MESSAGE_CONTENT every 50 ms (20 events/s).
A server "carries" N streams when, with N streams open at once, the p99 gap between
consecutive deltas of a stream stays at or below 250 ms and no stream fails. The server
process runs pinned to one core (``taskset -c 0``), the load client to the other
(``taskset -c 1``), and they talk over 127.0.0.1 only.

Contenders, each served by uvicorn with its defaults, one after the other on the same core:

``onedoor``      ``onedoor serve --door agui`` (the public CLI), scripted backend as an async
                 agent paced by ``scripted.delay=0.05``
``pydantic-ai``  pydantic-ai's AG-UI adapter (``AGUIAdapter.dispatch_request``) over a
                 FunctionModel that yields one piece every 50 ms (skipped if not installed)
``bare``         a raw ASGI app, no framework: reads the RunAgentInput, writes AG-UI SSE
                 frames with one ``json.dumps`` per event and the same 50 ms pacing, stops on
                 disconnect
``onedoor-nostore`` the same with ``--store none`` (no threads kept; the journal still on):
                 what threads add beside the journal (full mode, or ``--contenders``)
``onedoor-sync`` (only with ``--contenders``) the scripted backend on worker threads

The search per contender: double the stream count from a start until a step fails, then
bisect between the last pass and the first failure to a set resolution. A step opens N
streams spread over a ramp, lets them settle, measures every gap that ends inside a fixed
window, then drops the connections and waits for the server to go idle. Steps, step length,
stream count and total time are all bounded. The load client is asyncio Protocols that
count frames in the raw bytes, so its own cost stays small; its event-loop lag and CPU are
reported next to the server's CPU so a reader can tell a client-bound step.

Other processes on the server's core distort a step: each step reports the share of the core
they took (run-queue wait of the server, from /proc/PID/schedstat), and a step that fails
while they took more than a quarter is run once more. The server CPU per delta delivered
(``*_server_us_per_delta_at_capacity``) hardly moves with such noise; it is reported too.

Targets: onedoor >= 10 x pydantic-ai's adapter and >= 0.7 x the bare endpoint (capacity in
streams); its server CPU per delta <= 1.43 x the bare endpoint's (the same 0.7, and a figure
that hardly moves when other processes share the core). The last stdout line is one JSON object for bench/run.py.

    python bench/bench_capacity.py            # full: about 6 minutes
    python bench/bench_capacity.py --quick    # under 2 minutes, coarser resolution
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import resource
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import asdict, dataclass, field

HOST = "127.0.0.1"
PACE = 0.05  # seconds between deltas: 20 events/s
GAP_LIMIT = 0.25  # the p99 gap a stream may show
PIECE = "word "
MARKER = b'"TEXT_MESSAGE_CONTENT"'
ENDINGS = (b'"RUN_FINISHED"', b'"RUN_ERROR"')
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
CONTENDED = 0.25  # share of the server's core taken by other processes that makes a failed step run again
STEP_FIELDS = ("streams", "ok", "gap_p99_ms", "server_cpu", "server_core_taken", "server_us_per_delta",
               "client_lag_p99_ms", "seconds", "discarded")
FAILURE_FIELDS = ("streams", "gap_p99_ms", "failed_streams", "failure_examples", "server_cpu", "server_core_taken")


@dataclass(frozen=True)
class Plan:
    """How one mode searches: step lengths (seconds), where to start, when to stop."""

    ramp: float  # streams open spread over this long
    warm: float  # then this long before the window opens
    coarse_window: float  # measuring window while doubling
    fine_window: float  # measuring window while bisecting
    start: int
    cap: int  # never more streams than this
    resolution: float  # bisect until (fail - pass) <= resolution * pass
    max_steps: int
    budget: float  # no step starts after this many seconds of searching

    def step_seconds(self, window: float) -> float:
        return self.ramp + self.warm + window + 1.0


QUICK = Plan(ramp=0.5, warm=0.5, coarse_window=2.0, fine_window=2.5, start=128, cap=4096, resolution=0.25,
             max_steps=9, budget=28)
FULL = Plan(ramp=2.0, warm=1.0, coarse_window=5.0, fine_window=10.0, start=128, cap=8192, resolution=0.1,
            max_steps=12, budget=125)


# -- the servers under test ---------------------------------------------------------------------
def count_from_prompt(prompt: str) -> int:
    """``/long N …`` asks for N deltas (the onedoor scripted backend's own directive)."""
    match = re.match(r"\s*/long (\d+)", prompt)
    return int(match.group(1)) if match else 10


def sse(event: dict) -> bytes:
    return b"data: " + json.dumps(event, separators=(",", ":")).encode() + b"\n\n"


def bare_app():
    """The floor: AG-UI-shaped SSE written straight to the ASGI ``send``, paced, nothing else."""

    async def stream(send, thread_id: str, run_id: str, count: int) -> None:
        async def event(fields: dict, more: bool = True) -> None:
            await send({"type": "http.response.body", "body": sse(fields), "more_body": more})

        headers = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await event({"type": "RUN_STARTED", "threadId": thread_id, "runId": run_id})
        await event({"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "assistant"})
        for _ in range(count):
            await event({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": PIECE})
            await asyncio.sleep(PACE)
        await event({"type": "TEXT_MESSAGE_END", "messageId": "m1"})
        await event({"type": "RUN_FINISHED", "threadId": thread_id, "runId": run_id}, more=False)

    async def app(scope, receive, send):
        if scope["type"] != "http":
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        run = json.loads(body)
        count = count_from_prompt(str(run["messages"][-1]["content"]))
        task = asyncio.ensure_future(stream(send, run["threadId"], run["runId"], count))

        async def stop_on_disconnect() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass
            task.cancel()

        watcher = asyncio.ensure_future(stop_on_disconnect())
        try:
            await task
        except asyncio.CancelledError:
            if not task.cancelled():
                raise
        finally:
            watcher.cancel()

    return app


def pydantic_ai_app():
    """pydantic-ai's own AG-UI adapter over a FunctionModel paced like the others."""
    from pydantic_ai import Agent
    from pydantic_ai.models.function import FunctionModel
    from pydantic_ai.ui.ag_ui import AGUIAdapter
    from starlette.applications import Starlette
    from starlette.routing import Route

    async def paced(messages, info):
        for _ in range(count_from_prompt(str(messages[-1].parts[-1].content))):
            yield PIECE
            await asyncio.sleep(PACE)

    agent = Agent(FunctionModel(stream_function=paced))

    async def endpoint(request):
        return await AGUIAdapter.dispatch_request(request, agent=agent)

    return Starlette(routes=[Route("/agui/", endpoint, methods=["POST"])])


def serve_here(kind: str) -> None:
    """``--serve KIND``: run one of the in-file apps on uvicorn, printing the bound port."""
    import uvicorn

    app = bare_app() if kind == "bare" else pydantic_ai_app()
    sock = socket.socket()
    sock.bind((HOST, 0))
    print(f"listening on http://{HOST}:{sock.getsockname()[1]}", flush=True)
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on")
    uvicorn.Server(config).run(sockets=[sock])


def server_command(kind: str, plan: Plan) -> list[str]:
    if kind.startswith("onedoor"):
        mode = "sync" if kind == "onedoor-sync" else "async"
        store = ["--store", "none"] if kind == "onedoor-nostore" else []
        options = {
            "scripted.mode": mode, "scripted.delay": PACE, "scripted.reply": PIECE.strip(),
            "scripted.reasoning": "false", "scripted.tool": "false",
            "limits.max_concurrent_runs": plan.cap + 64,
        }
        flags = [arg for name, value in options.items() for arg in ("-o", f"{name}={value}")]
        return [sys.executable, "-m", "onedoor", "serve", "--door", "agui", "--port", "0", "-b", "scripted", *store, *flags]
    return [sys.executable, os.path.abspath(__file__), "--serve", kind]


class Server:
    """A server process pinned to one core; its port read from its start-up line."""

    def __init__(self, kind: str, plan: Plan, core: str) -> None:
        self.errors = tempfile.TemporaryFile()
        self.data = tempfile.TemporaryDirectory(prefix="onedoor-capacity-")  # the default store's file, thrown away
        env = {**os.environ, "PYTHONUNBUFFERED": "1", "ONEDOOR_DATA_DIR": self.data.name}
        self.proc = subprocess.Popen(
            ["taskset", "-c", core, *server_command(kind, plan)],
            stdout=subprocess.PIPE, stderr=self.errors, text=True, env=env, cwd=tempfile.gettempdir(),
        )
        self.port = 0
        found = threading.Event()

        def read_stdout() -> None:  # read the port, then keep draining so the pipe never fills
            assert self.proc.stdout is not None
            for line in self.proc.stdout:
                match = re.search(r"listening on http://127\.0\.0\.1:(\d+)", line)
                if match and not self.port:
                    self.port = int(match.group(1))
                    found.set()
            found.set()

        threading.Thread(target=read_stdout, daemon=True).start()
        if not found.wait(60) or not self.port:
            self.stop()
            self.errors.seek(0)
            raise RuntimeError(f"{kind} server did not start: {self.errors.read().decode(errors='replace')[-500:]}")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)
        self.data.cleanup()


# -- the load client (runs in its own process, pinned to the other core) --------------------------
def cpu_ticks(pid: int) -> int:
    """User + system CPU of a process (all its threads), in clock ticks."""
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def runqueue_wait(pid: int) -> float:
    """Seconds the process's main thread has spent runnable but waiting for a CPU: on a pinned
    server this is time other processes took from its core (noise, not the server's cost)."""
    try:
        with open(f"/proc/{pid}/schedstat") as fh:
            return int(fh.read().split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return float("nan")


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def run_input(prompt: str) -> bytes:
    return json.dumps({
        "threadId": uuid.uuid4().hex, "runId": uuid.uuid4().hex,
        "messages": [{"id": uuid.uuid4().hex, "role": "user", "content": prompt}],
        "tools": [], "context": [], "state": {}, "forwardedProps": {},
    }).encode()


def http_post(port: int, path: str, body: bytes) -> bytes:
    return (
        f"POST {path} HTTP/1.1\r\nHost: {HOST}:{port}\r\nContent-Type: application/json\r\n"
        f"Accept: text/event-stream\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    ).encode() + body


@dataclass
class Window:
    start: float
    end: float


class PacedStream(asyncio.Protocol):
    """One AG-UI stream: notes when each TEXT_MESSAGE_CONTENT arrives; keeps the gaps that end
    inside the measuring window. Frames are counted in the raw bytes (the HTTP chunk framing
    never contains the marker), so a marker split across two reads is counted once."""

    def __init__(self, request: bytes, window: Window) -> None:
        self.request = request
        self.window = window
        self.transport: asyncio.Transport | None = None
        self.head = b""
        self.status = 0
        self.tail = b""
        self.last: float | None = None
        self.gaps: list[float] = []
        self.in_window = 0
        self.ended = False
        self.closed_at: float | None = None
        self.error = ""

    def connection_made(self, transport) -> None:
        self.transport = transport
        transport.write(self.request)

    def data_received(self, data: bytes) -> None:
        if not self.status:
            self.head += data
            if b"\r\n" not in self.head:
                return
            line = self.head.split(b"\r\n", 1)[0].split()
            self.status = int(line[1]) if len(line) > 1 and line[1].isdigit() else -1
            data, self.head = self.head, b""
            if self.status != 200:
                self.error = f"status {self.status}"
                if self.transport is not None:
                    self.transport.close()
                return
        chunk = self.tail + data
        self.tail = chunk[1 - len(MARKER):]
        count = chunk.count(MARKER)
        if count:
            now = time.monotonic()
            if self.window.start <= now <= self.window.end:
                if self.last is not None:
                    self.gaps.append(now - self.last)
                    if count > 1:
                        self.gaps.extend([0.0] * (count - 1))
                self.in_window += count
            self.last = now
        if not self.ended and any(end in chunk for end in ENDINGS):
            self.ended = True

    def connection_lost(self, exc) -> None:
        self.closed_at = time.monotonic()
        if exc is not None and not self.error:
            self.error = f"{type(exc).__name__}: {exc}"

    def problem(self) -> str:
        """Why this stream does not count as carried through the window ('' when it does)."""
        if self.error:
            return self.error
        if self.status != 200:
            return "no response"
        if self.closed_at is not None and self.closed_at < self.window.end:
            return "stream ended before the window closed"
        if not self.in_window:
            return "no delta during the window"
        return ""

    def open_gap(self) -> float:
        """The gap still open at the window's end (a stalled stream shows here)."""
        return self.window.end - self.last if self.last is not None else self.window.end - self.window.start


async def wait_idle(server_pid: int, limit: float) -> float:
    """Wait until the server uses < 10% of a core over 0.3 s (or `limit` seconds pass)."""
    started = time.monotonic()
    while time.monotonic() - started < limit:
        before = cpu_ticks(server_pid)
        await asyncio.sleep(0.3)
        if (cpu_ticks(server_pid) - before) / CLOCK_TICKS < 0.03:
            break
    return time.monotonic() - started


async def loop_lag(window: Window, into: list[float]) -> None:
    """The client's own event-loop lag during the window (a busy client delays its timestamps)."""
    while time.monotonic() < window.end:
        asked = time.monotonic()
        await asyncio.sleep(0.01)
        if time.monotonic() >= window.start:
            into.append(time.monotonic() - asked - 0.01)


async def run_step(port: int, path: str, streams: int, plan: Plan, window_seconds: float, server_pid: int) -> dict:
    """Open `streams` paced streams, measure the window, drop them, wait for the server to idle."""
    loop = asyncio.get_running_loop()
    started = time.monotonic()
    window = Window(started + plan.ramp + plan.warm, started + plan.ramp + plan.warm + window_seconds)
    deltas = int((window.end - started + 1.0) / PACE)  # every stream outlasts the window
    readers = [PacedStream(http_post(port, path, run_input(f"/long {deltas} capacity")), window) for _ in range(streams)]
    lags: list[float] = []
    lag_task = asyncio.ensure_future(loop_lag(window, lags))

    async def connect(reader: PacedStream) -> None:
        try:
            await asyncio.wait_for(loop.create_connection(lambda: reader, HOST, port), window.end - time.monotonic())
        except (OSError, TimeoutError) as exc:
            reader.error = f"connect: {type(exc).__name__}: {exc}"

    connecting = []
    for index, reader in enumerate(readers):
        await asyncio.sleep(max(0.0, started + index * plan.ramp / streams - time.monotonic()))
        connecting.append(asyncio.ensure_future(connect(reader)))
    await asyncio.sleep(max(0.0, window.start - time.monotonic()))
    server_before, client_before = cpu_ticks(server_pid), resource.getrusage(resource.RUSAGE_SELF)
    waited_before = runqueue_wait(server_pid)
    await asyncio.sleep(max(0.0, window.end - time.monotonic()))
    server_cpu = (cpu_ticks(server_pid) - server_before) / CLOCK_TICKS / window_seconds
    server_waited = (runqueue_wait(server_pid) - waited_before) / window_seconds
    usage = resource.getrusage(resource.RUSAGE_SELF)
    client_cpu = (usage.ru_utime + usage.ru_stime - client_before.ru_utime - client_before.ru_stime) / window_seconds
    await lag_task
    gaps = [gap for reader in readers for gap in reader.gaps]
    gaps += [gap for reader in readers if (gap := reader.open_gap()) > GAP_LIMIT]
    problems = [p for reader in readers if (p := reader.problem())]
    for reader in readers:
        if reader.transport is not None:
            reader.transport.abort()
    for task in connecting:
        task.cancel()
    await asyncio.gather(*connecting, return_exceptions=True)
    settle = await wait_idle(server_pid, plan.step_seconds(window_seconds))
    p99 = percentile(gaps, 0.99)
    delivered = sum(reader.in_window for reader in readers)
    return {
        "streams": streams,
        "ok": not problems and bool(gaps) and p99 <= GAP_LIMIT,
        "gap_p50_ms": round(percentile(gaps, 0.50) * 1000, 1),
        "gap_p99_ms": round(p99 * 1000, 1),
        "gap_max_ms": round(max(gaps, default=float("nan")) * 1000, 1),
        "gaps": len(gaps),
        "failed_streams": len(problems),
        "failure_examples": sorted(set(problems))[:3],
        "server_cpu": round(server_cpu, 2),
        "server_core_taken": round(server_waited, 2),
        "server_us_per_delta": round(server_cpu * window_seconds / max(1, delivered) * 1e6, 1),
        "client_cpu": round(client_cpu, 2),
        "client_lag_p99_ms": round(percentile(lags, 0.99) * 1000, 1),
        "window_s": window_seconds,
        "settle_s": round(settle, 1),
        "seconds": round(time.monotonic() - started, 1),
    }


async def warm_up(port: int, path: str, server_pid: int) -> None:
    """A few short streams first, so imports and first-request caches are not measured."""
    plan = Plan(ramp=0.1, warm=0.2, coarse_window=0.5, fine_window=0.5, start=4, cap=4, resolution=1, max_steps=1, budget=5)
    await run_step(port, path, 4, plan, 0.5, server_pid)


@dataclass
class Search:
    """Doubling, then bisection; `passed` / `failed` hold the bracketing steps."""

    plan: Plan
    steps: list[dict] = field(default_factory=list)
    passed: dict | None = None
    failed: dict | None = None

    def record(self, result: dict) -> None:
        self.steps.append(result)
        if result["ok"]:
            if self.passed is None or result["streams"] > self.passed["streams"]:
                self.passed = result
        elif self.failed is None or result["streams"] < self.failed["streams"]:
            self.failed = result

    def next_count(self) -> int | None:
        """The next stream count to try, or None when the search is done."""
        low = self.passed["streams"] if self.passed else 0
        if self.failed is None:
            if low >= self.plan.cap:
                return None
            return min(self.plan.cap, low * 2) if low else self.plan.start
        high = self.failed["streams"]
        if high - low <= max(1, self.plan.resolution * low):
            return None
        return (low + high) // 2

    def summary(self) -> dict:
        return {
            "streams": self.passed["streams"] if self.passed else 0,
            "at_cap": bool(self.passed and self.passed["streams"] >= self.plan.cap),
            "at_capacity": self.passed,
            "first_failure": self.failed,
            "steps": [{k: s[k] for k in STEP_FIELDS if k in s} for s in self.steps],
        }


def describe(label: str, result: dict) -> str:
    failures = f" [{'; '.join(result['failure_examples'])}]" if result["failed_streams"] else ""
    return (
        f"{label:<12} {result['streams']:>5} streams: p99 {result['gap_p99_ms']:>7} ms, "
        f"failed {result['failed_streams']}, server cpu {result['server_cpu']:.2f} "
        f"(core taken by others {result['server_core_taken']:.2f}, {result['server_us_per_delta']} us/delta), client cpu {result['client_cpu']:.2f}, "
        f"client lag p99 {result['client_lag_p99_ms']} ms -> {'ok' if result['ok'] else 'FAIL'} "
        f"({result['seconds']} s){failures}"
    )


async def find_capacity(port: int, path: str, server_pid: int, plan: Plan, label: str) -> dict:
    """The bounded search. A step that fails while other processes took more than a quarter of
    the server's core is run once more, and only the second run counts (both are listed)."""
    await warm_up(port, path, server_pid)
    search = Search(plan)
    started = time.monotonic()
    while len(search.steps) < plan.max_steps:
        count = search.next_count()
        if count is None:
            break
        window = plan.coarse_window if search.failed is None else plan.fine_window
        if time.monotonic() - started + plan.step_seconds(window) > plan.budget:
            print(f"{label}: time budget reached, stopping the search", file=sys.stderr)
            break
        result = await run_step(port, path, count, plan, window, server_pid)
        print(describe(label, result), file=sys.stderr, flush=True)
        contended = result["server_core_taken"] > CONTENDED
        if not result["ok"] and contended and time.monotonic() - started + plan.step_seconds(window) <= plan.budget:
            search.steps.append({**result, "discarded": "core contended, run again"})
            result = await run_step(port, path, count, plan, window, server_pid)
            print(describe(label, result) + " (run again)", file=sys.stderr, flush=True)
        search.record(result)
    return search.summary()


def client_main(args: argparse.Namespace) -> int:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    plan = QUICK if args.quick else FULL
    summary = asyncio.run(find_capacity(args.port, "/agui/", args.server_pid, plan, args.client))
    print(json.dumps(summary))
    return 0


# -- orchestration ------------------------------------------------------------------------------------
def measure(kind: str, plan: Plan, quick: bool, server_core: str, client_core: str) -> dict:
    """One contender: its server on one core, the searching client on the other."""
    started = time.monotonic()
    server = Server(kind, plan, server_core)
    try:
        cmd = ["taskset", "-c", client_core, sys.executable, os.path.abspath(__file__), "--client", kind,
               "--port", str(server.port), "--server-pid", str(server.proc.pid)] + (["--quick"] if quick else [])
        client = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, timeout=plan.budget + 90)
    finally:
        server.stop()
    lines = [line for line in client.stdout.splitlines() if line.startswith("{")]
    if client.returncode != 0 or not lines:
        raise RuntimeError(f"{kind}: the load client exited {client.returncode}")
    summary = json.loads(lines[-1])
    summary["seconds"] = round(time.monotonic() - started, 1)
    return summary


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="coarser search, shorter steps (under 2 minutes)")
    parser.add_argument("--contenders", default="",
                        help="comma-separated: onedoor, onedoor-nostore, onedoor-sync, pydantic-ai, bare "
                             "(default: onedoor, pydantic-ai, bare; in full mode onedoor-nostore too)")
    parser.add_argument("--server-core", default="0")
    parser.add_argument("--client-core", default="1")
    parser.add_argument("--serve", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--client", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--server-pid", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve_here(args.serve)
        return 0
    if args.client:
        return client_main(args)
    try:
        import onedoor_door_agui  # noqa: F401
        import onedoor_transport_http  # noqa: F401
    except ImportError as exc:
        print(json.dumps({"name": "capacity", "skipped": f"onedoor-door-agui is not installed ({exc})"}))
        return 0
    if len(os.sched_getaffinity(0)) < 2:
        print(json.dumps({"name": "capacity", "skipped": "needs two cores: one for the server, one for the clients"}))
        return 0
    contenders = args.contenders or ("onedoor,pydantic-ai,bare" if args.quick else "onedoor,onedoor-nostore,pydantic-ai,bare")
    kinds = [k for k in contenders.split(",") if k]
    if "pydantic-ai" in kinds:
        try:
            import pydantic_ai.ui.ag_ui  # noqa: F401
        except ImportError:
            print("pydantic-ai[ag-ui] is not installed: skipping that baseline", file=sys.stderr)
            kinds.remove("pydantic-ai")
    plan = QUICK if args.quick else FULL
    started = time.monotonic()
    try:
        found = {kind: measure(kind, plan, args.quick, args.server_core, args.client_core) for kind in kinds}
    except (RuntimeError, subprocess.TimeoutExpired) as exc:
        print(f"bench_capacity: error: {exc}", file=sys.stderr)
        return 1
    metrics: dict = {"pace_ms": PACE * 1000, "gap_p99_limit_ms": GAP_LIMIT * 1000, "plan": asdict(plan)}
    for kind, summary in found.items():
        metrics[f"{kind}_streams"] = summary["streams"]
        at = summary["at_capacity"] or {}
        metrics[f"{kind}_gap_p99_ms_at_capacity"] = at.get("gap_p99_ms")
        metrics[f"{kind}_server_cpu_at_capacity"] = at.get("server_cpu")
        metrics[f"{kind}_core_taken_at_capacity"] = at.get("server_core_taken")
        metrics[f"{kind}_server_us_per_delta_at_capacity"] = at.get("server_us_per_delta")
        metrics[f"{kind}_first_failure"] = {k: (summary["first_failure"] or {}).get(k) for k in FAILURE_FIELDS}
        if summary["at_cap"]:
            metrics[f"{kind}_at_cap"] = True  # a lower bound: the search never failed
        metrics[f"{kind}_seconds"] = summary["seconds"]
        metrics[f"{kind}_steps"] = summary["steps"]
    metrics["seconds"] = round(time.monotonic() - started, 1)
    for kind in ("pydantic-ai", "bare"):  # for information: CPU per delta hardly moves when others share the core
        ours_us = metrics.get("onedoor_server_us_per_delta_at_capacity")
        theirs_us = metrics.get(f"{kind}_server_us_per_delta_at_capacity")
        if ours_us and theirs_us:
            metrics[f"onedoor_vs_{kind.replace('-', '_')}_cpu_per_delta"] = round(ours_us / theirs_us, 3)
    ratios = {}
    ours = found.get("onedoor", {}).get("streams")
    for kind, key, target in (("pydantic-ai", "onedoor_vs_pydantic_ai", ">= 10"), ("bare", "onedoor_vs_bare", ">= 0.7")):
        if ours is not None and kind in found:
            theirs = found[kind]["streams"]
            ratios[key] = {"value": round(ours / theirs, 3) if theirs else None, "target": target}
    if metrics.get("onedoor_vs_bare_cpu_per_delta"):
        ratios["onedoor_vs_bare_cpu_per_delta"] = {"value": metrics["onedoor_vs_bare_cpu_per_delta"], "target": "<= 1.43"}
    print(json.dumps({"name": "capacity", "metrics": metrics, "ratios": ratios}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
