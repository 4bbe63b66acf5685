"""What several benchmarks share: a server in a subprocess, and a raw-socket SSE reader.

The reader writes the whole request in one ``sendall`` and reads to the end (``Connection:
close``) with no HTTP client in between, so the figures are the server's.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

HOST = "127.0.0.1"


def start_server(script: str, *args: str, what: str = "server") -> tuple[subprocess.Popen, int]:
    """Run ``python SCRIPT ARGS…``, which prints ``PORT n`` once it listens; wait until it accepts."""
    proc = subprocess.Popen(
        [sys.executable, script, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    line = proc.stdout.readline() if proc.stdout else ""
    if not line.startswith("PORT "):
        proc.kill()
        raise RuntimeError(f"{what} did not start: {line} {proc.stderr.read() if proc.stderr else ''}")
    port = int(line.split()[1])
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection((HOST, port), timeout=1).close()
            break
        except OSError:
            time.sleep(0.05)
    return proc, port


def post_sse(port: int, path: str, body: bytes, headers: str = "", timeout: float = 120) -> tuple[int, float, bytes]:
    """POST ``body`` (JSON) and read the SSE answer to its end: (frames, seconds, last frame)."""
    head = (
        f"POST {path} HTTP/1.1\r\nHost: {HOST}:{port}\r\nContent-Type: application/json\r\n{headers}"
        f"Accept: text/event-stream\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    ).encode()
    data = bytearray()
    with socket.create_connection((HOST, port), timeout=timeout) as sock:
        started = time.perf_counter()
        sock.sendall(head + body)
        recv = sock.recv
        while True:
            chunk = recv(1 << 18)
            if not chunk:
                break
            data += chunk
        elapsed = time.perf_counter() - started
    status = bytes(data[: data.find(b"\r\n")])
    if b" 200 " not in status:
        raise RuntimeError(f"port {port}: {status!r} {bytes(data[:300])!r}")
    frames = data.count(b"data: ")
    last = bytes(data[data.rfind(b"data: ") :][:300])
    return frames, elapsed, last
