"""The embedded thread store: one SQLite file, no server to start.

Every call runs on one worker thread that owns the connection (SQLite connections are
not shared across threads), so the event loop never blocks on the disk. The file uses
WAL (readers do not wait for the writer; a killed process keeps every committed turn)
and ``secure_delete`` (a deleted thread's text is overwritten in the file, not just
unlinked); a delete also checkpoints and empties the log, so the text leaves the
``-wal`` file at once too. Changes are compare-and-set on the thread's version inside one
``BEGIN IMMEDIATE`` transaction, so two processes sharing the file serialise too.
It keeps doors' records too (:mod:`onedoor.threads.records`), and a thread's go with it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import logging
import os
import sqlite3
import time
from pathlib import Path
from typing import Any, Callable, Sequence, TypeVar

from ..journal import sqlite as sqlite_journal
from ..journal.shared import JournalPage
from ..messages import Message
from ..wire import encode_json_text
from . import records_sqlite
from .leases import holder_alive
from .model import Thread, ThreadError, ThreadSummary, check_append, check_state_update, check_thread_id, new_thread_id
from .parsed import ParsedMessages
from .records import Record, RecordPage
from .turns import title_from

T = TypeVar("T")
log = logging.getLogger("onedoor.store.sqlite")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS threads (
    id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    title TEXT NOT NULL,
    settings TEXT NOT NULL,
    version INTEGER NOT NULL,
    chars INTEGER NOT NULL,
    message_count INTEGER NOT NULL,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS threads_by_owner ON threads (owner, updated_at DESC, id DESC);
CREATE TABLE IF NOT EXISTS thread_turns (
    run_id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    thread_id TEXT NOT NULL,
    holder TEXT NOT NULL,
    lease_until REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS thread_turns_by_thread ON thread_turns (thread_id, owner);
CREATE TABLE IF NOT EXISTS messages (
    thread_id TEXT NOT NULL REFERENCES threads (id) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (thread_id, seq)
);
"""


