"""Helpers for the REST door tests: the door on a real server on 127.0.0.1, its SSE events.

(A uniquely named module: conftest puts this folder on sys.path for it; the helpers every
folder shares are in tests/onedoor_test_support.py.)"""

from __future__ import annotations

import contextlib
from typing import Any, Iterator

import onedoor_test_support as support
from onedoor.composition import ServeContext
from onedoor_door_rest import RestDoor, RestOptions
from onedoor_transport_http import HttpOptions
from onedoor_transport_http.testing import ThreadedServer

TOKEN = "rest-door-test-token-0123456789"


def parse_sse(text: str) -> tuple[list[tuple[str, dict]], list[str]]:
    """(events as (event name, data JSON), comments) from a whole SSE body, on the shared parser."""
    comments: list[str] = []
    frames = support.parse_sse(text, comments=comments)
    return [(frame.event, frame.data) for frame in frames], comments


@contextlib.contextmanager
def rest_server(kernel: Any, *, rest: RestOptions | None = None, http: HttpOptions | None = None) -> Iterator[ThreadedServer]:
    """The REST door on the HTTP transport's app, uvicorn in a thread, on 127.0.0.1."""
    options = {"rest": rest or RestOptions(), "http": http or HttpOptions(port=0)}
    ctx = ServeContext(kernel=kernel, options=options, door_names=["rest"], transport_name="http")
    door = RestDoor()
    door.name = "rest"
    with ThreadedServer([door], ctx, options["http"]) as server:
        yield server
