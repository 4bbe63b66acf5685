"""Journals shared through the store, so a reader can reattach through any server.

A store that sets ``shares_journals = True`` and has the methods of
:class:`SharedJournalStore` keeps every journaled run's events, with the run's
principal, thread and a *lease*: the server driving the run renews it while the run
lives. Then:

- the driving server writes each batch of events to the store **before** its own
  readers get them (a reader anywhere never sees an event the store does not hold);
  writes are grouped: while one is in flight, the next events wait and go together;
- ``kernel.journals.find(run_id, principal)`` on another server returns a
  :class:`RemoteJournal` that follows the run by reading the store: when the store pushes
  news of its journals (``journal_watch``, below; PostgreSQL's ``LISTEN/NOTIFY``) it reads
  as soon as the store says there is more, and it also polls, backing off from 5 ms to
  200 ms, in case news is lost (a store without news: polling only);
- a reader whose run's lease ran out with no ending gets
  ``RunFailed("the server running it stopped")``: nothing stays pending forever;
- ``cancel()`` on a remote journal asks the store; the driving server hears of it at once
  from a store with news, else when it next writes or renews its lease (at most
  ``LEASE_RENEW`` seconds), and cancels the run.

A store with news has ``journal_watch(run_id, kind, callback) -> stop``: it calls
``callback()`` on the event loop whenever there may be news of ``kind`` for the run
(``"events"``: events, a renewed lease or the ending written; ``"cancel"``: a cancel
asked), spuriously at times, and returns the function that stops watching; and
``journal_news_live() -> bool``: True while it is sure to tell every watcher of every news
(it calls them all when that changes). While news is live a reader polls only once a
second, as a safety net; otherwise it polls as a store without news.

A store write that fails (the database restarting, a network gone) is tried again, backing
off, until it goes through: the run goes on meanwhile, what it sent is written once the
store is back (its lease renewed), and no reader anywhere is told the run failed or its
server stopped because of an outage. This server's readers wait for the store at most
``OUTAGE_GRACE`` seconds, then go on without it; a reader on another server retries its
reads for ``READ_GRACE`` seconds, then ends its stream without an ending (the client
reconnects with its cursor).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
import weakref
from dataclasses import dataclass
from typing import Any, AsyncIterator, Awaitable, Callable, Protocol, Sequence, runtime_checkable

from ..errors import OnedoorError
from ..events import STOP_SUSPENDED, Event, RunFailed, RunFinished, event_from_json, event_to_json
from .cursors import CursorExpired
from .news import NEWS_POLL, _News, watch  # noqa: F401 - NEWS_POLL: read here by older code
from .notes import share_notes

log = logging.getLogger("onedoor.journal")

LEASE_TTL = 10.0  # seconds a run's lease lasts without renewal
LEASE_RENEW = 2.0  # how often the driving server renews it (and looks for a cancel)
RETRY_FIRST, RETRY_MAX = 0.05, 1.0  # back-off of a write the store refused (an outage)
OUTAGE_GRACE = 30.0  # seconds this server's readers wait for the store before they go on without it
READ_GRACE = 30.0  # seconds a reader on another server retries reads while the store is out
SERVER_ID = os.urandom(6).hex()  # this process, as journal rows name it
STOPPED = "the server running it stopped"


@dataclass(frozen=True)
class JournalPage:
    """What the store holds of a run after some number: ``events`` as (seq, JSON text)."""

    events: list[tuple[int, str]]
    first_seq: int  # the oldest number the store still holds (1 unless pruned)
    last_seq: int
    ended: bool  # the run's final ending is written
    lease_until: float
    thread_id: str | None


@runtime_checkable
class SharedJournalStore(Protocol):
    shares_journals: bool

    async def journal_open(self, run_id: str, principal: str, server_id: str, thread_id: str | None,
                           lease_until: float) -> bool:
        """Claim the run's row (False: it is another principal's, or an ended run's)."""
        ...

    async def journal_write(self, run_id: str, first_seq: int, events: Sequence[str], *, lease_until: float,
                            ended: bool) -> bool:
        """Store events numbered from ``first_seq`` and renew the lease; True when a
        reader asked for the run to be cancelled."""
        ...

    async def journal_read(self, run_id: str, principal: str, after: int, *, limit: int = 500) -> JournalPage | None:
        """Events after ``after`` (None: no such run for this principal)."""
        ...

    async def journal_cancel(self, run_id: str, principal: str) -> bool: ...

    async def journal_live_on(self, thread_id: str, *, besides: str) -> bool:
        """Whether a run other than ``besides`` is writing ``thread_id`` (its lease holds)."""
        ...

    async def journal_prune(self, ended_before: float) -> int: ...


def fit_store(store: Any, limits: Any) -> None:
    """Tell a store that sizes itself to the kernel's run limit (``fit_runs``; PostgreSQL's
    connection pool) what that limit is."""
    fit = getattr(store, "fit_runs", None) if shared_store(store) is not None else None
    if fit is not None:
        fit(limits.max_concurrent_runs)


