"""Shared helpers for the AG-UI door tests (imported by name: see conftest.py): a real uvicorn server in a thread, SSE parsing."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any, Iterator

import pytest
from onedoor.builtins.scripted import ScriptedOptions, scripted
from onedoor.composition import ServeContext
from onedoor.kernel import Backend, Kernel, Limits
from onedoor_door_agui import AguiDoor, AguiOptions
from onedoor_transport_http import HttpOptions
from onedoor_transport_http.testing import ThreadedServer

HERE = Path(__file__).parent
JS = HERE / "js"
TOKEN = "test-token-0123456789abcdef"


class Recorder:
    """A lifecycle-hook observer: what the kernel says about every run."""

    def __init__(self) -> None:
        self.finished: dict[str, Any] = {}

    def onedoor_run_started(self, run: Any) -> None:
        pass

    def onedoor_run_finished(self, run: Any, outcome: Any) -> None:
        self.finished[run.run_id] = outcome

    def wait_for(self, run_id: str, timeout: float = 10.0) -> Any:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if run_id in self.finished:
                return self.finished[run_id]
            time.sleep(0.02)
        raise AssertionError(f"run {run_id} did not finish within {timeout} s")


@contextlib.contextmanager
def agui_server(
    *, limits: Limits | None = None, token: str = "", agui: AguiOptions | None = None, **scripted_options: Any
) -> Iterator[tuple[ThreadedServer, Kernel, Recorder]]:
    recorder = Recorder()
    opts = ScriptedOptions(**scripted_options)
    kernel = Kernel(Backend("scripted", lambda: scripted(opts)), limits=limits, hooks=recorder)
    ctx = ServeContext(kernel=kernel, options={"agui": agui or AguiOptions(keepalive=0)}, door_names=["agui"], transport_name="http")
    server = ThreadedServer([AguiDoor()], ctx, HttpOptions(port=0, token=token, max_body_bytes=64 * 1024))
    with server:
        try:
            yield server, kernel, recorder
        finally:
            server.call(kernel.cancel_all)


def run_input(text: str | None = "hello there", *, messages: list | None = None, **extra: Any) -> dict[str, Any]:
    if messages is None:
        messages = [{"id": "u1", "role": "user", "content": text}]
    return {"threadId": "thread-1", "runId": uuid.uuid4().hex, "messages": messages, **extra}


def parse_sse(body: str) -> list[dict[str, Any]]:
    """AG-UI events from an SSE body framed with blank lines; comments are skipped."""
    events = []
    for frame in body.split("\n\n"):
        data = [line[5:].lstrip() for line in frame.split("\n") if line.startswith("data:")]
        if data:
            events.append(json.loads("\n".join(data)))
    return events


def artifacts_dir() -> Path:
    path = os.environ.get("ONEDOOR_TEST_ARTIFACTS")
    if path:
        out = Path(path)
    else:
        out = Path(tempfile.gettempdir()) / "onedoor-test-artifacts"
    out.mkdir(parents=True, exist_ok=True)
    return out


def node_or_skip() -> str:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed (Node 20 runs the official AG-UI client)")
    if not (JS / "node_modules" / "@ag-ui" / "client").is_dir():
        pytest.skip("tests/door_agui/js/node_modules is missing: run `npm ci --prefix tests/door_agui/js`")
    return node
