"""The PostgreSQL thread store: the same behaviour as onedoor's SQLite store, in a server
that several ``onedoor serve`` processes share.

Connections come from a small pool (:mod:`.pool`) made on first use in the event loop
that uses the store (the tables are created then, if missing). Every call is one statement,
one round trip (prepared on first use); ``append`` locks the thread's row (``FOR UPDATE``)
and compares its version in that statement, so writers on any server serialise. A turn
waits for the disk once, when its reply is kept: its opening (an append ending with the
user's message), its lease and its journal commit without waiting (``schema.NO_WAIT``),
and the reply's commit flushes them with it. The pool checks a connection before lending
it, so connections broken by a restart of PostgreSQL are replaced, not used; a call that
was running when PostgreSQL went away, or that finds it down, fails with
:class:`StoreUnavailable`, and the calls after it reconnect by themselves.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from typing import Any, AsyncIterator, Sequence

import psycopg
from onedoor import Message, encode_json_text
from onedoor import StoreUnavailable as KernelStoreUnavailable
from onedoor.journal import JournalPage
from onedoor.threads import (
    Thread,
    ThreadError,
    ThreadSummary,
    check_append,
    check_state_update,
    check_thread_id,
    new_thread_id,
    title_from,
)
from onedoor.threads.leases import holder_alive
from onedoor.threads.parsed import ParsedMessages
from onedoor.threads.records import Record, RecordPage

from . import journal, records
from .notify import JournalNews
from .pool import ConnectionPool
from .schema import APPEND_DURABLE, APPEND_NO_WAIT, NO_WAIT, NOW, READ_THREAD, SCHEMA, SCHEMA_LOCK, add_missing_columns

log = logging.getLogger("onedoor.store.postgres")

MAX_LIST = 500
POOL_FLOOR, POOL_CEILING, RUNS_PER_CONNECTION = 4, 20, 20  # a pool sized from the run limit


class StoreUnavailable(KernelStoreUnavailable):
    """PostgreSQL could not be reached, or dropped the call (restarted, shut down, network
    gone). Nothing half-done is kept; the store reconnects by itself, so a later call can
    succeed. The kernel ends a run whose turn it could not keep with ``RunFailed``; HTTP
    doors answer 503 (``onedoor.threads.StoreUnavailable``)."""


class PostgresThreadStore:
    """``PostgresThreadStore(dsn, pool_size=10, timeout=10.0, max_thread_chars=64_000_000)``.

    ``timeout``: how long a call waits for a connection (all busy, or PostgreSQL not
    answering) before it fails with :class:`StoreUnavailable`. ``pool_size=None``: sized
    from the run limit of the kernel whose journals it keeps (:meth:`fit_runs`). Use one
    store per event loop.
    """

    def __init__(self, dsn: str, *, pool_size: int | None = 10, timeout: float = 10.0,
                 max_thread_chars: int = 64_000_000, shared_journal: bool = True, durable_openings: bool = False):
        self._dsn = dsn
        self.shares_journals = shared_journal  # onedoor.journal.shared: reattach through any server
        self.durable_openings = durable_openings  # a turn's opening waits for the disk too
        self._sized_by_runs = pool_size is None
        self.pool_size = POOL_FLOOR if pool_size is None else pool_size
        self.timeout = timeout
        self.max_thread_chars = max_thread_chars
        self._pool: ConnectionPool | None = None
        self._parsed = ParsedMessages()  # what a read parsed: the next reads of a thread fetch and parse only what is new
        self._news: JournalNews | None = None  # LISTEN on the journal channel (made on the first watch)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._opening: asyncio.Lock | None = None
        self._ready = False  # the tables exist
        self._closed = False

    # -- plumbing ----------------------------------------------------------------------
    async def _open(self) -> ConnectionPool:
        if self._closed:
            raise StoreUnavailable("the thread store is closed")
        loop = asyncio.get_running_loop()
        if self._ready and self._pool is not None and self._loop is loop:
            return self._pool
        if self._loop is not loop:  # first use, or the loop that used the store has ended
            self._drop_pool()
            self._loop, self._opening, self._ready = loop, asyncio.Lock(), False
        assert self._opening is not None
        async with self._opening:
            if self._pool is None:
                self._pool = ConnectionPool(self._dsn, size=self.pool_size, timeout=self.timeout)
            if not self._ready:
                async with self._pool.connection() as conn, conn.transaction():
                    await conn.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
                    for statement in (*SCHEMA, *journal.SCHEMA, *records.SCHEMA):
                        await conn.execute(statement)
                    await add_missing_columns(conn)
                self._ready = True
            return self._pool

    @contextlib.asynccontextmanager
    async def _connection(self) -> AsyncIterator[psycopg.AsyncConnection[Any]]:
        """A connection from the pool; PostgreSQL going away becomes :class:`StoreUnavailable`."""
        try:
            pool = await self._open()
            async with pool.connection() as conn:
                yield conn
        except psycopg.OperationalError as exc:  # also the pool's: no connection to be had in time
            detail = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            log.warning("thread store: PostgreSQL unavailable: %s", detail)
            raise StoreUnavailable(f"the thread store (PostgreSQL) is unavailable: {detail}; try again") from exc

    async def close(self) -> None:
        """Close the connections. From another event loop than the one that used the store
        (``onedoor serve`` closes it after the server's loop ended), they are closed without it."""
        self._closed = True
        if self._loop is asyncio.get_running_loop():
            news, self._news = self._news, None
            if news is not None:
                await news.close()
            pool, self._pool = self._pool, None
            if pool is not None:
                await pool.close()
        self._drop_pool()

    def _drop_pool(self) -> None:
        """Let go of the pool (and the listener) of an event loop that has ended, closing its idle connections."""
        pool, news, self._pool, self._news, self._loop = self._pool, self._news, None, None, None
        if pool is not None:
            pool.drop()
        if news is not None:
            news.drop()

    def fit_runs(self, max_runs: int) -> None:
        """The kernel's run limit (``onedoor.journal.shared.fit_store``): a store made with
        ``pool_size=None`` opens up to one connection per 20 runs, 4 to 20."""
        if self._sized_by_runs:
            size = max(POOL_FLOOR, min(POOL_CEILING, -(-max_runs // RUNS_PER_CONNECTION)))
            if size > self.pool_size:
                self.pool_size = size
                if self._pool is not None:
                    self._pool.grow(size)

    # -- the store ---------------------------------------------------------------------
    async def create(
        self, owner: str, *, title: str = "", settings: dict[str, Any] | None = None, thread_id: str | None = None
    ) -> Thread:
        chosen = check_thread_id(thread_id) if thread_id is not None else new_thread_id()
        kept = dict(settings or {})
        async with self._connection() as conn:
            try:
                cursor = await conn.execute(
                    "INSERT INTO onedoor_threads (id, owner, title, settings, version, chars, message_count, created_at,"
                    f" updated_at) VALUES (%s, %s, %s, %s, 0, 0, 0, {NOW}, {NOW}) RETURNING created_at",
                    (chosen, owner, json.dumps(title), json.dumps(kept)),
                )
            except psycopg.errors.UniqueViolation:
                raise ThreadError("conflict", f"thread id {chosen!r} is taken; choose another") from None
            row = await cursor.fetchone()
        assert row is not None
        return Thread(chosen, owner, title, kept, (), 0, row[0], row[0])

    async def get(self, owner: str, thread_id: str) -> Thread | None:
        async with self._connection() as conn:
            return await self._read(conn, owner, thread_id)

    async def _read(self, conn: Any, owner: str, thread_id: str) -> Thread | None:
        """The thread, its messages parsed only past those held (:mod:`onedoor.threads.parsed`)."""
        held = self._parsed.latest(thread_id)
        start = len(held[1]) if held is not None else 0
        cursor = await conn.execute(READ_THREAD, {"id": thread_id, "owner": owner, "from": start})
        row = await cursor.fetchone()
        if row is not None and start and not _holds(held, row[5], row[10]):  # the id of a thread made again
            self._parsed.forget(thread_id)
            cursor = await conn.execute(READ_THREAD, {"id": thread_id, "owner": owner, "from": 0})
            row, held = await cursor.fetchone(), None
        return self._thread(row, held[1] if held is not None else ())

    async def list(self, owner: str, *, limit: int = 50, before: str | None = None) -> list[ThreadSummary]:
        sql = "SELECT id, title, message_count, created_at, updated_at FROM onedoor_threads WHERE owner = %s"
        args: list[Any] = [owner]
        if before is not None:  # an unknown mark compares as NULL: nothing is listed
            sql += " AND (updated_at, id) < (SELECT updated_at, id FROM onedoor_threads WHERE owner = %s AND id = %s)"
            args += [owner, before]
        sql += " ORDER BY updated_at DESC, id DESC LIMIT %s"
        args.append(max(1, min(limit, MAX_LIST)))
        async with self._connection() as conn:
            cursor = await conn.execute(sql, args)
            rows = await cursor.fetchall()
        return [ThreadSummary(row[0], json.loads(row[1]), row[2], row[3], row[4]) for row in rows]

    async def append(
        self, owner: str, thread_id: str, messages: Sequence[Message], *, expected_version: int
    ) -> Thread:
        bodies = [encode_json_text(m.to_dict()) for m in messages]  # a lone surrogate kept, escaped
        added = sum(m.size for m in messages)  # text, and the bytes of images and files
        opening = bool(messages) and messages[-1].role == "user" and not self.durable_openings
        held = self._parsed.latest(thread_id)
        start = len(held[1]) if held is not None else 0
        async with self._connection() as conn:
            cursor = await conn.execute(APPEND_NO_WAIT if opening else APPEND_DURABLE, {
                "id": thread_id, "owner": owner, "expected": expected_version, "added": added,
                "limit": self.max_thread_chars, "bodies": bodies, "count": len(bodies),
                "title": json.dumps(title_from(messages)), "from": start,
            })
            row = await cursor.fetchone()
            if row is None or row[2] is None:  # no such thread, or refused: say why as every store does
                check_append(thread_id, row, expected_version, added, self.max_thread_chars)
                raise ThreadError("conflict", f"thread {thread_id!r} changed")  # (the check always raises here)
            if start and not _holds(held, row[7], row[12]):  # what is held was of an earlier thread of that id
                self._parsed.forget(thread_id)
                thread = await self._read(conn, owner, thread_id)
                assert thread is not None
                return thread
        thread = self._thread((*row[2:9], [*row[9], *bodies], *row[10:12]), held[1] if held is not None else ())
        assert thread is not None
        return thread

    async def update_state(
        self, owner: str, thread_id: str, state: dict[str, Any], *, expected_version: int
    ) -> Thread:
        """Replace the thread's shared state if it is still at ``expected_version``: one
        statement (compare-and-set in its WHERE clause), then the thread read back."""
        async with self._connection() as conn, conn.transaction():
            cursor = await conn.execute(
                f"UPDATE onedoor_threads SET state = %s, state_version = state_version + 1, updated_at = {NOW}"
                " WHERE id = %s AND owner = %s AND state_version = %s RETURNING state_version",
                (encode_json_text(state), thread_id, owner, expected_version),
            )
            if await cursor.fetchone() is None:
                cursor = await conn.execute("SELECT state_version FROM onedoor_threads WHERE id = %s AND owner = %s",
                                            (thread_id, owner))
                row = await cursor.fetchone()
                check_state_update(thread_id, row[0] if row else None, expected_version)
            thread = await self._read(conn, owner, thread_id)  # (its messages: committed ones, as held)
        assert thread is not None
        return thread

    async def delete(self, owner: str, thread_id: str) -> bool:
        async with self._connection() as conn:
            async with conn.transaction():
                cursor = await conn.execute("DELETE FROM onedoor_threads WHERE id = %s AND owner = %s", (thread_id, owner))
                if cursor.rowcount > 0:  # its runs' journals hold its text too
                    await journal.forget_thread(conn, thread_id, owner)
                    await records.forget_thread(conn, thread_id, owner)  # doors' records of it (A2A tasks)
                    await conn.execute("DELETE FROM onedoor_thread_turns WHERE thread_id = %s AND owner = %s",
                                       (thread_id, owner))
            gone = cursor.rowcount > 0
        if gone:
            self._parsed.forget(thread_id)
        return bool(gone)

    def _thread(self, row: Any, held: tuple[Message, ...]) -> Thread | None:
        """A thread of a row whose message bodies come after the ``held`` messages (kept then)."""
        if row is None:
            return None
        messages = held + tuple(Message.from_dict(json.loads(body)) for body in row[7])
        self._parsed.keep(row[0], row[5], messages)
        return Thread(row[0], row[1], json.loads(row[2]), json.loads(row[3]), messages, row[4], row[5], row[6],
                      json.loads(row[8]), row[9])

    # -- doors' records (onedoor.threads.records) ----------------------------------------
    async def record_put(self, record: Record) -> bool:
        async with self._connection() as conn:
            return await records.put(conn, record)

    async def record_get(self, kind: str, owner: str, record_id: str) -> Record | None:
        async with self._connection() as conn:
            return await records.get(conn, kind, owner, record_id)

    async def record_list(
        self, kind: str, owner: str | None, *, group: str | None = None, tag: str | None = None,
        rank_from: int | None = None, before: tuple[int, str] | None = None, limit: int = 50,
    ) -> RecordPage:
        async with self._connection() as conn:
            return await records.listing(conn, kind, owner, group, tag, rank_from, before, limit)

    async def record_delete(self, kind: str, owner: str, record_id: str) -> bool:
        async with self._connection() as conn:
            return await records.delete(conn, kind, owner, record_id)

    # -- turn leases (onedoor.threads.leases) --------------------------------------------
    # (leases commit without waiting for the disk: a lease lost by a crash of PostgreSQL only
    # looks like the cut turn it then is, or runs out)
    async def turn_open(self, owner: str, thread_id: str, run_id: str, holder: str, lease_until: float) -> None:
        async with self._connection() as conn:
            await conn.execute(
                f"{NO_WAIT} INSERT INTO onedoor_thread_turns SELECT %s, %s, %s, %s, %s FROM no_wait "
                "ON CONFLICT (run_id) DO UPDATE SET holder = EXCLUDED.holder, lease_until = EXCLUDED.lease_until",
                (run_id, owner, thread_id, holder, lease_until),
            )

    async def turn_close(self, run_id: str) -> None:
        async with self._connection() as conn:
            await conn.execute(f"{NO_WAIT} DELETE FROM onedoor_thread_turns USING no_wait WHERE run_id = %s", (run_id,))

    async def turn_renew(self, holder: str, lease_until: float) -> None:
        async with self._connection() as conn:
            await conn.execute(f"{NO_WAIT} UPDATE onedoor_thread_turns SET lease_until = %s FROM no_wait WHERE holder = %s",
                               (lease_until, holder))

    async def turn_live(self, owner: str, thread_id: str, *, besides: str = "") -> bool:
        async with self._connection() as conn:
            cursor = await conn.execute(
                "SELECT holder, lease_until FROM onedoor_thread_turns WHERE thread_id = %s AND owner = %s AND run_id <> %s",
                (thread_id, owner, besides),
            )
            rows = await cursor.fetchall()
        now = time.time()
        return any(until > now and holder_alive(holder) is not False for holder, until in rows)

    # -- shared journals (onedoor.journal.shared) ---------------------------------------
    async def journal_open(self, run_id: str, principal: str, server_id: str, thread_id: str | None,
                           lease_until: float) -> bool:
        async with self._connection() as conn:
            return await journal.open_run(conn, run_id, principal, server_id, thread_id, lease_until)

    async def journal_write(self, run_id: str, first_seq: int, events: Sequence[str], *, lease_until: float,
                            ended: bool) -> bool:
        async with self._connection() as conn:
            return await journal.write(conn, run_id, first_seq, events, lease_until, ended)

    async def journal_read(self, run_id: str, principal: str, after: int, *, limit: int = 500) -> JournalPage | None:
        async with self._connection() as conn:
            return await journal.read(conn, run_id, principal, after, limit)

    async def journal_cancel(self, run_id: str, principal: str) -> bool:
        async with self._connection() as conn:
            return await journal.cancel(conn, run_id, principal)

    async def journal_answer(self, run_id: str, principal: str, at_seq: int, answers: str) -> bool:
        async with self._connection() as conn:
            return await journal.answer(conn, run_id, principal, at_seq, answers)

    async def journal_parked(self, run_id: str, lease_until: float) -> tuple[bool, str | None]:
        async with self._connection() as conn:
            return await journal.parked(conn, run_id, lease_until)

    async def journal_live_on(self, thread_id: str, *, besides: str) -> bool:
        async with self._connection() as conn:
            return await journal.live_on(conn, thread_id, besides)

    def journal_watch(self, run_id: str, kind: str, callback: Any) -> Any:
        """News of a run's journal as PostgreSQL sends it (:mod:`.notify`; the kernel's
        ``onedoor.journal.shared``); returns the function that stops watching."""
        if self._closed:
            raise StoreUnavailable("the thread store is closed")
        loop = asyncio.get_running_loop()
        if self._loop is not loop:  # first use, or the loop that used the store has ended
            self._drop_pool()
            self._loop, self._opening, self._ready = loop, asyncio.Lock(), False
        if self._news is None:
            self._news = JournalNews(self._dsn)
        return self._news.watch(run_id, kind, callback)

    def journal_news_live(self) -> bool:
        """Whether PostgreSQL's notifications are being heard now (see :mod:`.notify`)."""
        return self._news is not None and self._news.listening

    async def journal_prune(self, ended_before: float) -> int:
        async with self._connection() as conn:
            return await journal.prune(conn, ended_before)

    async def journal_note(self, run_id: str, notes: str, names: Sequence[str]) -> None:
        async with self._connection() as conn:
            await journal.note(conn, run_id, notes, names)

    async def journal_notes(self, run_id: str, principal: str) -> str | None:
        async with self._connection() as conn:
            return await journal.notes_of(conn, run_id, principal)

    async def journal_named(self, name: str, principal: str) -> str | None:
        async with self._connection() as conn:
            return await journal.named(conn, name, principal)

    async def journal_running(self, thread_id: str, principal: str, *, ended: bool = False) -> Sequence[str]:
        async with self._connection() as conn:
            return await journal.running(conn, thread_id, principal, ended)


def _holds(held: tuple[float, tuple[Message, ...]] | None, created_at: float, count: int) -> bool:
    """Whether what is held of a thread id is the first messages of the thread read now."""
    return held is not None and held[0] == created_at and len(held[1]) <= count


__all__ = ["PostgresThreadStore", "StoreUnavailable"]
