"""A run's journal on this server, and the kernel's index of journals (see :mod:`onedoor.journal`)."""


from __future__ import annotations

import asyncio
from collections import OrderedDict
from typing import Any, AsyncIterator, Literal, Protocol, get_args

from ..events import STOP_SUSPENDED, Event, RunFailed, RunFinished
from ..limits import Limits
from .cursors import CursorExpired
from .shared import LEASE_TTL, JournalWriter, RemoteJournal, shared_store


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
        self._wake: asyncio.Future[None] | None = None  # made when a reader waits, set by the next event
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

    async def follow(self, after: int = 0) -> AsyncIterator[tuple[int, Event]]:
        """Every event after number ``after``, then live ones, up to a terminal event.

        Raises :class:`CursorExpired` (before yielding) when events after ``after`` are
        no longer held. Leaving early (the client went away) cancels a running run if
        this was its last reader and the run's ``on_disconnect`` is ``"cancel"``."""
        if after + 1 < self._first_seq:
            raise CursorExpired(f"events after {self.cursor(after)} are no longer kept; read the thread instead")
        if after > self.last_seq:
            raise CursorExpired(f"{self.cursor(after)} is not a cursor this run gave out")
        self._followers += 1
        completed = False
        try:
            seq = max(after, 0)
            while True:
                if seq < self._visible_seq:
                    if seq + 1 < self._first_seq:
                        raise CursorExpired(f"this reader fell behind the {self._max_events} events kept for the run")
                    event = self._events[seq + 1 - self._first_seq]
                    seq += 1
                    yield seq, event
                    if isinstance(event, (RunFinished, RunFailed)):
                        completed = True
                        return
                elif not self.running and seq >= self.last_seq:  # caught up; nothing more comes (until a resume)
                    completed = True
                    return
                else:
                    if self._wake is None:
                        self._wake = asyncio.get_running_loop().create_future()
                    await asyncio.shield(self._wake)
        finally:
            self._followers -= 1
            if not completed and self._followers == 0 and self.on_disconnect == "cancel":
                self.cancel()

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
        self._wake_readers()

    def _durable(self, seq: int | None) -> None:
        """The store holds events up to ``seq`` (None: the journal is no longer shared)."""
        self._durable_seq = seq
        self._wake_readers()

    def _ended(self, for_good: bool) -> None:
        self._stream = None
        self.done = for_good
        if self.writer is not None:
            self.writer.poke()
        self._wake_readers()

    def _wake_readers(self) -> None:
        """Wake the readers waiting for more (none waiting: nothing to do, per event)."""
        wake, self._wake = self._wake, None
        if wake is not None and not wake.done():
            wake.set_result(None)


