"""Helpers every test folder shares (tests/conftest.py puts this folder on sys.path).

- :func:`free_port` / :func:`wait_for_port`: a port for a server a test starts, and the
  wait until that server really listens (a port chosen before it is bound can be taken).
- :func:`wait_for` / :func:`await_for`: poll a condition, bounded; on time-out the error
  names what was awaited, so a failure log tells the cause.
- :func:`parse_sse`: SSE bodies (``\\n\\n`` framing enforced) into (name, data, id) frames.
- :class:`Recorder`: lifecycle hooks that note every run, to observe a server from inside
  (e.g. "no run started" after a refused cross-site request).
- :func:`node_or_skip`: Node and a folder's npm packages, or a skip that says what is missing.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import socket
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import pytest


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago; prefer port 0 where a server allows it."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for(predicate: Callable[[], Any], what: str, timeout: float = 15.0, interval: float = 0.02) -> Any:
    """Poll ``predicate`` until it returns something true; raise naming ``what`` on time-out."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"gave up after {timeout:g} s waiting for {what}")
        time.sleep(interval)


async def await_for(predicate: Callable[[], Any], what: str, timeout: float = 15.0, interval: float = 0.02) -> Any:
    """The async twin of :func:`wait_for`."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"gave up after {timeout:g} s waiting for {what}")
        await asyncio.sleep(interval)


def wait_for_port(port: int, host: str = "127.0.0.1", timeout: float = 20.0, what: str = "") -> None:
    """Wait until something accepts TCP connections on ``host:port``."""

    def listening() -> bool:
        try:
            with socket.create_connection((host, port), timeout=0.5):
                return True
        except OSError:
            return False

    wait_for(listening, what or f"a server listening on {host}:{port}", timeout)


@dataclass
class SseFrame:
    event: str
    data: Any
    id: str | None = None


def parse_sse(text: str, *, comments: list[str] | None = None) -> list[SseFrame]:
    """Frames of a whole SSE body. ``\\r`` is refused (the AG-UI JS parser needs ``\\n\\n``)."""
    assert "\r" not in text, "SSE framing must be \\n only"
    frames: list[SseFrame] = []
    for block in text.split("\n\n"):
        if not block:
            continue
        name, data, event_id = "message", [], None
        for line in block.split("\n"):
            if line.startswith(":"):
                if comments is not None:
                    comments.append(line[1:].strip())
            elif line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].removeprefix(" "))
            elif line.startswith("id:"):
                event_id = line[3:].strip()
            else:
                raise AssertionError(f"unexpected SSE line {line!r}")
        if data:
            frames.append(SseFrame(name, json.loads("\n".join(data)), event_id))
    return frames


class Recorder:
    """Lifecycle hooks noting every run (use as ``Kernel(hooks=...)`` or register with pluggy)."""

    def __init__(self) -> None:
        self.started: list[Any] = []
        self.finished: dict[str, Any] = {}
        self.lock = threading.Lock()

    def onedoor_run_started(self, run: Any) -> None:
        with self.lock:
            self.started.append(run)

    def onedoor_run_finished(self, run: Any, outcome: Any) -> None:
        with self.lock:
            self.finished[run.run_id] = outcome

    def onedoor_http_app(self, app: Any, ctx: Any) -> None:
        pass

    def wait_finished(self, run_id: str, timeout: float = 15.0) -> Any:
        return wait_for(lambda: self.finished.get(run_id), f"run {run_id} to finish", timeout)


def node_or_skip(folder: Path | None = None, package: str = "") -> str:
    """The ``node`` executable; skip (saying what is missing) without it or ``folder``'s packages."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed (Node 20 runs the protocols' official clients)")
    if folder is not None and package and not (folder / "node_modules" / package).exists():
        pytest.skip(f"{folder}/node_modules/{package} is missing: run `npm ci --prefix {folder}`")
    return node


async def check_shared_journal_notes(one: Any, two: Any) -> None:
    """Two stores on one database (``onedoor.journal.notes``): the doors' notes and names of a
    run one store writes, the other reads, for the run's principal only; a name stays with
    the run that took it first; the runs going on in a thread; all gone with the run."""
    import uuid

    run, other, thread = (f"{what}-{uuid.uuid4().hex[:8]}" for what in ("run", "other", "thread"))
    lease = time.time() + 30
    assert await one.journal_open(run, "alice", "server-1", thread, lease)
    assert await two.journal_notes(run, "alice") is None and await two.journal_named(f"{run}-b", "alice") is None
    await one.journal_note(run, '{"door":[1]}', [f"{run}-b"])
    assert await two.journal_notes(run, "alice") == '{"door":[1]}' and await two.journal_notes(run, "bob") is None
    assert await two.journal_named(f"{run}-b", "alice") == run and await two.journal_named(f"{run}-b", "bob") is None
    await one.journal_note(run, '{"door":[1,2]}', [f"{run}-b", f"{run}-c"])
    assert await two.journal_notes(run, "alice") == '{"door":[1,2]}' and await two.journal_named(f"{run}-c", "alice") == run
    assert await one.journal_open(other, "alice", "server-1", None, lease)
    await one.journal_note(other, "{}", [f"{run}-b", f"{other}-b"])
    assert await two.journal_named(f"{run}-b", "alice") == run and await two.journal_named(f"{other}-b", "alice") == other
    assert list(await two.journal_running(thread, "alice")) == [run] and list(await two.journal_running(thread, "bob")) == []
    await one.journal_write(run, 1, [], lease_until=lease, ended=True)
    assert list(await two.journal_running(thread, "alice")) == []
    await one.journal_write(other, 1, [], lease_until=lease, ended=True)
    await one.journal_prune(time.time() + 1)
    assert await two.journal_notes(run, "alice") is None and await two.journal_named(f"{run}-c", "alice") is None
    assert await two.journal_named(f"{other}-b", "alice") is None