def shared_store(store: Any) -> SharedJournalStore | None:
    """``store`` if it shares journals, else None."""
    if getattr(store, "shares_journals", False) and isinstance(store, SharedJournalStore):
        return store
    return None


_pruned: weakref.WeakKeyDictionary[Any, float] = weakref.WeakKeyDictionary()  # store -> when it was last pruned


def _prune_due(store: Any, retention: float) -> bool:
    """Whether a run starting now prunes the store's ended journals: at most once a tenth of
    the retention (and a second) per store, not once per run."""
    now = time.monotonic()
    try:
        if now - _pruned.get(store, -1e9) < max(1.0, retention / 10):
            return False
        _pruned[store] = now
    except TypeError:  # a store that cannot be weakly referenced: every run prunes
        pass
    return True


class JournalWriter:
    """The driving server's side: writes a journal's events to the store, renews its lease."""

    def __init__(self, store: SharedJournalStore, journal: Any, retention: float, parked_for: float) -> None:
        self.store = store
        self.journal = journal
        self.retention = retention
        self.parked_for = parked_for  # how long a parked run's lease lasts (it waits for answers)
        self.written = 0  # the last number the store holds
        self.noted = 0  # the journal's notes_version the store holds
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.failed = False
        # while parked: looks for answers from elsewhere, renewing the lease (else the lease lasts parked_for)
        self.while_parked: Callable[[JournalWriter], Awaitable[None]] | None = None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name=f"onedoor-journal-writer-{self.journal.run_id}")

    def poke(self) -> None:
        self._wake.set()

    async def _run(self) -> None:
        journal, store = self.journal, self.store
        try:
            claimed = await self._until_stored(lambda: store.journal_open(
                journal.run_id, journal.principal, SERVER_ID, journal.thread_id, time.time() + LEASE_TTL))
            if not claimed:
                log.warning("run %s: its journal is not shared (its run id is another run's in the store)", journal.run_id)
                self.failed = True
                journal._durable(None)
                return
            if _prune_due(store, self.retention):
                with contextlib.suppress(Exception):
                    await store.journal_prune(time.time() - self.retention)
            self.written = journal.first_held_seq - 1
            stop_watching = watch(store, journal.run_id, "cancel", self.poke)  # a cancel asked elsewhere: at once
            try:
                while not await self._write_once():
                    try:
                        await asyncio.wait_for(self._wake.wait(), LEASE_RENEW)
                    except TimeoutError:
                        pass
                    self._wake.clear()
                if self.while_parked is not None and not journal.done:  # parked: news pokes it still
                    await self.while_parked(self)
            finally:
                if stop_watching is not None:
                    stop_watching()
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - a bug of ours, not the store's: stop sharing, keep the run going here
            log.warning("run %s: its journal is no longer shared (%s: %s)", journal.run_id, type(exc).__name__, exc)
            self.failed = True
            journal._durable(None)

    async def _write_once(self) -> bool:
        """Write what the store lacks and renew the lease, retrying while the store is out;
        True once the run's ending (or its parking) is written."""
        journal, store = self.journal, self.store
        upto = journal.last_seq
        if self.written + 1 < journal.first_held_seq:  # a long outage outlasted the events kept here
            log.warning("run %s: %d events were never shared (the store was out too long)", journal.run_id,
                        journal.first_held_seq - 1 - self.written)
            self.written = journal.first_held_seq - 1
        pending = [event_to_json(e) for e in journal.events_after(self.written)]
        ended = journal.done
        parked = not ended and not journal.running and upto >= journal.last_seq
        if journal.notes_version != self.noted and not await share_notes(self):  # before the events after them
            return True
        cancel = await self._until_stored(lambda: store.journal_write(
            journal.run_id, self.written + 1, pending,
            lease_until=time.time() + (self.parked_for if parked and not self.while_parked else LEASE_TTL),
            ended=ended))
        if cancel is _GAVE_UP:
            return True
        self.written = upto
        journal._durable(upto)
        if cancel:
            journal.cancel()
        return ended or parked

    async def _until_stored(self, call: Any) -> Any:
        """``await call()``, again (backing off to ``RETRY_MAX`` seconds) while the store fails:
        the run goes on here meanwhile, and what it sent is written once the store is back.
        Readers on this server wait for it at most ``OUTAGE_GRACE`` seconds, then get the
        events without it. Gives up (``_GAVE_UP``) once the kernel no longer keeps the journal."""
        journal, pause, since = self.journal, RETRY_FIRST, None
        while True:
            try:
                result = await call()
            except Exception as exc:  # noqa: BLE001 - unreachable, restarting, a network gone: try again
                if since is None:
                    since = time.monotonic()
                    log.warning("run %s: the store is out (%s: %s); its journal is shared again when it is back",
                                journal.run_id, type(exc).__name__, exc)
                if journal.dropped:
                    self.failed = True
                    return _GAVE_UP
                if time.monotonic() - since > OUTAGE_GRACE and journal._durable_seq is not None:
                    journal._durable(None)  # this server's readers stop waiting for the store
                await asyncio.sleep(pause)
                pause = min(pause * 2, RETRY_MAX)
                continue
            if since is not None:
                log.info("run %s: the store is back; its journal is shared again", journal.run_id)
            return result


