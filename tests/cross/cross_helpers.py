"""Shared by the cross-door tests (imported by name; conftest.py puts this folder on sys.path).

``doors_server(token=...)`` serves all installed asgi doors over the HTTP transport's app
in a thread, on a scripted kernel whose lifecycle hooks go to a :class:`Recorder` (so a
test can say "no run started", not only "the status was 4xx"), with the server's logs
captured (uvicorn's and every other logger's) so a test can say "no traceback".
"""

from __future__ import annotations

import contextlib
import io
import logging
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

import httpx
import pytest
from onedoor import plugins
from onedoor.composition import ServeContext
from onedoor.kernel import Limits
from onedoor.testing import scripted_kernel
from onedoor_test_support import Recorder

MCP_HEADERS = {"accept": "application/json, text/event-stream"}
INIT = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "cross", "version": "1"}},
}


def installed_asgi_doors() -> list[str]:
    names = []
    for name in plugins.names("door"):
        try:
            door = plugins.load("door", name)
        except Exception:  # noqa: BLE001 - a broken door is another test's business
            continue
        if "asgi" in door.shapes:
            names.append(name)
    return names


def agui_input(text: str = "hello there") -> dict[str, Any]:
    return {"threadId": "thread-x", "runId": uuid.uuid4().hex, "messages": [{"id": "u1", "role": "user", "content": text}]}


@dataclass
class Endpoint:
    """A route of a door that starts or changes something, with a valid body for it."""

    door: str
    path: str
    valid: Callable[[], dict[str, Any]]
    headers: dict[str, str] = field(default_factory=dict)
    starts_a_run: bool = True


def rest_input() -> dict[str, Any]:
    return {"message": "hello there", "history": [{"role": "user", "content": "earlier"}]}


ENDPOINTS = [
    Endpoint("rest", "/rest/chat", rest_input),
    Endpoint("rest", "/rest/chat/stream", rest_input),
    Endpoint("rest", "/rest/runs/r-nope/answers", lambda: {"answers": [{"question_id": "q-nope", "outcome": "allow_once"}]},
             starts_a_run=False),
    Endpoint("rest", "/rest/runs/r-nope/answers/stream",
             lambda: {"answers": [{"question_id": "q-nope", "outcome": "allow_once"}]}, starts_a_run=False),
    Endpoint("agui", "/agui/", agui_input),
    Endpoint("agui", "/agui/cancel", lambda: {"runId": "nope", "threadId": "t"}, starts_a_run=False),
    Endpoint("mcp", "/mcp/", lambda: dict(INIT), MCP_HEADERS, starts_a_run=False),
]


class LogCapture(logging.Handler):
    """Everything the server logs, formatted with tracebacks, as one text."""

    LOGGERS = ("", "uvicorn", "uvicorn.error", "uvicorn.asgi")

    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.stream = io.StringIO()
        self.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        self.stream.write(self.format(record) + "\n")

    @property
    def text(self) -> str:
        return self.stream.getvalue()

    def attach(self) -> None:
        for name in self.LOGGERS:
            logging.getLogger(name).addHandler(self)

    def detach(self) -> None:
        for name in self.LOGGERS:
            logging.getLogger(name).removeHandler(self)


@dataclass
class DoorsServer:
    base_url: str
    doors: list[str]
    recorder: Recorder
    kernel: Any
    logs: LogCapture
    token: str = ""

    def auth(self) -> dict[str, str]:
        return {"authorization": f"Bearer {self.token}"} if self.token else {}

    def normal_request(self, door: str) -> None:
        """A well-behaved client's request to ``door`` succeeds (the server still serves)."""
        base, auth = self.base_url, self.auth()
        if door == "rest":
            r = httpx.post(base + "/rest/chat", json={"message": "still there?"}, headers=auth, timeout=30)
            assert r.status_code == 200 and r.json()["reply"].startswith("You said: still there?"), r.text
        elif door == "agui":
            r = httpx.post(base + "/agui/", json=agui_input("still there?"), headers=auth, timeout=30)
            assert r.status_code == 200 and '"RUN_FINISHED"' in r.text.rsplit("\n\n", 2)[-2], r.text[-300:]
        elif door == "mcp":
            r = httpx.post(base + "/mcp/", json=INIT, headers={**MCP_HEADERS, **auth}, timeout=30)
            assert r.status_code == 200 and '"protocolVersion"' in r.text, r.text
        else:
            assert httpx.get(base + "/healthz", timeout=10).status_code == 200


@contextlib.contextmanager
def doors_server(token: str = "", **http_options: Any) -> Iterator[DoorsServer]:
    from onedoor_transport_http import HttpOptions
    from onedoor_transport_http.testing import ThreadedServer

    names = installed_asgi_doors()
    if not names:
        pytest.skip("no asgi door is installed in this environment")
    recorder = Recorder()
    kernel = scripted_kernel(Limits(max_concurrent_runs=16))
    kernel.hooks = recorder
    doors = []
    for name in names:
        door = plugins.load("door", name)
        door.name = name
        doors.append(door)
    ctx = ServeContext(kernel=kernel, door_names=names, transport_name="http")
    logs = LogCapture()
    with ThreadedServer(doors, ctx, HttpOptions(port=0, token=token, **http_options)) as server:
        logs.attach()  # after uvicorn configured its loggers (it replaces their handlers)
        try:
            yield DoorsServer(server.base_url, names, recorder, kernel, logs, token)
        finally:
            logs.detach()
            server.call(kernel.cancel_all)
