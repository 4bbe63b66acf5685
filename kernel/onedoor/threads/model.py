"""Threads: the model and the store interface (see :mod:`onedoor.threads`)."""


from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any, Protocol, Sequence, runtime_checkable

from ..errors import OnedoorError
from ..messages import Message


class ThreadError(OnedoorError):
    """A thread change the store refused: ``reason`` is ``not_found`` (also another
    owner's thread), ``conflict`` (``expected_version`` is stale, or a chosen id is
    taken), ``too_large``, ``invalid`` (not a usable thread id) or ``unavailable``
    (:class:`StoreUnavailable`). Door calls (:class:`~onedoor.threads.ThreadDesk`) add
    ``taken`` (a chosen id another principal holds), ``no_threads`` (no store), and for
    shared state ``stale`` (a change based on a version that is no longer the state's) and
    ``no_state`` (a store that keeps no state)."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


class StoreUnavailable(ThreadError):
    """The store cannot be reached now (a database restarting, a network gone): nothing
    half-done was kept, and a later call may succeed. Doors answer it as "try again"
    (HTTP 503); a run whose turn could not be kept ends ``RunFailed`` saying so."""

    def __init__(self, message: str) -> None:
        super().__init__("unavailable", message)


THREAD_ID_PATTERN = r"[A-Za-z0-9_.:-]{1,128}"  # (and not only dots: check_thread_id)
_THREAD_ID = re.compile(THREAD_ID_PATTERN, re.ASCII)


def new_thread_id() -> str:
    return "t-" + os.urandom(12).hex()


def check_thread_id(thread_id: Any) -> str:
    """``thread_id`` if it is a usable id, else :class:`ThreadError` ``invalid``: 1-128
    letters, digits or ``-_.:``, not only dots (``.`` and ``..`` cannot be a URL path segment)."""
    if not isinstance(thread_id, str) or not _THREAD_ID.fullmatch(thread_id) or not thread_id.strip("."):
        shown = repr(thread_id)[:60]
        raise ThreadError("invalid", f"a thread id is 1-128 letters, digits or -_.:, not only dots (got {shown})")
    return thread_id


@dataclass(frozen=True)
class Thread:
    """A stored conversation. ``state`` is the JSON document the thread's runs and its
    clients share (:mod:`onedoor.state`), with a ``state_version`` of its own that grows
    by one with every change (compare-and-set, like ``version`` for the messages)."""

    id: str
    owner: str
    title: str = ""
    settings: dict[str, Any] = field(default_factory=dict)
    messages: tuple[Message, ...] = ()
    version: int = 0
    created_at: float = 0.0
    updated_at: float = 0.0
    state: dict[str, Any] = field(default_factory=dict)
    state_version: int = 0


@dataclass(frozen=True)
class ThreadSummary:
    """What a listing shows: no messages, only how many."""

    id: str
    title: str
    message_count: int
    created_at: float
    updated_at: float


@runtime_checkable
class ThreadStore(Protocol):
    """What every store implements; ``onedoor.testing.store_conformance`` checks it."""

    async def create(
        self, owner: str, *, title: str = "", settings: dict[str, Any] | None = None, thread_id: str | None = None
    ) -> Thread: ...

    async def get(self, owner: str, thread_id: str) -> Thread | None: ...

    async def list(self, owner: str, *, limit: int = 50, before: str | None = None) -> list[ThreadSummary]: ...

    async def append(
        self, owner: str, thread_id: str, messages: Sequence[Message], *, expected_version: int
    ) -> Thread: ...

    async def delete(self, owner: str, thread_id: str) -> bool: ...

    async def close(self) -> None: ...


@runtime_checkable
class StateStore(Protocol):
    """A thread store that keeps each thread's shared state (optional; SQLite and
    PostgreSQL do): ``update_state`` replaces it when ``expected_version`` is its current
    ``state_version`` (``conflict`` otherwise; ``not_found`` for another owner's thread)."""

    async def update_state(
        self, owner: str, thread_id: str, state: dict[str, Any], *, expected_version: int
    ) -> Thread: ...


def keeps_state(store: Any) -> bool:
    return isinstance(store, StateStore)


def check_state_update(thread_id: str, version: Any, expected_version: int) -> None:
    """For store authors: refuse a state update the way every store must."""
    if version is None:
        raise ThreadError("not_found", f"no thread {thread_id!r}")
    if version != expected_version:
        raise ThreadError("conflict", f"the state of thread {thread_id!r} changed (version {version}, "
                          f"expected {expected_version})")


def check_append(thread_id: str, row: Any, expected_version: int, added: int, limit: int) -> None:
    """For store authors: refuse an append to ``row`` (``(version, chars)`` of the owner's
    thread, or None) the way every store must (not_found, conflict, too_large)."""
    if row is None:
        raise ThreadError("not_found", f"no thread {thread_id!r}")
    version, chars = row[0], row[1]
    if version != expected_version:
        raise ThreadError("conflict", f"thread {thread_id!r} changed (version {version}, expected {expected_version})")
    if chars + added > limit:
        raise ThreadError("too_large", f"thread {thread_id!r} would hold {chars + added} characters; the limit is {limit}")


__all__ = [
    "StateStore", "StoreUnavailable", "Thread", "ThreadError", "ThreadStore", "ThreadSummary", "check_append",
    "check_state_update", "check_thread_id", "keeps_state", "new_thread_id",
]
