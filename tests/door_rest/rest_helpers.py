"""Helpers for the REST door tests: real servers on 127.0.0.1, an SSE parser, a hook recorder.

(A uniquely named module: conftest puts this folder on sys.path for it.)"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from typing import Any, Iterator

from onedoor.composition import ServeContext
from onedoor_door_rest import RestDoor, RestOptions
from onedoor_transport_http import HttpOptions
from onedoor_transport_http.testing import ThreadedServer

TOKEN = "rest-door-test-token-0123456789"


class Recorder:
    """Lifecycle hooks that note every run's outcome (used as ``kernel.hooks``)."""

    def __init__(self) -> None:
        self.started: list[Any] = []
        self.finished: list[tuple[Any, Any]] = []
        self.lock = threading.Lock()

    def onedoor_run_started(self, run: Any) -> None:
        with self.lock:
            self.started.append(run)

    def onedoor_run_finished(self, run: Any, outcome: Any) -> None:
        with self.lock:
            self.finished.append((run, outcome))

    def onedoor_http_app(self, app: Any, ctx: Any) -> None:
        pass


def parse_sse(text: str) -> tuple[list[tuple[str, dict]], list[str]]:
    """(events as (event name, data JSON), comments) from a whole SSE body framed by \\n\\n."""
    assert "\r" not in text, "SSE framing must be \\n only"
    events: list[tuple[str, dict]] = []
    comments: list[str] = []
    for block in text.split("\n\n"):
        if not block:
            continue
        name, data = "message", []
        for line in block.split("\n"):
            if line.startswith(":"):
                comments.append(line[1:].strip())
            elif line.startswith("event: "):
                name = line[len("event: ") :]
            elif line.startswith("data: "):
                data.append(line[len("data: ") :])
            else:
                raise AssertionError(f"unexpected SSE line {line!r}")
        if data:
            events.append((name, json.loads("\n".join(data))))
    return events, comments


def wait_until(predicate: Any, timeout: float = 15.0) -> bool:
    """Poll ``predicate`` (bounded) until it is true; returns its last value."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return bool(predicate())


@contextlib.contextmanager
def rest_server(kernel: Any, *, rest: RestOptions | None = None, http: HttpOptions | None = None) -> Iterator[ThreadedServer]:
    """The REST door on the HTTP transport's app, uvicorn in a thread, on 127.0.0.1."""
    options = {"rest": rest or RestOptions(), "http": http or HttpOptions(port=0)}
    ctx = ServeContext(kernel=kernel, options=options, door_names=["rest"], transport_name="http")
    door = RestDoor()
    door.name = "rest"
    with ThreadedServer([door], ctx, options["http"]) as server:
        yield server