class SQLiteThreadStore:
    """``SQLiteThreadStore(path, max_thread_chars=...)``; ``:memory:`` for a throwaway one."""

    def __init__(
        self, path: str | os.PathLike[str], *, max_thread_chars: int = 64_000_000, shared_journal: bool = False,
        busy_timeout: float = 30.0,
    ) -> None:
        self.path = str(path)
        self.max_thread_chars = max_thread_chars
        self.busy_timeout = busy_timeout  # seconds a call waits for another process's write lock
        self.shares_journals = shared_journal  # see onedoor.journal.shared (several processes, one file)
        self._pool = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="onedoor-sqlite")
        self._db: sqlite3.Connection | None = None
        self._parsed = ParsedMessages()  # what a read parsed: the next reads of a thread parse only what is new

    # -- plumbing ----------------------------------------------------------------------
    async def _call(self, work: Callable[[sqlite3.Connection], T]) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool, self._with_db, work)

    def _with_db(self, work: Callable[[sqlite3.Connection], T]) -> T:
        if self._db is None:
            if self.path != ":memory:":
                Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(self.path, timeout=self.busy_timeout, isolation_level=None)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.execute("PRAGMA foreign_keys=ON")
            db.execute("PRAGMA secure_delete=ON")
            db.executescript(_SCHEMA)
            db.executescript(sqlite_journal.SCHEMA)
            sqlite_journal.migrate(db)
            db.executescript(records_sqlite.SCHEMA)
            _add_state_columns(db)
            self._db = db
        return work(self._db)

    async def _written(self, thread_id: str, work: Callable[[sqlite3.Connection], T]) -> T:
        """A write that reads the thread back; if it is rolled back, what it parsed is not kept."""
        try:
            return await self._call(work)
        except BaseException:
            self._parsed.forget(thread_id)
            raise

    async def close(self) -> None:
        def shut(db: sqlite3.Connection) -> None:
            db.close()
            self._db = None

        if self._db is not None:
            await self._call(shut)
        self._pool.shutdown(wait=False)

    # -- the store ---------------------------------------------------------------------
    async def create(
        self, owner: str, *, title: str = "", settings: dict[str, Any] | None = None, thread_id: str | None = None
    ) -> Thread:
        now = time.time()
        chosen = check_thread_id(thread_id) if thread_id is not None else new_thread_id()
        thread = Thread(chosen, owner, title, dict(settings or {}), (), 0, now, now)

        def insert(db: sqlite3.Connection) -> None:
            try:
                with db:
                    db.execute(
                        "INSERT INTO threads (id, owner, title, settings, version, chars, message_count, created_at, "
                        "updated_at) VALUES (?, ?, ?, ?, 0, 0, 0, ?, ?)",
                        (thread.id, owner, title, json.dumps(thread.settings), now, now),
                    )
            except sqlite3.IntegrityError:
                raise ThreadError("conflict", f"thread id {chosen!r} is taken; choose another") from None

        await self._call(insert)
        return thread

    async def get(self, owner: str, thread_id: str) -> Thread | None:
        return await self._call(lambda db: _read(db, owner, thread_id, self._parsed))

    async def list(self, owner: str, *, limit: int = 50, before: str | None = None) -> list[ThreadSummary]:
        def select(db: sqlite3.Connection) -> list[ThreadSummary]:
            sql = "SELECT id, title, message_count, created_at, updated_at FROM threads WHERE owner = ?"
            args: list[Any] = [owner]
            if before is not None:
                mark = db.execute("SELECT updated_at, id FROM threads WHERE owner = ? AND id = ?", (owner, before)).fetchone()
                if mark is None:
                    return []
                sql += " AND (updated_at < ? OR (updated_at = ? AND id < ?))"
                args += [mark[0], mark[0], mark[1]]
            sql += " ORDER BY updated_at DESC, id DESC LIMIT ?"
            args.append(max(1, min(limit, 500)))
            return [ThreadSummary(*row) for row in db.execute(sql, args)]

        return await self._call(select)

    async def append(
        self, owner: str, thread_id: str, messages: Sequence[Message], *, expected_version: int
    ) -> Thread:
        bodies = [encode_json_text(m.to_dict()) for m in messages]  # a lone surrogate kept, escaped
        added = sum(m.size for m in messages)  # text, and the bytes of images and files

        def write(db: sqlite3.Connection) -> Thread:
            row = db.execute(
                "SELECT version, chars, message_count, title FROM threads WHERE id = ? AND owner = ?",
                (thread_id, owner),
            ).fetchone()
            check_append(thread_id, row, expected_version, added, self.max_thread_chars)
            version, chars, count, title = row
            db.executemany(
                "INSERT INTO messages VALUES (?, ?, ?)",
                [(thread_id, count + i, body) for i, body in enumerate(bodies)],
            )
            db.execute(
                "UPDATE threads SET version = ?, chars = ?, message_count = ?, title = ?, updated_at = ? WHERE id = ?",
                (version + 1, chars + added, count + len(bodies), title or title_from(messages), time.time(), thread_id),
            )
            return _read_back(db, owner, thread_id, self._parsed)

        return await self._written(thread_id, _immediate(write))

    async def update_state(
        self, owner: str, thread_id: str, state: dict[str, Any], *, expected_version: int
    ) -> Thread:
        body = encode_json_text(state)

        def write(db: sqlite3.Connection) -> Thread:
            row = db.execute("SELECT state_version FROM threads WHERE id = ? AND owner = ?", (thread_id, owner)).fetchone()
            check_state_update(thread_id, row[0] if row else None, expected_version)
            db.execute("UPDATE threads SET state = ?, state_version = ?, updated_at = ? WHERE id = ?",
                       (body, expected_version + 1, time.time(), thread_id))
            return _read_back(db, owner, thread_id, self._parsed)

        return await self._written(thread_id, _immediate(write))

    async def delete(self, owner: str, thread_id: str) -> bool:
        def remove(db: sqlite3.Connection) -> bool:
            db.execute("BEGIN IMMEDIATE")
            try:
                gone = db.execute("DELETE FROM threads WHERE id = ? AND owner = ?", (thread_id, owner)).rowcount
                if gone:  # the runs' journals hold its text too
                    db.execute("DELETE FROM journal_runs WHERE thread_id = ? AND principal = ?", (thread_id, owner))
                    db.execute("DELETE FROM thread_turns WHERE thread_id = ? AND owner = ?", (thread_id, owner))
                    records_sqlite.forget_thread(db, thread_id, owner)  # doors' records of the thread (A2A tasks)
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
            if gone:
                self._parsed.forget(thread_id)
                _forget_the_log(db)
            return gone > 0

        return await self._call(remove)

    # -- doors' records (onedoor.threads.records) ----------------------------------------
    async def record_put(self, record: Record) -> bool:
        return await self._call(lambda db: records_sqlite.put(db, record))

    async def record_get(self, kind: str, owner: str, record_id: str) -> Record | None:
        return await self._call(lambda db: records_sqlite.get(db, kind, owner, record_id))

    async def record_list(
        self, kind: str, owner: str | None, *, group: str | None = None, tag: str | None = None,
        rank_from: int | None = None, before: tuple[int, str] | None = None, limit: int = 50,
    ) -> RecordPage:
        return await self._call(lambda db: records_sqlite.listing(db, kind, owner, group, tag, rank_from, before, limit))

    async def record_delete(self, kind: str, owner: str, record_id: str) -> bool:
        return await self._call(lambda db: records_sqlite.delete(db, kind, owner, record_id))

    # -- turn leases (onedoor.threads.leases) --------------------------------------------
    async def turn_open(self, owner: str, thread_id: str, run_id: str, holder: str, lease_until: float) -> None:
        def open_lease(db: sqlite3.Connection) -> None:
            with db:
                db.execute("INSERT OR REPLACE INTO thread_turns VALUES (?, ?, ?, ?, ?)",
                           (run_id, owner, thread_id, holder, lease_until))

        await self._call(open_lease)

    async def turn_close(self, run_id: str) -> None:
        def close_lease(db: sqlite3.Connection) -> None:
            with db:
                db.execute("DELETE FROM thread_turns WHERE run_id = ?", (run_id,))

        await self._call(close_lease)

    async def turn_renew(self, holder: str, lease_until: float) -> None:
        def renew(db: sqlite3.Connection) -> None:
            with db:
                db.execute("UPDATE thread_turns SET lease_until = ? WHERE holder = ?", (lease_until, holder))

        await self._call(renew)

    async def turn_live(self, owner: str, thread_id: str, *, besides: str = "") -> bool:
        def live(db: sqlite3.Connection) -> bool:
            rows = db.execute("SELECT holder, lease_until FROM thread_turns WHERE thread_id = ? AND owner = ? AND run_id != ?",
                              (thread_id, owner, besides)).fetchall()
            now = time.time()
            return any(until > now and holder_alive(holder) is not False for holder, until in rows)

        return await self._call(live)

    # -- shared journals (onedoor.journal.shared) ---------------------------------------
    async def journal_open(self, run_id: str, principal: str, server_id: str, thread_id: str | None,
                           lease_until: float) -> bool:
        return await self._call(lambda db: sqlite_journal.open_run(db, run_id, principal, server_id, thread_id, lease_until))

    async def journal_write(self, run_id: str, first_seq: int, events: Sequence[str], *, lease_until: float,
                            ended: bool) -> bool:
        return await self._call(lambda db: sqlite_journal.write(db, run_id, first_seq, events, lease_until, ended))

    async def journal_read(self, run_id: str, principal: str, after: int, *, limit: int = 500) -> JournalPage | None:
        return await self._call(lambda db: sqlite_journal.read(db, run_id, principal, after, limit))

    async def journal_cancel(self, run_id: str, principal: str) -> bool:
        return await self._call(lambda db: sqlite_journal.cancel(db, run_id, principal))

    async def journal_answer(self, run_id: str, principal: str, at_seq: int, answers: str) -> bool:
        return await self._call(lambda db: sqlite_journal.answer(db, run_id, principal, at_seq, answers))

    async def journal_parked(self, run_id: str, lease_until: float) -> tuple[bool, str | None]:
        return await self._call(lambda db: sqlite_journal.parked(db, run_id, lease_until))

    async def journal_live_on(self, thread_id: str, *, besides: str) -> bool:
        return await self._call(lambda db: sqlite_journal.live_on(db, thread_id, besides))

    async def journal_prune(self, ended_before: float) -> int:
        return await self._call(lambda db: sqlite_journal.prune(db, ended_before))

    async def journal_note(self, run_id: str, notes: str, names: Sequence[str]) -> None:
        await self._call(lambda db: sqlite_journal.note(db, run_id, notes, names))

    async def journal_notes(self, run_id: str, principal: str) -> str | None:
        return await self._call(lambda db: sqlite_journal.notes_of(db, run_id, principal))

    async def journal_named(self, name: str, principal: str) -> str | None:
        return await self._call(lambda db: sqlite_journal.named(db, name, principal))

    async def journal_running(self, thread_id: str, principal: str, *, ended: bool = False) -> Sequence[str]:
        return await self._call(lambda db: sqlite_journal.running(db, thread_id, principal, ended))


