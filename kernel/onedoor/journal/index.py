"""The kernel's index of journals (``kernel.journals``; see :mod:`onedoor.journal`)."""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from typing import Any, Callable

from ..limits import Limits
from .answers import answer_store, keep_parked
from .local import ON_DISCONNECT, Journaled, RunJournal
from .notes import read_notes, run_named, runs_on
from .shared import LEASE_TTL, JournalWriter, RemoteJournal, fit_store, shared_store


class Journals:
    """The kernel's journals (``kernel.journals``): start a run on one, find one again."""

    def __init__(self, limits: Limits, store: Any = None) -> None:
        self.limits = limits
        self._store: Any = None
        self.store = store
        self._journals: dict[str, RunJournal] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._ended: OrderedDict[str, RunJournal] = OrderedDict()  # ended journals, oldest first
        self._ended_events = 0
        self._names: dict[str, RunJournal] = {}  # other names of runs (Journals.name)
        # the kernel's (take answers left by another server, cancel a parked run): see .answers
        self.parked_hooks: tuple[Callable[[str, str, str], None], Callable[[str, str], None]] | None = None

    def __len__(self) -> int:
        return len(self._journals)

    @property
    def store(self) -> Any:
        """The kernel's thread store: a store that shares journals gets them too (and is told
        the run limit, :func:`~onedoor.journal.shared.fit_store`)."""
        return self._store

    @store.setter
    def store(self, store: Any) -> None:
        self._store = store
        fit_store(store, self.limits)

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
            if journal.writer is not None:
                journal.writer.poke()  # a parked run's writer looking for answers: it stops at once
            journal.writer = JournalWriter(store, journal, limits.journal_retention, limits.question_ttl + LEASE_TTL)
            journal._durable_seq = journal.last_seq
            hooks = self.parked_hooks
            if hooks is not None and answer_store(store) is not None:
                journal.writer.while_parked = lambda writer: keep_parked(writer, *hooks)
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
        if page is None:
            return None
        remote = RemoteJournal(store, run_id, principal, page)
        remote.notes = await read_notes(store, run_id, principal)
        return remote

    async def find_named(self, name: str, principal: str) -> RunJournal | RemoteJournal | None:
        """:meth:`find` by the run's id or another name of it (:meth:`name`): this server's,
        else the store's (names and notes shared: :mod:`onedoor.journal.notes`)."""
        local = self.named(name, principal)
        store = shared_store(self.store)
        if local is not None or store is None or not isinstance(name, str):
            return local
        found = await self.find(name, principal)
        if found is not None:
            return found
        run_id = await run_named(store, name, principal)
        return await self.find(run_id, principal) if run_id is not None and run_id != name else None

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
            self._noted(journal)

    def note(self, journal: RunJournal, key: str, value: Any) -> None:
        """Set a door's note of the run (``journal.notes[key]``, JSON for a store that shares
        it: :mod:`onedoor.journal.notes`); a note set in place is shared by calling this again."""
        journal.notes[key] = value
        self._noted(journal)

    def adopt(self, journal: RunJournal, names: Any, notes: dict[str, Any]) -> None:
        """Give a run just started (before its first event) the names and notes a door on
        another server sent with its answers (``kernel.answer``)."""
        for name in names:
            self.name(journal, name)
        for key, value in notes.items():
            self.note(journal, key, value)

    def _noted(self, journal: RunJournal) -> None:
        journal.notes_version += 1
        if journal.writer is not None:
            journal.writer.poke()

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

    async def others_on_thread(self, thread_id: str, principal: str, *, ended: bool = False) -> list[RemoteJournal]:
        """The runs of ``principal`` another server is writing on ``thread_id`` (also one
        waiting for answers; ``ended``: also those the store keeps that have ended, last
        to end first), at most four: with a store that shares journals and notes, else none."""
        store = shared_store(self.store)
        found: list[RemoteJournal] = []
        for run_id in await runs_on(store, thread_id, principal, ended) if store is not None else ():
            journal = None if self.get(run_id, principal) is not None else await self.find(run_id, principal)
            if isinstance(journal, RemoteJournal) and (ended or not journal.done):
                found.append(journal)
        return found

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
            journal._release_all()

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