class Journals:
    """The kernel's journals (``kernel.journals``): start a run on one, find one again."""

    def __init__(self, limits: Limits, store: Any = None) -> None:
        self.limits = limits
        self.store = store  # the kernel's thread store: a store that shares journals gets them too
        self._journals: dict[str, RunJournal] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._ended: OrderedDict[str, RunJournal] = OrderedDict()  # ended journals, oldest first
        self._ended_events = 0
        self._names: dict[str, RunJournal] = {}  # other names of runs (Journals.name)

    def __len__(self) -> int:
        return len(self._journals)

    def start(self, stream: Journaled, *, on_disconnect: str = "cancel") -> RunJournal:
        """Drive ``stream`` in a kernel task, journaling its events; a stream of a run that
        already has a journal (a resumed run) continues it."""
        if on_disconnect not in ON_DISCONNECT:
            raise ValueError(f"on_disconnect must be one of {', '.join(ON_DISCONNECT)}")
        journal = self._journals.get(stream.run_id)
        if journal is None or journal.principal != stream.principal:
            journal = RunJournal(stream.run_id, stream.principal, max_events=self.limits.max_journal_events)
            self._journals[stream.run_id] = journal
        if journal.running:
            raise ValueError(f"run {stream.run_id} is already being journaled")
        journal.on_disconnect = on_disconnect
        journal.thread_id = stream.thread.id if stream.thread is not None else journal.thread_id
        journal._stream = stream
        store = shared_store(self.store)
        if store is not None:
            limits = self.limits
            journal.writer = JournalWriter(store, journal, limits.journal_retention, limits.question_ttl + LEASE_TTL)
            journal._durable_seq = journal.last_seq
            journal.writer.start()
        task = asyncio.get_running_loop().create_task(self._drive(journal, stream), name=f"onedoor-journal-{stream.run_id}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        journal.task = task
        return journal

    async def find(self, run_id: str, principal: str) -> RunJournal | RemoteJournal | None:
        """The journal of ``run_id`` for a reader that reattaches: this server's, else (with
        a store that shares journals) the one another server is writing. None: unknown."""
        local = self.get(run_id, principal)
        store = shared_store(self.store)
        if local is not None or store is None or not isinstance(run_id, str):
            return local
        page = await store.journal_read(run_id, principal, 0, limit=0)
        return RemoteJournal(store, run_id, principal, page) if page is not None else None

    def kept(self, run_id: str) -> bool:
        """A journal of this run id (or name) is kept (anyone's)."""
        return run_id in self._journals or run_id in self._names

    def name(self, journal: RunJournal, name: str) -> None:
        """Give ``journal``'s run another name a reader may know it by (AG-UI: the runId of
        a response that resumed it). The caller checks the name is free
        (``kernel.check_run_id``); it is forgotten with the journal."""
        if name != journal.run_id and name not in journal.names:
            journal.names.append(name)
            self._names[name] = journal

    def named(self, name: str, principal: str) -> RunJournal | None:
        """The journal of the run with this id or name, if it is ``principal``'s."""
        journal = self.get(name, principal)
        if journal is None and isinstance(name, str):
            found = self._names.get(name)
            journal = found if found is not None and found.principal == principal else None
        return journal

    def of_thread(self, thread_id: str, principal: str) -> list[RunJournal]:
        """The kept journals of ``principal``'s runs on ``thread_id``, oldest first."""
        return [j for j in self._journals.values() if j.thread_id == thread_id and j.principal == principal]

    def forget_thread(self, thread_id: str, principal: str) -> int:
        """Drop the journals of a deleted thread at once (they hold its text): readers find
        the runs unknown, and a reader still following one gets no more of it.
        ``kernel.forget_thread`` also cancels the runs. Returns how many were dropped."""
        mine = self.of_thread(thread_id, principal)
        for journal in mine:
            journal.forgotten = True
            self._drop(journal)
        return len(mine)

    def _drop(self, journal: RunJournal) -> None:
        journal.dropped = True
        if self._ended.pop(journal.run_id, None) is journal:
            self._ended_events -= len(journal._events)
        if self._journals.get(journal.run_id) is journal:
            del self._journals[journal.run_id]
        for name in journal.names:
            if self._names.get(name) is journal:
                del self._names[name]
        if journal.forgotten:  # a deleted thread's text: not even a reader holding the journal gets it
            journal._first_seq += len(journal._events)
            journal._events.clear()

    def get(self, run_id: str, principal: str) -> RunJournal | None:
        journal = self._journals.get(run_id) if isinstance(run_id, str) else None
        return journal if journal is not None and journal.principal == principal else None

    async def _drive(self, journal: RunJournal, stream: Journaled) -> None:
        for_good = True
        try:
            async with stream:
                async for event in stream:
                    journal._append(event)
            for_good = not stream.suspended
        finally:
            if stream.thread is not None:
                journal.thread_id = stream.thread.id
            journal._ended(for_good)
            limits = self.limits
            keep = limits.journal_retention + (0 if for_good else limits.question_ttl)
            asyncio.get_running_loop().call_later(keep, self._forget, journal)
            if for_good:
                self._keep_within_budget(journal)

    def _keep_within_budget(self, ended: RunJournal) -> None:
        """Ended journals hold at most ``limits.max_kept_journal_events`` events in all: past
        it, the oldest ended ones go before their retention is over (their readers get
        "unknown run" and read the thread instead)."""
        if ended.forgotten:  # its thread was deleted while it ran
            self._drop(ended)
            return
        previous = self._ended.pop(ended.run_id, None)
        if previous is not None:
            self._ended_events -= len(previous._events)
        self._ended[ended.run_id] = ended
        self._ended_events += len(ended._events)
        budget = self.limits.max_kept_journal_events
        while self._ended_events > budget and len(self._ended) > 1:
            oldest = next(iter(self._ended.values()))
            self._drop(oldest)

    def _forget(self, journal: RunJournal) -> None:
        if not journal.running:
            self._drop(journal)
