"""A real ``onedoor serve`` (REST door, HTTP transport) with a backend that ignores
cancel: on SIGTERM/SIGINT the open stream still gets its terminal event within
``shutdown_grace``, and the process exits at once, cleanly, without a traceback.
A port already in use is one line on stderr."""

from __future__ import annotations

import os
import queue
import re
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest
from kernel_test_helpers import make_dist

pytest.importorskip("onedoor_transport_http", reason="needs the HTTP transport")
pytest.importorskip("onedoor_door_rest", reason="needs the REST door to stream a run")
httpx = pytest.importorskip("httpx")

GRACE = 3.0  # http.shutdown_grace; the backend's cancel_grace is far longer (60 s)
SLACK = 2.0  # a slow, shared machine

STUBBORN = """
    import threading
    from onedoor.events import RunFinished, RunStarted, TextDelta

    class Stubborn:
        '''Ignores every cancel request: no cancel(), no context, a ten-minute wait.'''

        def run(self, message, *, history=None):
            yield RunStarted("r")
            yield TextDelta("working ")
            threading.Event().wait(600)
            yield RunFinished("r", "working ")
"""


@pytest.fixture
def stubborn_env(tmp_path):
    site = make_dist(tmp_path / "site", "od-stubborn", {"onedoor.backends": {"stubborn": "od_stubborn:Stubborn"}},
                     {"od_stubborn.py": STUBBORN})
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")])),
            "PYTHONUNBUFFERED": "1"}


def start_serve(env: dict[str, str]) -> tuple[subprocess.Popen, str]:
    cmd = [sys.executable, "-m", "onedoor", "serve", "--door", "rest", "--backend", "stubborn", "--port", "0",
           "-o", "limits.cancel_grace=60", "-o", f"http.shutdown_grace={GRACE}"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: lines.put(proc.stdout.readline()), daemon=True).start()  # type: ignore[union-attr]
    try:
        first = lines.get(timeout=60)
    except queue.Empty:
        proc.kill()
        raise AssertionError("waited 60 s for the server's 'listening on' line") from None
    match = re.search(r"listening on (http://\S+)", first)
    if match is None:
        proc.kill()
        raise AssertionError(f"the server did not start: {first!r} {proc.stderr.read()}")  # type: ignore[union-attr]
    return proc, match.group(1)


@pytest.mark.parametrize("sig,code", [(signal.SIGTERM, 0), (signal.SIGINT, 130)])
def test_shutdown_ends_a_stuck_stream_within_shutdown_grace(stubborn_env, sig, code):
    proc, base = start_serve(stubborn_env)
    frames: list[tuple[float, str]] = []
    streaming = threading.Event()

    def client() -> None:
        with httpx.stream("POST", base + "/rest/chat/stream", json={"message": "work"}, timeout=60) as response:
            for chunk in response.iter_text():
                frames.append((time.monotonic(), chunk))
                if "text_delta" in chunk:
                    streaming.set()

    reader = threading.Thread(target=client, daemon=True)
    try:
        reader.start()
        assert streaming.wait(60), "waited 60 s for the first text delta of the stream"
        signalled = time.monotonic()
        proc.send_signal(sig)
        reader.join(GRACE + SLACK + 30)
        exit_code = proc.wait(60)
        exited_after = time.monotonic() - signalled
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    stderr = proc.stderr.read()  # type: ignore[union-attr]
    body = "".join(chunk for _, chunk in frames)
    last = [frame for frame in body.split("\n\n") if frame.strip()][-1]
    assert "event: run_finished" in last.splitlines() and '"stop_reason":"cancelled"' in last, body
    ending_at = next(at for at, chunk in frames if "run_finished" in chunk)
    assert ending_at - signalled < GRACE + SLACK, f"the ending came {ending_at - signalled:.1f} s after the signal"
    assert exit_code == code, stderr
    assert exited_after < GRACE + SLACK + 5, f"the process took {exited_after:.1f} s to exit"
    assert "Traceback" not in stderr and "CancelledError" not in stderr, stderr
    assert stderr.count("did not stop within") == 1, stderr


def test_a_port_in_use_is_one_line():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = subprocess.run([sys.executable, "-m", "onedoor", "serve", "--door", "rest", "--port", str(port)],
                                capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert result.returncode == 2
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith(f"onedoor: error: cannot listen on 127.0.0.1:{port}"), lines
    assert f"port {port} is in use" in lines[0] and "--port 0" in lines[0], lines  # says how to pick another
