"""Threads: stored conversations, and the store interface every thread store implements.

A thread belongs to one owner (a principal id) and holds its messages (port
``Message``s, tool calls and results included), a title, per-thread settings and a
``version`` that grows by one with every change. Every store call names the owner: a
thread of another owner is indistinguishable from one that does not exist. Writers
append with ``expected_version`` (compare-and-set): two doors writing one thread at once
serialise (one gets :class:`ThreadError` ``conflict``, re-reads and retries) instead of
losing a turn. Stores are async; :mod:`onedoor.sqlite_store` is the embedded one.

Thread ids are made by the store (``t-`` and 24 hex digits) or chosen by the client
(AG-UI's ``threadId``, A2A's ``contextId``): 1 to 128 characters of letters, digits and
``-_.:``. A chosen id that is taken (by anyone) is ``conflict``, never another owner's
thread. Stores are plugins of the ``onedoor.stores`` entry-point group
(:mod:`onedoor.stores`); ``onedoor serve`` gives the kernel one (``kernel.store``).
"""

from __future__ import annotations

import asyncio
import os
import random
import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Protocol, Sequence, runtime_checkable

from .errors import OnedoorError
from .events import TextDelta, ToolFinished, ToolStarted
from .messages import Message, ToolCall


class ThreadError(OnedoorError):
    """A thread change the store refused: ``reason`` is ``not_found`` (also another
    owner's thread), ``conflict`` (``expected_version`` is stale, or a chosen id is
    taken), ``too_large``, ``invalid`` (not a usable thread id) or ``unavailable``
    (:class:`StoreUnavailable`)."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


class StoreUnavailable(ThreadError):
    """The store cannot be reached now (a database restarting, a network gone): nothing
    half-done was kept, and a later call may succeed. Doors answer it as "try again"
    (HTTP 503); a run whose turn could not be kept ends ``RunFailed`` saying so."""

    def __init__(self, message: str) -> None:
        super().__init__("unavailable", message)


_THREAD_ID = re.compile(r"[A-Za-z0-9_.:-]{1,128}")


def new_thread_id() -> str:
    return "t-" + os.urandom(12).hex()


def check_thread_id(thread_id: Any) -> str:
    """``thread_id`` if it is a usable id, else :class:`ThreadError` ``invalid``."""
    if not isinstance(thread_id, str) or not _THREAD_ID.fullmatch(thread_id):
        shown = repr(thread_id)[:60]
        raise ThreadError("invalid", f"a thread id is 1-128 letters, digits or -_.: (got {shown})")
    return thread_id


@dataclass(frozen=True)
class Thread:
    id: str
    owner: str
    title: str = ""
    settings: dict[str, Any] = field(default_factory=dict)
    messages: tuple[Message, ...] = ()
    version: int = 0
    created_at: float = 0.0
    updated_at: float = 0.0


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


class TurnRecorder:
    """Builds what one run adds to its thread, without copying its text: the text comes
    from the run's contract (a list of parts) at the end; tool events note where in that
    list they fell. Only tool events pass through :meth:`note`."""

    __slots__ = ("message", "marks")

    def __init__(self, message: str) -> None:
        self.message = message
        self.marks: list[tuple[int, Any]] = []  # (number of text parts before it, tool event)

    def note(self, event: Any, parts: Sequence[str]) -> None:
        if type(event) is ToolStarted or type(event) is ToolFinished:
            self.marks.append((len(parts), event))

    def messages(self, parts: Sequence[str], *, interrupted: str = "") -> list[Message]:
        """The user's message, then the assistant's turn as the history format has it (an
        assistant message carrying the tool calls it made, a ``tool`` message per result,
        the reply). ``interrupted`` (e.g. "cancelled") is noted on a reply cut short."""
        out = [Message("user", self.message)] if self.message else []
        calls: list[ToolCall] = []
        results: list[Message] = []
        text_from = 0  # the current assistant message's text: parts[text_from:text_to]
        text_to: int | None = None  # where its first tool call was made

        def emit() -> None:
            out.append(Message("assistant", "".join(parts[text_from:text_to]), tuple(calls)))
            out.extend(results)
            calls.clear()
            results.clear()

        for at, event in self.marks:
            if type(event) is ToolStarted:
                if results:  # the calls before were answered: this call starts the next message
                    emit()
                    text_from, text_to = text_to or 0, None
                if text_to is None:
                    text_to = at
                calls.append(ToolCall(event.call_id, event.name, event.arguments))
            else:
                results.append(Message("tool", event.result_text(), tool_call_id=event.call_id))
        if calls:
            emit()
            text_from = text_to or 0
        rest = "".join(parts[text_from:])
        if rest:
            out.append(Message("assistant", rest))
        if interrupted:
            last = out[-1] if out and out[-1].role == "assistant" else None
            note = f"[reply {interrupted}]"
            if last is None:
                out.append(Message("assistant", note))
            else:
                out[-1] = Message("assistant", f"{last.content}\n{note}" if last.content else note, last.tool_calls)
        return out


def turn_messages(message: str, events: Iterable[Any], *, interrupted: str = "") -> list[Message]:
    """:class:`TurnRecorder` over a list of events (for tests and doors that kept them)."""
    recorder = TurnRecorder(message)
    parts: list[str] = []
    for event in events:
        if type(event) is TextDelta:
            parts.append(event.text)
        else:
            recorder.note(event, parts)
    return recorder.messages(parts, interrupted=interrupted)


async def append_turn(store: ThreadStore, thread: Thread, messages: Sequence[Message], *, attempts: int = 32) -> Thread:
    """Append a run's turn; when another writer got there first, re-read and append after
    it (turns are never merged or lost, only ordered by when they ended). Writers that keep
    colliding (many turns on one thread at once, several servers) back off a little, at
    random, so one of them always gets through."""
    version = thread.version
    for attempt in range(attempts):
        try:
            return await store.append(thread.owner, thread.id, messages, expected_version=version)
        except ThreadError as exc:
            if exc.reason != "conflict":
                raise
            current = await store.get(thread.owner, thread.id)
            if current is None:
                raise ThreadError("not_found", f"thread {thread.id!r} was deleted") from None
            if attempt >= 2:
                await asyncio.sleep(random.uniform(0, 0.002 * min(attempt, 10)))
            version = current.version
    raise ThreadError("conflict", f"thread {thread.id!r} changed {attempts} times while saving; try again")


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


def title_from(messages: Sequence[Message], limit: int = 80) -> str:
    """A thread's default title: its first user message, on one line, cut at ``limit``."""
    for message in messages:
        if message.role == "user" and message.content.strip():
            line = " ".join(message.content.split())
            return line if len(line) <= limit else line[: limit - 1] + "…"
    return ""


__all__ = ["append_turn", "Thread", "ThreadError", "ThreadStore", "ThreadSummary", "TurnRecorder", "title_from", "turn_messages"]
