"""Helpers for the REST door tests: the door on a real server on 127.0.0.1, its SSE events.

(A uniquely named module: conftest puts this folder on sys.path for it; the helpers every
folder shares are in tests/onedoor_test_support.py.)"""

from __future__ import annotations

import contextlib
from pathlib import Path
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


# -- threads: two principals on one server ------------------------------------------------
TOKEN_A = "principal-alice-token-0123456789"
TOKEN_B = "principal-bob-token-9876543210ab"
AUTH_A = {"Authorization": f"Bearer {TOKEN_A}"}
AUTH_B = {"Authorization": f"Bearer {TOKEN_B}"}


@contextlib.contextmanager
def threads_server(folder: Path, *extra: str) -> Iterator[tuple[Any, Path]]:
    """`onedoor serve --door rest` with a tokens file (alice, bob) and its own SQLite file:
    (the server process, the SQLite path)."""
    from onedoor_transport_http.testing import start_server

    folder.mkdir(parents=True, exist_ok=True)
    tokens = folder / "tokens"
    tokens.write_text(f"# two principals\nalice {TOKEN_A}\nbob {TOKEN_B}\n")
    db = folder / "threads.sqlite3"
    args = ["--door", "rest", "-o", f"tokens_file={tokens}", "-o", f"sqlite.path={db}", *extra]
    with start_server(args) as server:
        yield server, db


def sse_frames(text: str) -> list[Any]:
    """Every SSE frame of a body (event, data, id), on the shared parser."""
    return support.parse_sse(text)


def new_thread(client: Any, headers: dict[str, str] = AUTH_A, **body: Any) -> str:
    r = client.post("/rest/threads", json=body, headers=headers)
    assert r.status_code == 201, r.text
    return str(r.json()["id"])
