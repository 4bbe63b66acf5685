"""Test helpers: a real `onedoor serve` subprocess, or the shared app on uvicorn in a
thread (when a test needs to look inside the kernel)."""

from __future__ import annotations

import asyncio
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any

_LISTENING = re.compile(r"listening on (http://\S+)")


@dataclass
class ServerProcess:
    proc: subprocess.Popen
    base_url: str
    lines: list[str] = field(default_factory=list)

    def stop(self, timeout: float = 15.0) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        return self.proc.returncode

    def __enter__(self) -> "ServerProcess":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def start_server(args: list[str], *, env: dict[str, str] | None = None, timeout: float = 30.0) -> ServerProcess:
    """Start ``python -m onedoor serve ARGS --port 0`` and wait for its URL."""
    cmd = [sys.executable, "-m", "onedoor", "serve", *args]
    if "--port" not in args:
        cmd += ["--port", "0"]
    full_env = {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=full_env)
    lines: "queue.Queue[str | None]" = queue.Queue()

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=pump, daemon=True).start()
    seen: list[str] = []
    deadline = time.monotonic() + timeout
    base = None
    while time.monotonic() < deadline:
        try:
            line = lines.get(timeout=0.2)
        except queue.Empty:
            continue
        if line is None:
            break
        seen.append(line.rstrip("\n"))
        match = _LISTENING.search(line)
        if match:
            base = match.group(1)
            break
    if base is None:
        proc.kill()
        err = proc.stderr.read() if proc.stderr else ""
        raise RuntimeError(f"server did not start: {' | '.join(seen)} {err}")
    # collect the door lines that follow right away
    time.sleep(0.05)
    while not lines.empty():
        item = lines.get_nowait()
        if item:
            seen.append(item.rstrip("\n"))
    return ServerProcess(proc, base, seen)


class ThreadedServer:
    """The shared app (doors + guards) on uvicorn in a background thread."""

    def __init__(self, doors: list[Any], ctx: Any, options: Any = None) -> None:
        from . import HttpOptions

        self.options = options or HttpOptions(port=0)
        self.doors = doors
        self.ctx = ctx
        self.base_url = ""
        self._server: Any = None
        self._thread: threading.Thread | None = None
        self.loop: asyncio.AbstractEventLoop | None = None

    def __enter__(self) -> "ThreadedServer":
        import uvicorn

        from .app import build_app

        app, _ = build_app(self.doors, self.ctx, self.options)
        config = uvicorn.Config(app, host=self.options.host, port=self.options.port, log_level="warning", lifespan="on")
        self._server = uvicorn.Server(config)
        self._server.install_signal_handlers = lambda: None  # type: ignore[method-assign]
        ready = threading.Event()

        def run() -> None:
            # a Runner cancels what is left when the server ends (e.g. sse-starlette's
            # shutdown watcher), so no task is destroyed pending when the loop closes
            with asyncio.Runner() as runner:
                self.loop = runner.get_loop()
                runner.run(self._server.serve())

        self._thread = threading.Thread(target=run, name="onedoor-test-server", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not self._server.started:
            time.sleep(0.02)
        if not self._server.started:
            raise RuntimeError("test server did not start")
        ready.set()
        port = self._server.servers[0].sockets[0].getsockname()[1]
        self.base_url = f"http://127.0.0.1:{port}"
        return self

    def call(self, fn: Any) -> Any:
        """Run ``fn()`` on the server's loop thread and return its result."""
        assert self.loop is not None
        done: "queue.Queue[Any]" = queue.Queue()
        self.loop.call_soon_threadsafe(lambda: done.put(fn()))
        return done.get(timeout=10)

    def __exit__(self, *exc: Any) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(20)
