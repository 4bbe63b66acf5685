"""What the OpenTelemetry plugin's tests share: a served onedoor in a subprocess with the
telemetry environment, and helpers to read a trace."""

from __future__ import annotations

import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
LAUNCHER = HERE / "otel_launcher.py"
_LISTENING = re.compile(r"listening on (http://\S+)")
TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
TRACE_ID, PARENT_ID = TRACEPARENT.split("-")[1:3]
TOKEN = "otel-test-token-0123456789abcdef"


def clean_env(**extra: str) -> dict[str, str]:
    """This process's environment without any telemetry settings, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "ONEDOOR_LOG_", "ONEDOOR_METRICS"))}
    env["PYTHONUNBUFFERED"] = "1"
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(HERE), env.get("PYTHONPATH", "")]))
    return {**env, **extra}


def otel_env(endpoint: str, **extra: str) -> dict[str, str]:
    """Export everything to ``endpoint`` (OTLP/HTTP), quickly: spans every 50 ms, metrics every 200 ms."""
    return clean_env(OTEL_EXPORTER_OTLP_ENDPOINT=endpoint, OTEL_BSP_SCHEDULE_DELAY="50",
                     OTEL_METRIC_EXPORT_INTERVAL="200", OTEL_SERVICE_NAME="onedoor-under-test", **extra)


class Served:
    """``onedoor serve ARGS --port 0`` (through the test launcher: its ``traced`` backend
    too) until it prints where it listens; stderr is kept in ``errors``."""

    def __init__(self, args: list[str], env: dict[str, str], timeout: float = 60.0) -> None:
        argv = [sys.executable, str(LAUNCHER), "serve", *args]
        if "--port" not in args:
            argv += ["--port", "0"]
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        self.errors: list[str] = []
        self.output: list[str] = []
        lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._pump, args=(self.proc.stdout, lines), daemon=True).start()
        threading.Thread(target=self._keep, daemon=True).start()
        deadline = time.monotonic() + timeout
        self.base_url = ""
        while time.monotonic() < deadline and not self.base_url:
            try:
                line = lines.get(timeout=0.2)
            except queue.Empty:
                continue
            if line is None:
                break
            self.output.append(line)
            match = _LISTENING.search(line)
            if match:
                self.base_url = match.group(1)
        if not self.base_url:
            self.proc.kill()
            self.proc.wait(10)
            raise AssertionError(f"the server did not start: {''.join(self.output)}\n{''.join(self.errors)}")

    @staticmethod
    def _pump(stream: Any, lines: queue.Queue) -> None:
        for line in stream:
            lines.put(line)
        lines.put(None)

    def _keep(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.errors.append(line)

    def stop(self, timeout: float = 30.0) -> int:
        """SIGTERM (a clean stop: exit 0), then the exit code (killed, and a failure, if it does not stop in ``timeout``)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
                raise AssertionError(f"the server did not stop within {timeout} s:\n{''.join(self.errors)}") from None
        return self.proc.returncode

    def __enter__(self) -> "Served":
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


def by_id(spans: list[Any]) -> dict[str, Any]:
    return {span.span_id: span for span in spans}


def ancestors(span: Any, spans: list[Any]) -> list[Any]:
    """The span's parent, its parent's parent… as far as they were received."""
    index = by_id(spans)
    chain = []
    parent = index.get(span.parent_id)
    while parent is not None and parent not in chain:
        chain.append(parent)
        parent = index.get(parent.parent_id)
    return chain


def named(spans: list[Any], name: str) -> list[Any]:
    return [span for span in spans if span.name == name]


def one(spans: list[Any], name: str) -> Any:
    found = named(spans, name)
    assert len(found) == 1, f"expected one span {name!r}, got {len(found)}: {sorted(s.name for s in spans)}"
    return found[0]
