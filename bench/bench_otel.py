"""OpenTelemetry plugin benchmark: the same REST server with the plugin on (exporting spans
and metrics to a local OTLP/HTTP receiver) and off, side by side in one run.

Pairs of `onedoor serve --door rest` processes, identical but for the environment: **off**
has no telemetry settings (the plugin is installed and dormant: no hook, no import),
**on** exports over OTLP/HTTP to a receiver in a process of its own (spans in batches every
0.5 s, metrics every 5 s; the Prometheus route mounted too). Each measurement below has
its own pair, so the spans one phase leaves to export do not weigh on the next. The
client (this process, raw sockets, no HTTP library in between) alternates between the
two sides round by round:

1. events/s of one streamed 50,000-delta run (``/long 50000``; 20,000 with ``--quick``),
   per second of wall time (the median of the rounds' on/off ratios) and per second of the
   server process's own CPU over all rounds (much less sensitive to what else the machine runs);
2. the p99 gap between events across 32 concurrent streams of 200 deltas paced by the
   backend at 1 ms (``-o delay=0.001``, a model writing tokens): how much the plugin's work
   at each run's start, tool call and end delays the other streams;
3. short runs per second: 400 ``POST /rest/chat`` (a run with a tool call: the plugin's
   three spans and the metrics each; FastAPI's own telemetry leaves out the requests
   onedoor traces), 8 at a time;
4. start-up: wall time of ``onedoor run hello`` with the plugin blocked (as if not
   installed: ``ONEDOOR_BLOCK_PLUGINS=otel``), installed and dormant, and exporting.

Ratios (on against off; the median of each round's pair for wall-clock figures): events/s
(wall and server CPU) and p99 gap (off/on, so higher is better), targets >=
0.9; short runs/s (informational: the fixed cost per run). Start-up CPU time:
dormant/blocked (target <= 1.05), exporting/blocked (info), and its wall time (info).

    python bench/bench_otel.py            # ~2 minutes
    python bench/bench_otel.py --quick    # ~40 s
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HOST = "127.0.0.1"
_LISTENING = re.compile(r"listening on http://127\.0\.0\.1:(\d+)")
# Seconds between phases: the spans a phase leaves are exported (every 0.5 s) before the
# next phase is measured, so one server's exporting does not take the CPU from the next.
SETTLE = 1.5
BASE_ENV = {k: v for k, v in os.environ.items()
            if not k.startswith(("OTEL_", "ONEDOOR_LOG_", "ONEDOOR_METRICS")) and k != "PYTHONDONTWRITEBYTECODE"}


# --------------------------------------------------------------------------- the receiver
class Receiver(BaseHTTPRequestHandler):
    """Accepts OTLP/HTTP exports (an empty protobuf answer is a valid Export*ServiceResponse)."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.server.counts[self.path] = self.server.counts.get(self.path, 0) + 1  # type: ignore[attr-defined]
        self.server.counts["bytes"] = self.server.counts.get("bytes", 0) + len(body)  # type: ignore[attr-defined]
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self) -> None:  # the counts, for the report
        body = json.dumps(self.server.counts).encode()  # type: ignore[attr-defined]
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def receive() -> None:
    """The receiver's own process (``--receive``): prints ``PORT n``, serves until stdin closes."""
    server = ThreadingHTTPServer((HOST, 0), Receiver)
    server.daemon_threads = True
    server.counts = {}  # type: ignore[attr-defined]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print(f"PORT {server.server_address[1]}", flush=True)
    sys.stdin.read()


def start_receiver() -> tuple[subprocess.Popen, str]:
    """The receiver in a process of its own, so that decoding exports takes nothing from the client."""
    proc = subprocess.Popen([sys.executable, __file__, "--receive"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True, env={**BASE_ENV, "PYTHONUNBUFFERED": "1"})
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line.startswith("PORT "):
        raise SystemExit("the receiver did not start")
    return proc, f"http://{HOST}:{int(line.split()[1])}"


def received(endpoint: str) -> dict[str, int]:
    import urllib.request

    with urllib.request.urlopen(endpoint + "/", timeout=10) as reply:
        return json.loads(reply.read())


def telemetry_env(endpoint: str) -> dict[str, str]:
    return {**BASE_ENV, "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_BSP_SCHEDULE_DELAY": "500",
            "OTEL_METRIC_EXPORT_INTERVAL": "5000", "OTEL_METRICS_EXPORTER": "otlp,prometheus"}


# --------------------------------------------------------------------------- servers
class Server:
    def __init__(self, env: dict[str, str], *options: str) -> None:
        args = [sys.executable, "-m", "onedoor", "serve", "--door", "rest", "--port", "0",
                "-o", "max_concurrent_runs=256", *options]
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                                     env={**env, "PYTHONUNBUFFERED": "1"})
        deadline = time.monotonic() + 60
        self.port = 0
        assert self.proc.stdout is not None
        while time.monotonic() < deadline and not self.port:
            line = self.proc.stdout.readline()
            if not line:
                break
            match = _LISTENING.search(line)
            if match:
                self.port = int(match.group(1))
        if not self.port:
            self.proc.kill()
            raise SystemExit("a bench server did not start")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()


