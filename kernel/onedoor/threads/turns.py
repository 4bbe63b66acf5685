"""A run's turn on its thread: what it adds (:class:`TurnRecorder`) and how it is kept
(:func:`append_turn`)."""

from __future__ import annotations

import asyncio
import random
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Iterable, Sequence

from ..events import TextDelta, ToolFinished, ToolStarted, type_name
from ..messages import Message, ToolCall
from ..usage import ModelUsage
from ..wire import join_surrogates
from .model import Thread, ThreadError, ThreadStore

if TYPE_CHECKING:
    from ..content import Part


class TurnRecorder:
    """Builds what one run adds to its thread, without copying its text: the text comes
    from the run's contract (a list of parts) at the end; tool events and reply parts
    (``ReplyPart``) note where in that list they fell. Only those pass through :meth:`note`.
    ``parts``: the user's message's content, when it is more than text."""

    __slots__ = ("message", "parts", "marks")

    def __init__(self, message: str, parts: Sequence[Part] = ()) -> None:
        self.message = message
        self.parts = tuple(parts)
        self.marks: list[tuple[int, Any]] = []  # (number of text parts before it, event)

    def note(self, event: Any, parts: Sequence[str]) -> None:
        kind = type(event)
        if kind is ToolStarted or kind is ToolFinished or type_name(event) == "reply_part":
            self.marks.append((len(parts), event))

    def messages(
        self, parts: Sequence[str], *, interrupted: str = "", usage: Sequence[ModelUsage] = ()
    ) -> list[Message]:
        """The user's message, then the assistant's turn as the history format has it (an
        assistant message carrying the tool calls it made, a ``tool`` message per result,
        the reply, its reply parts in place). ``interrupted`` (e.g. "cancelled") is noted on
        a reply cut short; ``usage`` (the run's) goes on the turn's last assistant message."""
        out = [Message("user", self.message, parts=self.parts)] if self.message or self.parts else []
        calls: list[ToolCall] = []
        results: list[Message] = []
        replies: list[tuple[int, Part]] = []  # the current assistant message's reply parts
        text_from = 0  # the current assistant message's text: parts[text_from:text_to]
        text_to: int | None = None  # where its first tool call was made

        def assistant(start: int, stop: int | None, tool_calls: Sequence[ToolCall] = ()) -> Message:
            text = join_surrogates("".join(parts[start:stop]))
            if not replies:
                return Message("assistant", text, tuple(tool_calls))
            from ..content import text_of  # (a turn with reply parts: content is loaded)

            content = _interleaved(parts, start, stop, replies)
            replies.clear()
            return Message("assistant", text_of(content), tuple(tool_calls), parts=content)

        def emit() -> None:
            out.append(assistant(text_from, text_to, calls))
            out.extend(results)
            calls.clear()
            results.clear()

        for at, event in self.marks:
            kind = type(event)
            if results and kind is not ToolFinished:  # the calls before were answered: the next message
                emit()
                text_from, text_to = text_to or 0, None
            if kind is not ToolStarted and kind is not ToolFinished:  # a ReplyPart (all note() keeps)
                replies.append((at, event.part))
            elif kind is ToolStarted:
                if text_to is None:
                    text_to = at
                calls.append(ToolCall(event.call_id, event.name, event.arguments))
            else:
                results.append(Message("tool", event.result_text(), tool_call_id=event.call_id, parts=event.parts))
        if calls:
            emit()
            text_from = text_to or 0
        rest = assistant(text_from, None)
        if rest.content or rest.parts:
            out.append(rest)
        if interrupted:
            _note_interrupted(out, interrupted)
        if usage:
            _put_usage(out, usage)
        return out


def _note_interrupted(out: list[Message], interrupted: str) -> None:
    """The turn's reply says it was cut short (e.g. "[reply cancelled]")."""
    last = out[-1] if out and out[-1].role == "assistant" else None
    note = f"[reply {interrupted}]"
    if last is None:
        out.append(Message("assistant", note))
    else:
        from ..content import Part

        extra = (*last.parts, Part.of_text("\n" + note)) if last.parts else ()
        out[-1] = replace(last, content=f"{last.content}\n{note}" if last.content else note, parts=extra)


def _put_usage(out: list[Message], usage: Sequence[ModelUsage]) -> None:
    """The run's usage goes on the turn's last assistant message."""
    for index in range(len(out) - 1, -1, -1):
        if out[index].role == "assistant":
            out[index] = replace(out[index], usage=tuple(usage))
            return


def _interleaved(texts: Sequence[str], start: int, stop: int | None, replies: Sequence[tuple[int, Part]]) -> tuple[Part, ...]:
    """An assistant message's content: its text cut where each reply part came."""
    from ..content import Part

    out: list[Part] = []
    at = start
    for where, part in replies:
        where = max(at, where if stop is None else min(where, stop))
        if where > at:
            out.append(Part.of_text(join_surrogates("".join(texts[at:where]))))
            at = where
        out.append(part)
    tail = join_surrogates("".join(texts[at:stop]))
    if tail:
        out.append(Part.of_text(tail))
    return tuple(out)


def turn_messages(
    message: str, events: Iterable[Any], *, interrupted: str = "", parts: Sequence[Part] = ()
) -> list[Message]:
    """:class:`TurnRecorder` over a list of events (for tests and doors that kept them); the
    usage of a terminal event among them goes on the reply."""
    recorder = TurnRecorder(message, parts)
    usage: Sequence[ModelUsage] = ()
    texts: list[str] = []
    for event in events:
        if type(event) is TextDelta:
            texts.append(event.text)
        else:
            usage = getattr(event, "usage", None) or usage
            recorder.note(event, texts)
    return recorder.messages(texts, interrupted=interrupted, usage=usage)


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
