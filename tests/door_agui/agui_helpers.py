"""Helpers for the AG-UI door tests (imported by name: see conftest.py): the door on a real
uvicorn in a thread, its events; the helpers every folder shares are in
tests/onedoor_test_support.py (Recorder, parse_sse, node_or_skip)."""

from __future__ import annotations

import contextlib
import os
import tempfile
import uuid
from pathlib import Path
from typing import Any, Iterator

import onedoor_test_support as support
from onedoor.builtins.scripted import ScriptedOptions, scripted
from onedoor.composition import ServeContext
from onedoor.kernel import Backend, Kernel, Limits
from onedoor_door_agui import AguiDoor, AguiOptions
from onedoor_test_support import Recorder
from onedoor_transport_http import HttpOptions
from onedoor_transport_http.testing import ThreadedServer

HERE = Path(__file__).parent
JS = HERE / "js"
TOKEN = "test-token-0123456789abcdef"


@contextlib.contextmanager
def agui_server(
    *, limits: Limits | None = None, token: str = "", agui: AguiOptions | None = None, store: Any = None,
    backend: Backend | None = None, hooks: Any = None, **scripted_options: Any
) -> Iterator[tuple[ThreadedServer, Kernel, Recorder]]:
    """The door on uvicorn in a thread: the scripted backend (``scripted_options``) or
    ``backend``, a thread ``store`` if given, the Recorder (or ``hooks``) as observer."""
    recorder = hooks or Recorder()
    opts = ScriptedOptions(**scripted_options)
    if backend is None:
        backend = Backend("scripted", lambda: scripted(opts), frozenset(scripted.capabilities), scripted.accepts(opts))
    kernel = Kernel(backend, limits=limits, hooks=recorder, store=store)
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
    """AG-UI events from an SSE body (the shared parser: \\n\\n framing enforced, comments skipped)."""
    return [frame.data for frame in support.parse_sse(body)]


def artifacts_dir() -> Path:
    path = os.environ.get("ONEDOOR_TEST_ARTIFACTS")
    if path:
        out = Path(path)
    else:
        out = Path(tempfile.gettempdir()) / "onedoor-test-artifacts"
    out.mkdir(parents=True, exist_ok=True)
    return out


def node_or_skip() -> str:
    """Node and this folder's npm packages (the official AG-UI client), or a skip."""
    return support.node_or_skip(JS, "@ag-ui/client")
