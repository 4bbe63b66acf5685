"""A run's turn on its thread: what it adds (:class:`TurnRecorder`) and how it is kept
(:func:`append_turn`)."""

from __future__ import annotations

import asyncio
import random
from typing import Any, Iterable, Sequence

from ..events import TextDelta, ToolFinished, ToolStarted
from ..messages import Message, ToolCall
from ..wire import join_surrogates
from .model import Thread, ThreadError, ThreadStore


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
            out.append(Message("assistant", join_surrogates("".join(parts[text_from:text_to])), tuple(calls)))
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
        rest = join_surrogates("".join(parts[text_from:]))
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


class _Writers:
    """The writers of one thread in this process, one at a time, and the version the last
    of them left (so the next need not re-read it). Gone once nobody writes the thread."""

    __slots__ = ("lock", "version", "users")

    def __init__(self) -> None:
        self.lock = asyncio.Lock()
        self.version = -1
        self.users = 0


_writers: dict[tuple[int, str], _Writers] = {}


async def append_turn(store: ThreadStore, thread: Thread, messages: Sequence[Message], *, attempts: int = 32) -> Thread:
    """Append a run's turn, after every turn already kept: turns are never merged or lost,
    only ordered by when they were saved.

    In one process the writers of a thread take turns (one lock per thread), so many turns
    on one thread at once all land without a conflict. Another process writing the same
    thread (several servers on one database) can still get there first: then the store's
    compare-and-set says so, the thread is re-read and the turn goes after it; writers that
    keep colliding back off a little, at random, so one of them always gets through."""
    key = (id(store), thread.id)
    writers = _writers.get(key)
    if writers is None:
        writers = _writers[key] = _Writers()
    writers.users += 1
    try:
        async with writers.lock:
            version = max(thread.version, writers.version)
            for attempt in range(attempts):
                try:
                    kept = await store.append(thread.owner, thread.id, messages, expected_version=version)
                    writers.version = kept.version
                    return kept
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
    finally:
        writers.users -= 1
        if not writers.users and _writers.get(key) is writers:
            del _writers[key]


def title_from(messages: Sequence[Message], limit: int = 80) -> str:
    """A thread's default title: its first user message, on one line, cut at ``limit``."""
    for message in messages:
        if message.role == "user" and message.content.strip():
            line = " ".join(message.content.split())
            return line if len(line) <= limit else line[: limit - 1] + "…"
    return ""


__all__ = ["TurnRecorder", "append_turn", "title_from", "turn_messages"]
