"""Reattach benchmark: a client that drops mid-reply and comes back with Last-Event-ID.

One real ``onedoor serve --door rest`` process (``on_disconnect=finish``, the scripted
backend pacing its deltas). Side by side in one run:

``fresh``     POST /rest/chat/stream: time from the request to the first event
``reattach``  a run's reader drops after a few events; GET /rest/runs/{id}/events with
              ``Last-Event-ID``: time from that request to the first replayed event, and
              whether every event arrived exactly once (checked, not timed)

Ratio: reattach / fresh time to first event (target <= 1.5: coming back costs no more
than starting). Also the time to replay a finished 5,000-event run in full.

    python bench/bench_reattach.py            # ~20 s
    python bench/bench_reattach.py --quick    # ~8 s
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time

import httpx


def start_server(data_dir: str) -> tuple[subprocess.Popen, str]:
    env = dict(os.environ, ONEDOOR_DATA_DIR=data_dir)
    proc = subprocess.Popen(
        [sys.executable, "-m", "onedoor", "serve", "--door", "rest", "--port", "0",
         "-o", "rest.on_disconnect=finish", "-o", "scripted.delay=0.002", "-o", "scripted.reasoning=false",
         "-o", "scripted.tool=false"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
    )
    deadline = time.monotonic() + 60
    assert proc.stdout is not None
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        found = re.search(r"listening on (http://127\.0\.0\.1:\d+)", line)
        if found:
            return proc, found.group(1)
    proc.kill()
    raise SystemExit("the server did not start")


async def frames(response: httpx.Response):
    """(id, event name, data) of each SSE frame as it arrives."""
    buffer = ""
    async for chunk in response.aiter_text():
        buffer += chunk
        *whole, buffer = buffer.split("\n\n")
        for frame in whole:
            yield parse_frame(frame)


def parse_frame(frame: str) -> tuple[str, str, dict]:
    fields = dict(line.split(": ", 1) for line in frame.split("\n") if ": " in line)
    return fields.get("id", ""), fields.get("event", ""), json.loads(fields.get("data", "{}"))


def timed_request(url: str, method: str, path: str, body: bytes = b"", headers: str = "") -> tuple[float, list]:
    """(seconds from sending to the first SSE event, every frame of the response), over a
    raw socket with TCP_NODELAY: httpx's POST waits ~40 ms for a delayed ACK between its
    header and body writes here, which would time the client, not the server."""
    host, port = url.removeprefix("http://").split(":")
    request = (f"{method} {path} HTTP/1.1\r\nHost: {host}:{port}\r\nConnection: close\r\n{headers}"
               f"content-type: application/json\r\ncontent-length: {len(body)}\r\n\r\n").encode() + body
    with socket.create_connection((host, int(port)), timeout=60) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sent = time.perf_counter()
        sock.sendall(request)
        raw, first = b"", None
        while chunk := sock.recv(65536):
            raw += chunk
            if first is None and b"event: " in raw:
                first = time.perf_counter() - sent
    head, _, chunked = raw.partition(b"\r\n\r\n")
    assert first is not None and b" 200 " in head.split(b"\r\n", 1)[0], head[:200]
    body_text = dechunk(chunked).decode()
    return first, [parse_frame(f) for f in body_text.split("\n\n") if f.strip()]


def dechunk(data: bytes) -> bytes:
    out, at = b"", 0
    while True:
        line_end = data.index(b"\r\n", at)
        size = int(data[at:line_end], 16)
        if size == 0:
            return out
        out += data[line_end + 2: line_end + 2 + size]
        at = line_end + 2 + size + 2


def fresh(url: str) -> float:
    took, events = timed_request(url, "POST", "/rest/chat/stream", b'{"message": "/long 20"}')
    assert events[0][1] == "run_started" and events[-1][1] == "run_finished"
    return took


async def reattach(client: httpx.AsyncClient, url: str) -> float:
    seen: list[str] = []
    run_id = ""
    async with client.stream("POST", "/rest/chat/stream", json={"message": "/long 300"}) as response:
        async for event_id, _name, data in frames(response):
            seen.append(event_id)
            run_id = run_id or data["run_id"]
            if len(seen) == 5:
                break  # the connection drops here
    took, rest = timed_request(url, "GET", f"/rest/runs/{run_id}/events", headers=f"last-event-id: {seen[-1]}\r\n")
    numbers = [int(event_id.rsplit(":", 1)[1]) for event_id in seen] + [int(e[0].rsplit(":", 1)[1]) for e in rest]
    assert numbers == list(range(1, len(numbers) + 1)), "every event exactly once"
    assert rest[-1][1] == "run_finished" and rest[-1][2]["stop_reason"] == "end_turn"
    return took


async def replay_whole(client: httpx.AsyncClient, url: str) -> float:
    async with client.stream("POST", "/rest/chat/stream", json={"message": "/long 5000"}, timeout=120) as response:
        events = [e async for e in frames(response)]
    run_id = events[0][2]["run_id"]
    sent = time.perf_counter()
    _, again = timed_request(url, "GET", f"/rest/runs/{run_id}/events?after={run_id}:0:0")
    took = time.perf_counter() - sent
    assert [e[0] for e in again] == [e[0] for e in events], "the replay is the run, event for event"
    return took


async def measure(url: str, rounds: int) -> tuple[list[tuple[float, float]], float]:
    async with httpx.AsyncClient(base_url=url, timeout=60) as client:
        fresh(url)  # warm up
        pairs = [(fresh(url), await reattach(client, url)) for _ in range(rounds)]
        replay = statistics.median([await replay_whole(client, url) for _ in range(3)])
    return pairs, replay


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    rounds = 8 if parser.parse_args().quick else 25
    with tempfile.TemporaryDirectory() as data_dir:
        proc, url = start_server(data_dir)
        try:
            pairs, replay = asyncio.run(measure(url, rounds))
        finally:
            proc.terminate()
            proc.wait(30)
    fresh_ms = statistics.median(p[0] for p in pairs) * 1000
    back_ms = statistics.median(p[1] for p in pairs) * 1000
    print(json.dumps({
        "name": "reattach",
        "metrics": {"fresh_first_event_ms": round(fresh_ms, 2), "reattach_first_event_ms": round(back_ms, 2),
                    "replay_5000_events_ms": round(replay * 1000, 1), "rounds": rounds},
        "ratios": {"reattach_vs_fresh_first_event": {"value": round(back_ms / fresh_ms, 2), "target": "<= 1.5"}},
    }))


if __name__ == "__main__":
    main()
