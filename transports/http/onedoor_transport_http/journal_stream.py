"""A run's journal as what an :class:`~onedoor_transport_http.sse.EventStream` streams,
for every door with resumable streams (REST, AG-UI).

A door hands each run it streams to ``kernel.journals.start(stream, on_disconnect=...)``
and answers with a :class:`JournalSource` reading that journal: it iterates
``(seq, event)`` pairs, so the door's encoder can write each event's cursor
(``journal.cursor(seq)``) as its SSE ``id:``. A reader that comes back (``GET
.../runs/{id}/events``) names where it stopped with ``Last-Event-ID`` or ``?after=``:
:func:`requested_cursor` reads it, :func:`onedoor.read_cursor` checks it against the
run, and :func:`open_source` checks the journal still holds what follows before the door
answers 200 (a :class:`~onedoor.CursorError` otherwise: 422 or 409 from the one table in
:mod:`.errors`).

A client going away only stops its reader: what that does to the run is the journal's
``on_disconnect`` (``cancel`` once its last reader has left, or ``finish`` into its thread).

Doors answer with :func:`event_stream`: for a reader of this server's journal it is a
:class:`JournalEventStream`, whose events are handed over by the kernel's task that
journals them (``RunJournal.deliver``) and encoded there, straight into the response's
frames: an event costs no task switch between the journal and the response's writer.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, AsyncIterator
from urllib.parse import parse_qs

from onedoor import CursorExpired, RunJournal, read_cursor
from onedoor.journal import StoreOutage

from .sse import MAX_PENDING, EventStream, _Flow

log = logging.getLogger("onedoor.transport.http")


def requested_cursor(scope: dict[str, Any]) -> str | None:
    """The cursor a reattaching client sent: ``?after=`` first, else ``Last-Event-ID``."""
    values = parse_qs(scope.get("query_string", b"").decode("latin-1")).get("after")
    if values and values[-1]:
        return values[-1]
    for name, value in scope.get("headers") or ():
        if name == b"last-event-id":
            return value.decode("latin-1").strip() or None
    return None


def seq_of(journal: Any, cursor: str | None, default: int = 0) -> int:
    """The journal number after ``cursor`` for this run (CursorError if it is not one of its)."""
    return read_cursor(cursor, journal.run_id, journal.epoch, default=default)


async def _first(reader: AsyncIterator[tuple[int, Any]]) -> tuple[int, Any] | None:
    try:
        return await reader.__anext__()
    except StopAsyncIteration:
        return None


class JournalSource:
    """One response's reader of a run's journal, from number ``after``.

    ``first``: a task already reading the first pair (:func:`open_source` checks the cursor
    before the door answers). ``cancel()`` (the client went away) only stops this reader.
    ``behind``: why it had to stop early (it fell behind the events the journal keeps).
    """

    suspended = False  # the transport may always call cancel(): it only stops this reader

    def __init__(self, journal: Any, after: int = 0, *, first: asyncio.Task[Any] | None = None, reader: Any = None) -> None:
        self.journal = journal
        self.run_id = journal.run_id
        self.after = after
        self.seq = after  # the number of the event read last
        self.outcome: Any = None
        self.behind = ""
        self.cut = ""  # why the reading stopped with the run going on (no ending is sent: the client reconnects)
        self._reader = reader  # made when first iterated (a pushed reader never needs one)
        self._first = first
        self._task: asyncio.Task[Any] | None = None

    async def __aenter__(self) -> "JournalSource":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        if self._first is not None and not self._first.done():
            self._first.cancel()
        if self._reader is not None:
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
            self.seq = pair[0]
            yield pair
        if self._reader is None:
            self._reader = self.journal.follow(after=self.after)
        try:
            async for pair in self._reader:
                self.seq = pair[0]
                yield pair
        except CursorExpired as exc:  # a reader slower than the journal's event cap: nothing more to give
            self.behind = str(exc)
        except StoreOutage as exc:  # another server's run, and the store is out: the client comes back later
            self.cut = str(exc)

    @property
    def pushes(self) -> bool:
        """Its events can be handed over as the journal keeps them (:meth:`deliver`)."""
        return self._first is None and isinstance(self.journal, RunJournal)

    async def deliver(self, put: Any, room: Any) -> None:
        """Hand ``put(seq, event)`` every event this reader gets (see ``RunJournal.deliver``);
        what iterating it would end with (falling behind, the store out) ends this too."""
        self._task = asyncio.current_task()
        try:
            await self.journal.deliver(put, self.after, room=room)
        except CursorExpired as exc:
            self.behind = str(exc)

    def cancel(self, grace: float | None = None) -> None:
        """The client went away: stop reading (leaving the journal tells the run)."""
        if self._task is not None and not self._task.done():
            self._task.cancel()


async def open_source(journal: Any, after: int) -> JournalSource:
    """A reader from ``after``; :class:`~onedoor.CursorExpired` before anything is answered
    when the journal no longer holds what follows it."""
    reader = journal.follow(after=after)
    first = asyncio.ensure_future(_first(reader))
    # a local journal checks the cursor before its first wait; one another server writes
    # reads the store first (a millisecond): wait that long, not for a live event
    await asyncio.wait({first}, timeout=0 if isinstance(journal, RunJournal) else 0.25)
    if first.done() and first.exception() is not None:
        await reader.aclose()
        raise first.exception()  # type: ignore[misc]
    return JournalSource(journal, after, first=first, reader=reader)


class JournalEventStream(EventStream):
    """An :class:`~onedoor_transport_http.sse.EventStream` of a :class:`JournalSource` whose
    events are pushed to it (``source.pushes``); the same response otherwise (headers,
    coalescing, keep-alives, backpressure, one ending, disconnects)."""

    def _flow(self) -> _Flow:
        return _PushedFlow(self) if getattr(self.run, "pushes", False) else super()._flow()


class _PushedFlow(_Flow):
    """The response's frames filled by ``put``, which the journal's task calls per event."""

    async def pump(self) -> None:
        stream = self.stream
        source, encode = stream.run, stream.encode
        frames, ready = self.frames, self.ready
        error: str | None = None
        last: Any = None

        def put(seq: int, event: Any) -> bool:
            nonlocal last
            last = (seq, event)
            source.seq = seq
            data = encode(last)
            if data:
                frames.append(data)
                ready.set()
            return len(frames) < MAX_PENDING or self.stopping

        try:
            async with source:
                await source.deliver(put, self._room)
        except Exception as exc:  # the door itself failed: still end the stream properly
            error = f"the door failed while streaming: {type(exc).__name__}: {exc}"
            log.error("streaming run %s failed", getattr(source, "run_id", "?"), exc_info=True)
        finally:
            stream._last = last
            tail = stream._ending(error)
            if tail:
                frames.append(tail)
            self.done = True
            ready.set()

    async def _room(self) -> None:
        """Wait until the writer has taken the frames (or stopped)."""
        if len(self.frames) >= MAX_PENDING and not self.stopping:
            self.room.clear()
            await self.room.wait()


def event_stream(source: Any, encode: Any, **options: Any) -> EventStream:
    """The response streaming ``source``: a :class:`JournalEventStream` for a
    :class:`JournalSource`, else an :class:`~onedoor_transport_http.sse.EventStream`."""
    kind = JournalEventStream if isinstance(source, JournalSource) else EventStream
    return kind(source, encode, **options)


__all__ = ["JournalEventStream", "JournalSource", "event_stream", "open_source", "requested_cursor", "seq_of"]
