"""Threads: stored conversations, and the store interface every thread store implements.

A thread belongs to one owner (a principal id) and holds its messages (port
``Message``s, tool calls and results included), a title, per-thread settings and a
``version`` that grows by one with every change. Every store call names the owner: a
thread of another owner is indistinguishable from one that does not exist. Writers
append with ``expected_version`` (compare-and-set): two doors writing one thread at once
serialise (one gets :class:`ThreadError` ``conflict``, re-reads and retries) instead of
losing a turn. Stores are async; :mod:`onedoor.sqlite_store` is the embedded one.

Status: the store and its SQLite implementation exist; the kernel and the doors do not
use threads yet (see docs/design/port-next.md, section 3).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Protocol, Sequence, runtime_checkable

from .errors import OnedoorError
from .events import TextDelta, ToolFinished, ToolStarted
from .messages import Message, ToolCall


class ThreadError(OnedoorError):
    """A thread change the store refused: ``reason`` is ``not_found`` (also another
    owner's thread), ``conflict`` (``expected_version`` is stale) or ``too_large``."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


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
    async def create(self, owner: str, *, title: str = "", settings: dict[str, Any] | None = None) -> Thread: ...

    async def get(self, owner: str, thread_id: str) -> Thread | None: ...

    async def list(self, owner: str, *, limit: int = 50, before: str | None = None) -> list[ThreadSummary]: ...

    async def append(
        self, owner: str, thread_id: str, messages: Sequence[Message], *, expected_version: int
    ) -> Thread: ...

    async def delete(self, owner: str, thread_id: str) -> bool: ...

    async def close(self) -> None: ...


def turn_messages(message: str, events: Iterable[Any]) -> list[Message]:
    """What one run adds to its thread: the user's message, then the assistant's turn as
    the history format has it (an assistant message carrying the tool calls it made, one
    ``tool`` message per result, the reply). Text written before a tool call stays with
    that call's assistant message, so the order of the conversation is kept. A run that
    ended without any reply (cancelled at once) adds only the user's message."""
    out = [Message("user", message)] if message else []
    text: list[str] = []
    calls: list[ToolCall] = []
    results: list[Message] = []

    def flush() -> None:
        if calls or text:
            out.append(Message("assistant", "".join(text), tuple(calls)))
            out.extend(results)
        text.clear()
        calls.clear()
        results.clear()

    for event in events:
        kind = type(event)
        if kind is TextDelta:
            if results:  # text after tool results starts the next assistant message
                flush()
            text.append(event.text)
        elif kind is ToolStarted:
            if results:
                flush()
            calls.append(ToolCall(event.call_id, event.name, event.arguments))
        elif kind is ToolFinished:
            results.append(Message("tool", event.result_text(), tool_call_id=event.call_id))
    flush()
    return out


def title_from(messages: Sequence[Message], limit: int = 80) -> str:
    """A thread's default title: its first user message, on one line, cut at ``limit``."""
    for message in messages:
        if message.role == "user" and message.content.strip():
            line = " ".join(message.content.split())
            return line if len(line) <= limit else line[: limit - 1] + "…"
    return ""


__all__ = ["Thread", "ThreadError", "ThreadStore", "ThreadSummary", "title_from", "turn_messages"]