def _forget_the_log(db: sqlite3.Connection, attempts: int = 20) -> None:
    """After a delete: the write-ahead log still holds the pages as they were (the deleted
    text); copy it into the file (where ``secure_delete`` has zeroed them) and empty it, so
    the text is gone from disk now, not at the next clean stop. A reader in another process
    can hold the log for a moment: retry a little, then leave it to the next checkpoint."""
    for _ in range(attempts):
        busy, _log, _copied = db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        if not busy:
            return
        time.sleep(0.005)
    log.warning("sqlite: a reader in another process held the log; the deleted text leaves it at the next checkpoint")


def _immediate(work: Callable[[sqlite3.Connection], T]) -> Callable[[sqlite3.Connection], T]:
    """``work`` in one write transaction (BEGIN IMMEDIATE: the write lock first), rolled back if it raises."""

    def run(db: sqlite3.Connection) -> T:
        db.execute("BEGIN IMMEDIATE")
        try:
            result = work(db)
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        return result

    return run


def _read_back(db: sqlite3.Connection, owner: str, thread_id: str, parsed: ParsedMessages) -> Thread:
    thread = _read(db, owner, thread_id, parsed)
    assert thread is not None
    return thread


def _add_state_columns(db: sqlite3.Connection) -> None:
    """A file made before threads kept a state gets the two columns (once)."""
    columns = {row[1] for row in db.execute("PRAGMA table_info(threads)")}
    if "state" not in columns:
        with db:
            db.execute("ALTER TABLE threads ADD COLUMN state TEXT NOT NULL DEFAULT '{}'")
            db.execute("ALTER TABLE threads ADD COLUMN state_version INTEGER NOT NULL DEFAULT 0")


def _read(db: sqlite3.Connection, owner: str, thread_id: str, parsed: ParsedMessages) -> Thread | None:
    row = db.execute(
        "SELECT id, owner, title, settings, version, created_at, updated_at, state, state_version, message_count "
        "FROM threads WHERE id = ? AND owner = ?",
        (thread_id, owner),
    ).fetchone()
    if row is None:
        return None
    held = parsed.first(thread_id, row[5], row[9])
    bodies = db.execute("SELECT body FROM messages WHERE thread_id = ? AND seq >= ? ORDER BY seq",
                        (thread_id, len(held))).fetchall()
    messages = held + tuple(Message.from_dict(json.loads(body)) for (body,) in bodies)
    parsed.keep(thread_id, row[5], messages)
    return Thread(row[0], row[1], row[2], json.loads(row[3]), messages, row[4], row[5], row[6], json.loads(row[7]), row[8])


__all__ = ["SQLiteThreadStore"]
