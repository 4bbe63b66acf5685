"""Resumable event streams: every SSE event of the REST door carries its journal cursor.

The door hands each streamed run to the kernel's journal (``kernel.journals.start``) and
answers with a reader of it: every event goes out as ``id: <cursor>`` plus the usual
``event:`` and ``data:`` lines. A client that lost its connection reconnects to
``GET <prefix>/runs/{run_id}/events`` with ``Last-Event-ID: <cursor>`` (what
``EventSource`` sends by itself) or ``?after=<cursor>`` and gets every later event
exactly once, then the live ones, up to the run's ending.

What the client going away does is the journal's business (the door's ``on_disconnect``
option): ``cancel`` ends the run once its last reader has left, ``finish`` lets it run on
into its thread. A reader that leaves only stops reading.
"""

from __future__ import annotations

import asyncio
from typing import Any, AsyncIterator

from onedoor import CursorExpired, encode_json
from onedoor.events import TYPE_NAMES, QuestionAsked, RunFailed, RunFinished, TextDelta, event_to_dict

_TERMINAL = (RunFinished, RunFailed)


async def first_event(reader: AsyncIterator[tuple[int, Any]]) -> tuple[int, Any] | None:
    """The reader's first (seq, event), or None when it has nothing more to give."""
    try:
        return await reader.__anext__()
    except StopAsyncIteration:
        return None


class FollowedRun:
    """One response's reader of a run's journal, shaped as the HTTP transport's
    :class:`~onedoor_transport_http.sse.EventStream` wants a run: it iterates
    ``(seq, event)`` pairs; ``cancel()`` (the client went away) stops the reading, and
    the journal decides whether the run goes on.

    ``first``: a task already reading the first pair (a reattach checks the cursor
    before it answers 200), else reading starts at ``after``.
    """

    def __init__(self, journal: Any, after: int = 0, first: asyncio.Task[Any] | None = None, reader: Any = None) -> None:
        self.journal = journal
        self.run_id = journal.run_id
        self.outcome: Any = None
        self.suspended = False  # the transport may always call cancel(): it only stops this reader
        self.last: Any = None  # the last event read
        self._reader = reader if reader is not None else journal.follow(after=after)
        self._first = first
        self._task: asyncio.Task[Any] | None = None
        self.behind = ""  # why this reader had to stop early: it fell behind what the journal keeps

    async def __aenter__(self) -> "FollowedRun":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        if self._first is not None and not self._first.done():
            self._first.cancel()
        await self._reader.aclose()

    @property
    def empty(self) -> bool:
        """Known already: there is nothing to read (the cursor was the run's last event)."""
        first = self._first
        return first is not None and first.done() and not first.cancelled() and first.exception() is None \
            and first.result() is None

    def __aiter__(self) -> AsyncIterator[tuple[int, Any]]:
        return self._read()

    async def _read(self) -> AsyncIterator[tuple[int, Any]]:
        self._task = asyncio.current_task()
        if self._first is not None:
            pair = await self._first
            if pair is None:
                return
            self.last = pair[1]
            yield pair
        try:
            async for pair in self._reader:
                self.last = pair[1]
                yield pair
        except CursorExpired as exc:  # a reader slower than the journal's event cap: nothing more to give
            self.behind = str(exc)

    def cancel(self, grace: float | None = None) -> None:
        """The client went away: stop reading (leaving the journal tells the run)."""
        if self._task is not None and not self._task.done():
            self._task.cancel()

    def close(self, error: str | None) -> bytes:
        """The frames that end the response when the run's own ending did not: a RunFailed
        when the door failed while encoding or the reader fell behind the events the
        journal keeps (``limits.max_journal_events``), else none (the reader was cut
        short: the client went away, and may come back for the rest)."""
        if error is None and self.behind:
            error = f"{self.behind}; the run goes on: read its thread for the reply"
        if error is None:
            return b""
        frame = encode_json(event_to_dict(RunFailed(self.run_id, error)))
        return b"event: run_failed\ndata: " + frame + b"\n\n"


_TEXT_HEAD = b'\nevent: text_delta\ndata: {"type":"text_delta","text":'


def journal_encoder(journal: Any, ledger: Any) -> Any:
    """SSE frames for ``(seq, event)`` pairs of ``journal``: ``id: <cursor>``, the event's
    type and its JSON; a ``question_asked`` event also goes in ``ledger`` (the answers
    calls check against it)."""
    cursor = journal.cursor

    def encode(pair: tuple[int, Any]) -> bytes:
        seq, event = pair
        kind = type(event)
        head = b"id: " + cursor(seq).encode()
        if kind is TextDelta:
            return head + _TEXT_HEAD + encode_json(event.text) + b"}\n\n"
        if kind is QuestionAsked:
            ledger.note(event.question)
        return head + b"\nevent: " + TYPE_NAMES[kind].encode() + b"\ndata: " + encode_json(event_to_dict(event)) + b"\n\n"

    return encode


__all__ = ["FollowedRun", "first_event", "journal_encoder"]