_GAVE_UP = object()
PAGE = 500  # events a reader on another server reads at once


class RemoteJournal:
    """A run another server drives, read from the store (same reading API as RunJournal)."""

    def __init__(self, store: SharedJournalStore, run_id: str, principal: str, page: JournalPage) -> None:
        self.store = store
        self.run_id = run_id
        self.principal = principal
        self.thread_id = page.thread_id
        self.epoch = 0
        self.last_seq = page.last_seq
        self.done = page.ended
        self.running = not page.ended
        self.names: list[str] = []
        self.notes: dict[str, Any] = {}  # the doors' notes the store keeps (Journals.find reads them)

    def cursor(self, seq: int) -> str:
        return f"{self.run_id}:{self.epoch}:{seq}"

    def cancel(self) -> None:
        asyncio.get_running_loop().create_task(self.store.journal_cancel(self.run_id, self.principal))

    async def _read(self, after: int, limit: int = PAGE) -> JournalPage | None:
        """A page from the store, reading again (backing off) while the store is out, for at
        most ``READ_GRACE`` seconds; then :class:`StoreOutage` (the reader ends its stream
        without an ending it does not know)."""
        pause, since = RETRY_FIRST, time.monotonic()
        while True:
            try:
                return await self.store.journal_read(self.run_id, self.principal, after, limit=limit)
            except Exception as exc:  # noqa: BLE001 - unreachable, restarting: try again for a while
                if time.monotonic() - since > READ_GRACE:
                    raise StoreOutage(f"the store has been out for {READ_GRACE:g} s ({type(exc).__name__})") from None
                await asyncio.sleep(pause)
                pause = min(pause * 2, RETRY_MAX)

    async def _ends_at(self, seq: int) -> bool:
        page = await self._read(seq - 1, limit=1)
        if page is None or not page.events:
            return False
        return isinstance(event_from_json(page.events[0][1]), (RunFinished, RunFailed))

    async def _stopped(self, page: JournalPage, news: _News) -> bool:
        """The lease has run out with no ending: the server running it stopped, unless it
        renews the lease (or writes more) within one renewal and a retry, which it does
        right after an outage of the store that kept it from renewing."""
        if page.lease_until >= time.time():
            return False
        deadline = time.monotonic() + LEASE_RENEW + RETRY_MAX
        while (left := deadline - time.monotonic()) > 0:
            await news.wait(left, poll=False)
            again = await self._read(page.last_seq)
            if again is None or again.events or again.ended or again.lease_until >= time.time():
                return False
        return True

    async def follow(self, after: int = 0) -> AsyncIterator[tuple[int, Event]]:
        news = _News(self.store, self.run_id, "events")  # before the first read: nothing written after it is missed
        try:
            async for pair in self._follow(after, news):
                yield pair
        finally:
            news.close()

    async def _follow(self, after: int, news: _News) -> AsyncIterator[tuple[int, Event]]:
        page = await self._read(after)
        if page is None:
            raise CursorExpired(f"run {self.run_id} is no longer kept")
        if after + 1 < page.first_seq:
            raise CursorExpired(f"events after {self.cursor(after)} are no longer kept; read the thread instead")
        if after > page.last_seq and page.ended:
            raise CursorExpired(f"{self.cursor(after)} is not a cursor this run gave out")
        # (a cursor ahead of the store, of a run going on: its server's readers got events the
        # store lacked during an outage; they are written when it is back, so wait for them)
        if not page.events and after >= 1 and after <= page.last_seq and await self._ends_at(after):
            return  # the cursor is the run's ending (or its waiting for answers): nothing more now
        seq, pause = after, 0.005
        while True:
            for number, text in page.events:
                if number <= seq:
                    continue
                if number != seq + 1:
                    raise CursorExpired(f"events {seq + 1} to {number - 1} of run {self.run_id} were never shared")
                event = event_from_json(text)
                seq = number
                yield number, event
                if isinstance(event, (RunFinished, RunFailed)):  # (a suspended ending too, as locally)
                    self.done = event.stop_reason != STOP_SUSPENDED if isinstance(event, RunFinished) else True
                    return
            if page.ended and not page.events:
                return
            if not page.events:
                if await self._stopped(page, news):
                    self.done = True
                    yield seq + 1, RunFailed(self.run_id, STOPPED)
                    return
                await news.wait(pause)  # the store's news, or the poll
                pause = min(pause * 2, 0.2)
            elif news.live and len(page.events) < PAGE:  # all there was: the next comes with news
                await news.wait(pause)
            else:
                pause = 0.005
            fresh = await self._read(seq)
            if fresh is None:
                return
            page = fresh
            self.last_seq = page.last_seq


class StoreOutage(OnedoorError):
    """A reader on another server could not read the store for ``READ_GRACE`` seconds: its
    stream ends without an ending (the client reconnects with its cursor)."""