# --------------------------------------------------------------------------- the client
async def stream(port: int, message: str) -> list[float]:
    """POST /rest/chat/stream; the arrival time of every SSE event (one per ``\\n\\n``)."""
    body = json.dumps({"message": message}).encode()
    head = (f"POST /rest/chat/stream HTTP/1.1\r\nHost: {HOST}:{port}\r\nContent-Type: application/json\r\n"
            f"Accept: text/event-stream\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode()
    reader, writer = await asyncio.open_connection(HOST, port)
    writer.write(head + body)
    times: list[float] = []
    tail = b""
    try:
        while True:
            chunk = await reader.read(1 << 16)
            if not chunk:
                break
            now = time.perf_counter()
            data = tail + chunk
            times.extend([now] * data.count(b"\n\n"))
            tail = data[-1:]
    finally:
        writer.close()
    return times[1:]  # the first "\n\n" ends the HTTP head


async def post_chat(port: int, message: str) -> None:
    body = json.dumps({"message": message}).encode()
    head = (f"POST /rest/chat HTTP/1.1\r\nHost: {HOST}:{port}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode()
    reader, writer = await asyncio.open_connection(HOST, port)
    writer.write(head + body)
    data = await reader.read()
    writer.close()
    if b" 200 " not in data[:20]:
        raise SystemExit(f"a chat failed: {data[:200]!r}")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time a process has used (Linux /proc)."""
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def long_run_rate(port: int, deltas: int, pid: int | None = None) -> tuple[float, int, float]:
    """(events per second, events, the server's CPU seconds) of one long streamed run."""
    used = cpu_seconds(pid) if pid else 0.0
    started = time.perf_counter()
    times = await stream(port, f"/long {deltas} bench")
    cpu = cpu_seconds(pid) - used if pid else 0.0
    return len(times) / (times[-1] - started), len(times), cpu


async def p99_gap(port: int, streams: int, deltas: int) -> float:
    runs = await asyncio.gather(*(stream(port, f"/long {deltas} paced {i}") for i in range(streams)))
    gaps = [b - a for times in runs for a, b in zip(times, times[1:])]
    return statistics.quantiles(gaps, n=100)[98]


async def short_runs_rate(port: int, runs: int, concurrency: int) -> float:
    gate = asyncio.Semaphore(concurrency)

    async def one(index: int) -> None:
        async with gate:
            await post_chat(port, f"short run {index}")

    started = time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(runs)))
    return runs / (time.perf_counter() - started)


def startup(reps: int, endpoint: str) -> dict[str, float]:
    """CPU seconds (the process's own, as bench_kernel measures start-up) and wall seconds
    of ``onedoor run hello``, medians."""
    cases = {
        "blocked": {**BASE_ENV, "ONEDOOR_BLOCK_PLUGINS": "otel"},
        "dormant": dict(BASE_ENV),
        "exporting": telemetry_env(endpoint),
    }
    cmd = [sys.executable, "-m", "onedoor", "run", "hello"]
    for env in cases.values():  # warm the caches
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, check=True)
    cpu: dict[str, list[float]] = {name: [] for name in cases}
    wall: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(reps):
        for name, env in cases.items():  # interleaved, so drift hits each alike
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            started = time.perf_counter()
            subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, check=True)
            wall[name].append(time.perf_counter() - started)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu[name].append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    out = {f"{name}_cpu": statistics.median(values) for name, values in cpu.items()}
    out.update({f"{name}_wall": statistics.median(values) for name, values in wall.items()})
    return out


