"""Load, faults under load, and a soak, against one real server process on 127.0.0.1.

1. Async backend: N concurrent streaming runs (one delta every 50 ms, 40 deltas), half
   over REST SSE and half over AG-UI. 10% of clients disconnect mid-stream; 5% of runs
   fail in the backend (`/fail`). Reported: errors (target 0), p50/p99 gap between
   deltas (target p99 <= 250 ms), peak RSS and memory per stream, peak threads, and the
   server's own count of cancelled / failed / finished runs (a hook plugin logs them).
2. Sync backend: M concurrent runs with the run limit set to M - 20: exactly 20 are
   refused with 429 and Retry-After, the rest complete; threads used are reported.
3. Soak: moderate load for a bounded time; RSS and thread-count slopes.

The client is a minimal HTTP/1.1 + SSE reader on raw asyncio streams, so the client's
own cost does not drown the server's. Every loop is bounded in count and time; only
127.0.0.1 is contacted. Prints one JSON object on its last line.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

REST_PATH = "/rest/chat/stream"
AGUI_PATH = "/agui/"


def rest_body(message: str) -> dict:
    return {"message": message}


def agui_body(message: str) -> dict:
    return {
        "threadId": uuid.uuid4().hex,
        "runId": uuid.uuid4().hex,
        "messages": [{"id": uuid.uuid4().hex, "role": "user", "content": message}],
        "tools": [],
        "context": [],
        "state": {},
        "forwardedProps": {},
    }


@dataclass
class Outcome:
    status: int = 0
    gaps: list[float] = field(default_factory=list)
    deltas: int = 0
    terminal: str = ""
    error: str = ""
    disconnected: bool = False


async def stream_once(port: int, path: str, body: dict, disconnect_after: int | None, timeout: float) -> Outcome:
    """POST, then read the SSE body, recording when each text delta arrives."""
    out = Outcome()
    payload = json.dumps(body).encode()
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), timeout)
    except (TimeoutError, OSError) as exc:
        out.error = f"connect: {exc}"
        return out
    try:
        writer.write(
            f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
            f"Accept: text/event-stream\r\nContent-Length: {len(payload)}\r\nConnection: close\r\n\r\n".encode()
            + payload
        )
        await writer.drain()
        deadline = time.monotonic() + timeout
        status_line = await asyncio.wait_for(reader.readline(), timeout)
        out.status = int(status_line.split()[1]) if status_line else 0
        chunked = False
        while True:
            line = await asyncio.wait_for(reader.readline(), timeout)
            if line in (b"\r\n", b""):
                break
            if line.lower().startswith(b"transfer-encoding:") and b"chunked" in line.lower():
                chunked = True
        if out.status != 200:
            return out
        buffer = b""
        last = None
        while time.monotonic() < deadline:
            if chunked:
                size_line = await asyncio.wait_for(reader.readline(), timeout)
                size = int(size_line.strip() or b"0", 16)
                if size == 0:
                    break
                chunk = await asyncio.wait_for(reader.readexactly(size + 2), timeout)
                buffer += chunk[:-2]
            else:
                chunk = await asyncio.wait_for(reader.read(65536), timeout)
                if not chunk:
                    break
                buffer += chunk
            while b"\n\n" in buffer:
                frame, buffer = buffer.split(b"\n\n", 1)
                for raw in frame.split(b"\n"):
                    if not raw.startswith(b"data:"):
                        continue
                    data = raw[5:].strip()
                    kind = _kind(data)
                    if kind in ("text_delta", "TEXT_MESSAGE_CONTENT"):
                        now = time.monotonic()
                        if last is not None:
                            out.gaps.append(now - last)
                        last = now
                        out.deltas += 1
                        if disconnect_after is not None and out.deltas >= disconnect_after:
                            out.disconnected = True
                            return out
                    elif kind in ("run_finished", "run_failed", "RUN_FINISHED", "RUN_ERROR"):
                        out.terminal = kind
            if out.terminal:
                break
        return out
    except (TimeoutError, OSError, asyncio.IncompleteReadError, ValueError) as exc:
        out.error = f"{type(exc).__name__}: {exc}"
        return out
    finally:
        writer.close()


_TYPE = re.compile(rb'"type"\s*:\s*"([A-Za-z_]+)"')


def _kind(data: bytes) -> str:
    match = _TYPE.search(data)
    return match.group(1).decode() if match else ""


def proc_status(pid: int) -> tuple[int, int]:
    """(RSS in KiB, thread count) of a process."""
    rss = threads = 0
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1])
            elif line.startswith("Threads:"):
                threads = int(line.split()[1])
    return rss, threads


class Server:
    def __init__(self, args: list[str], run_log: Path) -> None:
        env = {**os.environ, "ONEDOOR_BENCH_RUN_LOG": str(run_log), "PYTHONUNBUFFERED": "1"}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        cmd = [sys.executable, "-m", "onedoor", "serve", "--door", "rest", "--door", "agui", "--port", "0", *args]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
        self.port = 0
        deadline = time.monotonic() + 30
        assert self.proc.stdout is not None
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                break
            match = re.search(r"listening on http://127\.0\.0\.1:(\d+)", line)
            if match:
                self.port = int(match.group(1))
                break
        if not self.port:
            self.proc.kill()
            raise RuntimeError("the server did not start")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()


async def sample(pid: int, stop: asyncio.Event, into: list[tuple[float, int, int]], every: float = 0.2) -> None:
    while not stop.is_set():
        try:
            rss, threads = proc_status(pid)
        except OSError:
            return
        into.append((time.monotonic(), rss, threads))
        try:
            await asyncio.wait_for(stop.wait(), every)
        except TimeoutError:
            pass


def read_log(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def phase_async(clients: int) -> dict:
    log = Path(tempfile.mkstemp(prefix="onedoor-load-", suffix=".jsonl")[1])
    server = Server(
        ["-b", "scripted", "-o", "scripted.mode=async", "-o", "scripted.delay=0.05", "-o", "scripted.deltas=40",
         "-o", "scripted.reasoning=false", "-o", "scripted.tool=false",
         "-o", f"limits.max_concurrent_runs={clients + 50}"],
        log,
    )
    try:
        base_rss, base_threads = proc_status(server.proc.pid)
        samples: list[tuple[float, int, int]] = []
        stop = asyncio.Event()
        sampler = asyncio.create_task(sample(server.proc.pid, stop, samples))
        plan = []
        for i in range(clients):
            path, make = (REST_PATH, rest_body) if i % 2 == 0 else (AGUI_PATH, agui_body)
            disconnect = 10 if i % 10 == 3 else None  # 10% go away mid-stream
            message = "/fail load run" if i % 20 == 7 else "load run"  # 5% fail in the backend
            plan.append((path, make(message), disconnect, message.startswith("/fail")))
        outcomes = await asyncio.gather(*(stream_once(server.port, p, b, d, 60) for p, b, d, _ in plan))
        await asyncio.sleep(1.0)  # let cancelled runs finish on the server
        stop.set()
        await sampler
    finally:
        server.stop()
    records = read_log(log)
    log.unlink(missing_ok=True)
    errors = []
    for (path, _body, disconnect, fails), out in zip(plan, outcomes):
        if out.error or out.status != 200:
            errors.append(out.error or f"status {out.status}")
        elif disconnect is None:
            want = ("run_failed", "RUN_ERROR") if fails else ("run_finished", "RUN_FINISHED")
            if out.terminal not in want:
                errors.append(f"{path}: ended with {out.terminal or 'nothing'}, wanted {want[0]}")
    gaps = [g for out in outcomes for g in out.gaps]
    peak_rss = max((s[1] for s in samples), default=base_rss)
    peak_threads = max((s[2] for s in samples), default=base_threads)
    disconnected = sum(1 for _, _, d, _ in plan if d is not None)
    failing = sum(1 for *_, f in plan if f)
    return {
        "clients": clients,
        "errors": len(errors),
        "error_examples": errors[:3],
        "gap_p50_ms": round(percentile(gaps, 0.50) * 1000, 1),
        "gap_p99_ms": round(percentile(gaps, 0.99) * 1000, 1),
        "base_rss_mib": round(base_rss / 1024, 1),
        "peak_rss_mib": round(peak_rss / 1024, 1),
        "kib_per_stream": round((peak_rss - base_rss) / clients, 1),
        "base_threads": base_threads,
        "peak_threads": peak_threads,
        "disconnected_clients": disconnected,
        "server_cancelled_runs": sum(1 for r in records if r["stop_reason"] == "cancelled"),
        "failing_clients": failing,
        "server_failed_runs": sum(1 for r in records if r["outcome"] == "RunFailed"),
        "server_finished_runs": sum(1 for r in records if r["stop_reason"] == "end_turn"),
        "server_runs_logged": len(records),
    }


async def phase_sync(clients: int) -> dict:
    limit = clients - 20
    log = Path(tempfile.mkstemp(prefix="onedoor-load-sync-", suffix=".jsonl")[1])
    server = Server(
        ["-b", "scripted", "-o", "scripted.mode=sync", "-o", "scripted.delay=0.05", "-o", "scripted.deltas=40",
         "-o", "scripted.reasoning=false", "-o", "scripted.tool=false", "-o", f"limits.max_concurrent_runs={limit}"],
        log,
    )
    try:
        samples: list[tuple[float, int, int]] = []
        stop = asyncio.Event()
        sampler = asyncio.create_task(sample(server.proc.pid, stop, samples))
        # Start the first `limit` runs, give them a moment to be admitted, then the rest.
        first = [asyncio.create_task(stream_once(server.port, REST_PATH, rest_body("sync run"), None, 60)) for _ in range(limit)]
        await asyncio.sleep(0.8)
        extra = [asyncio.create_task(stream_once(server.port, REST_PATH, rest_body("sync run"), None, 60)) for _ in range(20)]
        outcomes = await asyncio.gather(*first, *extra)
        stop.set()
        await sampler
    finally:
        server.stop()
    log.unlink(missing_ok=True)
    completed = sum(1 for o in outcomes if o.status == 200 and o.terminal == "run_finished")
    refused = sum(1 for o in outcomes if o.status == 429)
    return {
        "clients": clients,
        "limit": limit,
        "completed": completed,
        "refused_429": refused,
        "other": clients - completed - refused,
        "peak_threads": max((s[2] for s in samples), default=0),
    }


async def phase_soak(seconds: float, concurrency: int) -> dict:
    log = Path(tempfile.mkstemp(prefix="onedoor-soak-", suffix=".jsonl")[1])
    server = Server(
        # Headroom over the client count: a client that disconnects starts its next run at
        # once, while the server is still cancelling the last one.
        ["-b", "scripted", "-o", "scripted.mode=async", "-o", "scripted.delay=0.02", "-o", "scripted.deltas=20",
         "-o", "scripted.reasoning=false", "-o", f"limits.max_concurrent_runs={concurrency * 4}"],
        log,
    )
    runs = errors = refused = 0
    examples: list[str] = []
    try:
        samples: list[tuple[float, int, int]] = []
        stop = asyncio.Event()
        sampler = asyncio.create_task(sample(server.proc.pid, stop, samples, every=1.0))
        end = time.monotonic() + seconds

        async def worker(index: int) -> None:
            nonlocal runs, errors, refused
            while time.monotonic() < end:
                path, make = (REST_PATH, rest_body) if index % 2 else (AGUI_PATH, agui_body)
                out = await stream_once(server.port, path, make("soak"), 5 if runs % 10 == 0 else None, 30)
                runs += 1
                if out.status == 429:  # a clear refusal at the limit, not a failure; counted apart
                    refused += 1
                elif out.error or out.status != 200:
                    errors += 1
                    if len(examples) < 5:
                        examples.append(out.error or f"status {out.status}")

        await asyncio.gather(*(worker(i) for i in range(concurrency)))
        stop.set()
        await sampler
    finally:
        server.stop()
    log.unlink(missing_ok=True)
    warm = [s for s in samples if s[0] - samples[0][0] > seconds * 0.2] if samples else []

    def slope(index: int) -> float:
        if len(warm) < 3:
            return float("nan")
        xs = [(s[0] - warm[0][0]) / 60 for s in warm]
        ys = [s[index] for s in warm]
        mean_x, mean_y = statistics.fmean(xs), statistics.fmean(ys)
        den = sum((x - mean_x) ** 2 for x in xs) or 1.0
        return sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys)) / den

    return {
        "seconds": seconds,
        "concurrency": concurrency,
        "runs": runs,
        "errors": errors,
        "refused_429": refused,
        "error_examples": examples,
        "rss_slope_kib_per_min": round(slope(1), 1),
        "threads_slope_per_min": round(slope(2), 2),
        "rss_start_mib": round(warm[0][1] / 1024, 1) if warm else None,
        "rss_end_mib": round(warm[-1][1] / 1024, 1) if warm else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    try:
        import onedoor_door_agui  # noqa: F401
        import onedoor_door_rest  # noqa: F401
    except ImportError as exc:
        print(json.dumps({"name": "load", "skipped": f"needs the REST and AG-UI doors installed ({exc})"}))
        return
    clients = 200 if args.quick else 1000
    sync_clients = 60 if args.quick else 220
    soak_seconds = 15 if args.quick else 300
    load = asyncio.run(phase_async(clients))
    sync = asyncio.run(phase_sync(sync_clients))
    soak = asyncio.run(phase_soak(soak_seconds, 20 if args.quick else 50))
    print(json.dumps(
        {
            "name": "load",
            "metrics": {"async": load, "sync": sync, "soak": soak},
            "ratios": {
                "errors_under_load": {"value": load["errors"] + soak["errors"], "target": "<= 0"},
                "gap_p99_ms": {"value": load["gap_p99_ms"], "target": "<= 250"},
                "disconnects_seen_cancelled": {
                    "value": round(load["server_cancelled_runs"] / max(1, load["disconnected_clients"]), 3),
                    "target": ">= 1",
                },
                "sync_refused_beyond_limit": {"value": sync["refused_429"], "target": ">= 20"},
            },
        }
    ))


if __name__ == "__main__":
    main()
