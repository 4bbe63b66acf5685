"""A run's journal on this server (see :mod:`onedoor.journal`); the kernel's index of them is in :mod:`.index`."""


from __future__ import annotations

import asyncio
import contextlib
from typing import Any, AsyncIterator, Awaitable, Callable, Literal, Protocol, get_args

from ..events import STOP_SUSPENDED, Event, RunFailed, RunFinished
from .cursors import CursorExpired
from .shared import JournalWriter


class Journaled(Protocol):
    """What a journal drives: a run's event stream (the kernel's ``RunStream``)."""

    @property
    def run_id(self) -> str: ...

    @property
    def principal(self) -> str: ...

    @property
    def thread(self) -> Any: ...  # the run's Thread, or None

    @property
    def suspended(self) -> bool: ...

    def cancel(self, grace: float | None = None) -> None: ...

    def __aiter__(self) -> AsyncIterator[Event]: ...

    async def __aenter__(self) -> Any: ...

    async def __aexit__(self, *exc: Any) -> None: ...

OnDisconnect = Literal["cancel", "finish"]  # the type of a door's on_disconnect option
ON_DISCONNECT: tuple[str, ...] = get_args(OnDisconnect)


class RunJournal:
    """One run's numbered events and the task driving it (see the module docstring)."""

    def __init__(self, run_id: str, principal: str, *, max_events: int) -> None:
        self.run_id = run_id
        self.principal = principal
        self.thread_id: str | None = None
        self.epoch = 0
        self.on_disconnect = "cancel"
        self._events: list[Event] = []
        self._first_seq = 1  # the number of self._events[0]
        self._max_events = max(1, max_events)
        self._waiters: list[asyncio.Future[None]] = []  # one per reader of follow() waiting for more
        self._sinks: list[_Sink] = []  # readers of deliver() that are caught up: handed each event as it comes
        self._stream: Journaled | None = None
        self.task: asyncio.Task[None] | None = None  # the kernel's task driving its stream now
        self._followers = 0
        self._durable_seq: int | None = None  # with a shared journal: the last number the store holds
        self.writer: JournalWriter | None = None
        self.done = False  # the run has ended for good (not just suspended for answers)
        self.forgotten = False  # its thread was deleted: dropped as soon as the run ends
        self.dropped = False  # no longer kept by the kernel (retention, budget, deleted thread)
        self.names: list[str] = []  # other names doors gave the run (Journals.name)
        self.notes: dict[str, Any] = {}  # what doors keep about the run, one key per door; it goes with the journal
        self.notes_version = 0  # counts changes of notes and names (Journals.note, Journals.name): what a store lacks

    @property
    def last_seq(self) -> int:
        return self._first_seq + len(self._events) - 1

    @property
    def first_held_seq(self) -> int:
        return self._first_seq

    @property
    def _visible_seq(self) -> int:
        """The last number readers may have: with a shared journal, what the store holds."""
        last = self.last_seq
        return last if self._durable_seq is None else min(last, self._durable_seq)

    def events_after(self, seq: int) -> list[Event]:
        return self._events[max(0, seq + 1 - self._first_seq):]

    @property
    def running(self) -> bool:
        """A stream is being driven (False between a suspension and its resume, and after the end)."""
        return self._stream is not None

    def cursor(self, seq: int) -> str:
        return f"{self.run_id}:{self.epoch}:{seq}"

    def cancel(self) -> None:
        if self._stream is not None:
            self._stream.cancel()

    def _check_after(self, after: int) -> None:
        if after + 1 < self._first_seq:
            raise CursorExpired(f"events after {self.cursor(after)} are no longer kept; read the thread instead")
        if after > self.last_seq:
            raise CursorExpired(f"{self.cursor(after)} is not a cursor this run gave out")

    def _fell_behind(self) -> CursorExpired:
        return CursorExpired(f"this reader fell behind the {self._max_events} events kept for the run")

    def _left(self, completed: bool) -> None:
        """A reader has stopped: the last one leaving a running run early cancels it (``cancel``)."""
        self._followers -= 1
        if not completed and self._followers == 0 and self.on_disconnect == "cancel":
            self.cancel()

    async def follow(self, after: int = 0) -> AsyncIterator[tuple[int, Event]]:
        """Every event after number ``after``, then live ones, up to a terminal event.

        Raises :class:`CursorExpired` (before yielding) when events after ``after`` are
        no longer held. Leaving early (the client went away) cancels a running run if
        this was its last reader and the run's ``on_disconnect`` is ``"cancel"``."""
        self._check_after(after)
        self._followers += 1
        completed = False
        try:
            seq = max(after, 0)
            while True:
                if seq < self._visible_seq:
                    if seq + 1 < self._first_seq:
                        raise self._fell_behind()
                    event = self._events[seq + 1 - self._first_seq]
                    seq += 1
                    yield seq, event
                    if isinstance(event, _ENDINGS):
                        completed = True
                        return
                elif not self.running and seq >= self.last_seq:  # caught up; nothing more comes (until a resume)
                    completed = True
                    return
                else:
                    waiter = asyncio.get_running_loop().create_future()
                    self._waiters.append(waiter)
                    try:
                        await waiter
                    except asyncio.CancelledError:
                        with contextlib.suppress(ValueError):
                            self._waiters.remove(waiter)
                        raise
        finally:
            self._left(completed)

    async def deliver(self, put: Callable[[int, Event], bool], after: int = 0, *,
                      room: Callable[[], Awaitable[None]]) -> None:
        """What :meth:`follow` yields, handed to ``put(seq, event)`` instead, with no task
        switch per event once the reader has caught up: the kernel's task journaling the run
        calls ``put`` as it keeps each event (a reader that can take no more now, ``put``
        returning False, gets the rest in this task once ``await room()`` returns). Returns
        after the terminal event, or once the run has stopped with nothing more to read.
        An exception ``put`` raises comes out of here. The same checks and the same
        ``on_disconnect`` as :meth:`follow`."""
        self._check_after(after)
        self._followers += 1
        completed = False
        try:
            seq = max(after, 0)
            while True:
                while seq < self._visible_seq:  # what is held already, read in this task
                    if seq + 1 < self._first_seq:
                        raise self._fell_behind()
                    event = self._events[seq + 1 - self._first_seq]
                    seq += 1
                    more = put(seq, event)
                    if isinstance(event, _ENDINGS):
                        completed = True
                        return
                    if not more:
                        await room()
                if not self.running and seq >= self.last_seq:
                    completed = True
                    return
                sink = _Sink(seq, put, asyncio.get_running_loop().create_future())
                self._sinks.append(sink)
                try:
                    await sink.parked
                finally:
                    self._release(sink)
                seq = sink.seq
                if sink.error is not None:
                    raise sink.error
                if sink.ended:
                    completed = True
                    return
                if sink.full:
                    await room()
        finally:
            self._left(completed)

    # -- the kernel's side ----------------------------------------------------------------
    def _append(self, event: Event) -> None:
        self._events.append(event)
        if self.writer is not None:
            self.writer.poke()
        if isinstance(event, RunFailed) or (isinstance(event, RunFinished) and event.stop_reason != STOP_SUSPENDED):
            self.done = True  # the turn is in its thread by now (kept before the terminal event)
        if len(self._events) > self._max_events:
            drop = len(self._events) - self._max_events
            del self._events[:drop]
            self._first_seq += drop
        if self._sinks and self._durable_seq is None:
            self._push()
        if self._waiters:
            self._wake_readers()

    def _durable(self, seq: int | None) -> None:
        """The store holds events up to ``seq`` (None: the journal is no longer shared)."""
        self._durable_seq = seq
        if self._sinks:
            self._push()
        self._wake_readers()

    def _ended(self, for_good: bool) -> None:
        self._stream = None
        self.done = for_good
        if self.writer is not None:
            self.writer.poke()
        self._push()
        self._release_all()
        self._wake_readers()

    def _wake_readers(self) -> None:
        """Wake the readers of :meth:`follow` waiting for more."""
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    def _push(self) -> None:
        """Hand the caught-up readers of :meth:`deliver` every event they may have now."""
        visible = self._visible_seq
        sinks = self._sinks
        if len(sinks) == 1:
            self._feed(sinks[0], visible)
        else:
            for sink in list(sinks):
                self._feed(sink, visible)

    def _feed(self, sink: "_Sink", visible: int) -> None:
        events, first, put = self._events, self._first_seq, sink.put
        seq = sink.seq
        while seq < visible:
            seq += 1
            if seq < first:  # not kept any more: its reader finds out in its own task
                break
            event = events[seq - first]
            try:
                more = put(seq, event)
            except Exception as exc:  # noqa: BLE001 - the reader's own failure: it raises it in its task
                sink.error = exc
                break
            sink.seq = seq
            if isinstance(event, _ENDINGS):
                sink.ended = True
                break
            if not more:
                sink.full = True
                break
        else:
            return
        self._release(sink)

    def _release(self, sink: "_Sink") -> None:
        """``sink`` gets no more events pushed: its reader goes on in its own task."""
        if sink in self._sinks:
            self._sinks.remove(sink)
        if not sink.parked.done():
            sink.parked.set_result(None)

    def _release_all(self) -> None:
        for sink in list(self._sinks):
            self._release(sink)


_ENDINGS = (RunFinished, RunFailed)


class _Sink:
    """A reader of :meth:`RunJournal.deliver` being handed events by the task journaling them."""

    __slots__ = ("seq", "put", "parked", "error", "ended", "full")

    def __init__(self, seq: int, put: Callable[[int, Event], bool], parked: asyncio.Future[None]) -> None:
        self.seq = seq  # the last number handed over
        self.put = put
        self.parked = parked  # resolved when events stop being pushed to it
        self.error: Exception | None = None  # what put raised
        self.ended = False  # it was handed the terminal event
        self.full = False  # put said it has no room now