async def measure(ports: dict[str, dict[str, int]], pids: dict[str, int], rounds: int, short: int, deltas: int) -> dict:
    """Each figure per round for both sides (the order alternates round by round), then
    medians, and the median of each round's on/off ratio (drift between rounds cancels).
    ``ports[phase][side]``: every phase has its own pair of servers, so that one phase's
    exports do not land in the next one's measurement."""
    sides = ("off", "on")
    seen: dict[str, dict[str, list[float]]] = {
        side: {"events_per_s": [], "p99_gap_ms": [], "short_runs_per_s": []} for side in sides}
    used = {side: [0, 0.0] for side in sides}  # events and server CPU seconds over every round (ticks add up)
    for side in sides:  # warm up
        await long_run_rate(ports["long"][side], 2000)
        await p99_gap(ports["paced"][side], 4, 50)
        await short_runs_rate(ports["short"][side], 20, 4)
    for index in range(rounds):
        order = sides if index % 2 == 0 else sides[::-1]
        for side in order:
            rate, events, cpu = await long_run_rate(ports["long"][side], deltas, pids[side])
            seen[side]["events_per_s"].append(rate)
            used[side][0] += events
            used[side][1] += cpu
        await asyncio.sleep(SETTLE)
        for side in order:
            seen[side]["p99_gap_ms"].append(await p99_gap(ports["paced"][side], 32, 200) * 1000)
        await asyncio.sleep(SETTLE)
        for side in order:
            seen[side]["short_runs_per_s"].append(await short_runs_rate(ports["short"][side], short, 8))
        await asyncio.sleep(SETTLE)
    figures = {side: {key: statistics.median(values) for key, values in by_key.items()} for side, by_key in seen.items()}
    pairs = {key: statistics.median(on / off for on, off in zip(seen["on"][key], seen["off"][key]))
             for key in seen["on"]}
    for side in sides:
        figures[side]["events_per_cpu_s"] = used[side][0] / used[side][1] if used[side][1] else 0.0
    off_cpu = figures["off"]["events_per_cpu_s"]
    pairs["events_per_cpu_s"] = figures["on"]["events_per_cpu_s"] / off_cpu if off_cpu else 0.0
    return {"figures": figures, "pairs": pairs}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds")
    parser.add_argument("--receive", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.receive:
        receive()
        return
    rounds, short, reps, deltas = (3, 150, 9, 20_000) if args.quick else (9, 400, 21, 50_000)
    receiver, endpoint = start_receiver()
    envs = {"off": dict(BASE_ENV), "on": telemetry_env(endpoint)}
    options = {"long": (), "paced": ("-o", "delay=0.001", "-o", "reasoning=false"), "short": ()}
    servers = {phase: {side: Server(env, *extra) for side, env in envs.items()} for phase, extra in options.items()}
    try:
        ports = {phase: {side: server.port for side, server in pair.items()} for phase, pair in servers.items()}
        pids = {side: server.proc.pid for side, server in servers["long"].items()}
        measured = asyncio.run(measure(ports, pids, rounds, short, deltas))
    finally:
        for pair in servers.values():
            for server in pair.values():
                server.stop()
    started = startup(reps, endpoint)
    counts = received(endpoint)
    if receiver.stdin:
        receiver.stdin.close()
    receiver.wait(10)
    figures, pairs = measured["figures"], measured["pairs"]
    metrics = {f"{side}_{key}": round(value, 3) for side, values in figures.items() for key, value in values.items()}
    metrics.update({f"startup_{name}_ms": round(seconds * 1000, 1) for name, seconds in started.items()})
    metrics.update({"exports_traces": counts.get("/v1/traces", 0), "exports_metrics": counts.get("/v1/metrics", 0),
                    "exported_kb": round(counts.get("bytes", 0) / 1024, 1)})
    ratios = {
        "events_per_s_on_vs_off": {"value": round(pairs["events_per_s"], 3), "target": ">= 0.9"},
        # the same per second of the server's own CPU (all rounds): what the plugin costs, whatever else runs
        "events_per_cpu_s_on_vs_off": {"value": round(pairs["events_per_cpu_s"], 3), "target": ">= 0.9"},
        "p99_gap_off_vs_on": {"value": round(1 / pairs["p99_gap_ms"], 3), "target": ">= 0.9"},
        # informational: a run that does almost nothing, so the telemetry's fixed cost per run
        # (the SDK's spans and metric records) shows
        "short_runs_per_s_on_vs_off": {"value": round(pairs["short_runs_per_s"], 3), "target": "info"},
        "startup_cpu_dormant_vs_blocked": {"value": round(started["dormant_cpu"] / started["blocked_cpu"], 3),
                                           "target": "<= 1.05"},
        "startup_cpu_exporting_vs_blocked": {"value": round(started["exporting_cpu"] / started["blocked_cpu"], 3),
                                             "target": "info"},
        "startup_wall_exporting_vs_blocked": {"value": round(started["exporting_wall"] / started["blocked_wall"], 3),
                                              "target": "info"},
    }
    print(json.dumps({"name": "otel", "metrics": metrics, "ratios": ratios}))


if __name__ == "__main__":
    main()
