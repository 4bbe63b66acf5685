"""Shared journals in the SQLite file (see :mod:`onedoor.journal.shared`): what lets two
processes on one machine, sharing one threads file, reattach readers to each other's
runs. Functions over a connection; :class:`onedoor.threads.sqlite.SQLiteThreadStore` runs
them on its worker thread."""

from __future__ import annotations

import sqlite3
import time
from typing import Sequence

from .shared import JournalPage

SCHEMA = """
CREATE TABLE IF NOT EXISTS journal_runs (
    run_id TEXT PRIMARY KEY,
    principal TEXT NOT NULL,
    server_id TEXT NOT NULL,
    thread_id TEXT,
    lease_until REAL NOT NULL,
    last_seq INTEGER NOT NULL DEFAULT 0,
    ended_at REAL,
    cancel INTEGER NOT NULL DEFAULT 0,
    answers TEXT
);
CREATE INDEX IF NOT EXISTS journal_runs_ended ON journal_runs (ended_at);
CREATE TABLE IF NOT EXISTS journal_events (
    run_id TEXT NOT NULL REFERENCES journal_runs (run_id) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
);
CREATE TABLE IF NOT EXISTS journal_notes (
    run_id TEXT PRIMARY KEY REFERENCES journal_runs (run_id) ON DELETE CASCADE,
    notes TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS journal_names (
    name TEXT PRIMARY KEY,
    run_id TEXT NOT NULL REFERENCES journal_runs (run_id) ON DELETE CASCADE
);
CREATE INDEX IF NOT EXISTS journal_names_run ON journal_names (run_id);
"""


def migrate(db: sqlite3.Connection) -> None:
    """Add what a file made by an older version lacks (the pending answers' column)."""
    columns = {row[1] for row in db.execute("PRAGMA table_info(journal_runs)")}
    if "answers" not in columns:
        with db:
            db.execute("ALTER TABLE journal_runs ADD COLUMN answers TEXT")


def open_run(db: sqlite3.Connection, run_id: str, principal: str, server_id: str, thread_id: str | None,
             lease_until: float) -> bool:
    """Claim the run's row: a new one, or the same principal's run going on (resumed). A row
    of another principal, or of a run that has ended, is never taken over: False."""
    with db:
        changed = db.execute(
            "INSERT INTO journal_runs (run_id, principal, server_id, thread_id, lease_until) VALUES (?, ?, ?, ?, ?) "
            "ON CONFLICT (run_id) DO UPDATE SET server_id = excluded.server_id, lease_until = excluded.lease_until, "
            "thread_id = COALESCE(excluded.thread_id, journal_runs.thread_id) "
            "WHERE journal_runs.principal = excluded.principal AND journal_runs.ended_at IS NULL",
            (run_id, principal, server_id, thread_id, lease_until),
        ).rowcount
    return changed > 0


def write(db: sqlite3.Connection, run_id: str, first_seq: int, events: Sequence[str], lease_until: float,
          ended: bool) -> bool:
    with db:
        db.executemany("INSERT OR IGNORE INTO journal_events VALUES (?, ?, ?)",
                       [(run_id, first_seq + i, body) for i, body in enumerate(events)])
        db.execute(
            "UPDATE journal_runs SET lease_until = ?, last_seq = MAX(last_seq, ?), ended_at = ?, answers = NULL "
            "WHERE run_id = ?",
            (lease_until, first_seq + len(events) - 1, time.time() if ended else None, run_id),
        )
        row = db.execute("SELECT cancel FROM journal_runs WHERE run_id = ?", (run_id,)).fetchone()
    return bool(row and row[0])


def read(db: sqlite3.Connection, run_id: str, principal: str, after: int, limit: int) -> JournalPage | None:
    run = db.execute(
        "SELECT last_seq, ended_at, lease_until, thread_id FROM journal_runs WHERE run_id = ? AND principal = ?",
        (run_id, principal),
    ).fetchone()
    if run is None:
        return None
    first = db.execute("SELECT MIN(seq) FROM journal_events WHERE run_id = ?", (run_id,)).fetchone()[0] or 1
    events = db.execute(
        "SELECT seq, body FROM journal_events WHERE run_id = ? AND seq > ? ORDER BY seq LIMIT ?",
        (run_id, after, limit),
    ).fetchall()
    return JournalPage([(seq, body) for seq, body in events], first, run[0], run[1] is not None, run[2], run[3])


def cancel(db: sqlite3.Connection, run_id: str, principal: str) -> bool:
    with db:
        changed = db.execute(
            "UPDATE journal_runs SET cancel = 1 WHERE run_id = ? AND principal = ? AND ended_at IS NULL",
            (run_id, principal),
        ).rowcount
    return changed > 0


def answer(db: sqlite3.Connection, run_id: str, principal: str, at_seq: int, answers: str) -> bool:
    """Leave answers for the run's server: only while the run is this principal's, goes on,
    still ends at ``at_seq`` and has no answers pending (one batch wins)."""
    with db:
        changed = db.execute(
            "UPDATE journal_runs SET answers = ? WHERE run_id = ? AND principal = ? AND ended_at IS NULL "
            "AND last_seq = ? AND answers IS NULL",
            (answers, run_id, principal, at_seq),
        ).rowcount
    return changed > 0


def parked(db: sqlite3.Connection, run_id: str, lease_until: float) -> tuple[bool, str | None]:
    """Renew a parked run's lease; (a cancel asked, the answers pending)."""
    with db:
        db.execute("UPDATE journal_runs SET lease_until = ? WHERE run_id = ? AND ended_at IS NULL",
                   (lease_until, run_id))
        row = db.execute("SELECT cancel, answers FROM journal_runs WHERE run_id = ?", (run_id,)).fetchone()
    return (bool(row[0]), row[1]) if row is not None else (False, None)


def prune(db: sqlite3.Connection, ended_before: float) -> int:
    with db:
        return db.execute("DELETE FROM journal_runs WHERE ended_at IS NOT NULL AND ended_at < ?",
                          (ended_before,)).rowcount


def live_on(db: sqlite3.Connection, thread_id: str, besides: str) -> bool:
    row = db.execute(
        "SELECT 1 FROM journal_runs WHERE thread_id = ? AND run_id != ? AND ended_at IS NULL AND lease_until > ? LIMIT 1",
        (thread_id, besides, time.time()),
    ).fetchone()
    return row is not None


def note(db: sqlite3.Connection, run_id: str, notes: str, names: Sequence[str]) -> None:
    """Keep a run's doors' notes and names (:mod:`onedoor.journal.notes`); a name is never
    taken from another run."""
    with db:
        db.execute("INSERT INTO journal_notes VALUES (?, ?) ON CONFLICT (run_id) DO UPDATE SET notes = excluded.notes",
                   (run_id, notes))
        db.executemany("INSERT OR IGNORE INTO journal_names VALUES (?, ?)", [(name, run_id) for name in names])


def notes_of(db: sqlite3.Connection, run_id: str, principal: str) -> str | None:
    row = db.execute(
        "SELECT n.notes FROM journal_notes n JOIN journal_runs r ON r.run_id = n.run_id "
        "WHERE n.run_id = ? AND r.principal = ?", (run_id, principal)).fetchone()
    return None if row is None else str(row[0])


def named(db: sqlite3.Connection, name: str, principal: str) -> str | None:
    row = db.execute(
        "SELECT n.run_id FROM journal_names n JOIN journal_runs r ON r.run_id = n.run_id "
        "WHERE n.name = ? AND r.principal = ?", (name, principal)).fetchone()
    return None if row is None else str(row[0])


def running(db: sqlite3.Connection, thread_id: str, principal: str, ended: bool) -> list[str]:
    rows = db.execute(
        "SELECT run_id FROM journal_runs WHERE thread_id = ? AND principal = ? "
        "AND (? OR (ended_at IS NULL AND lease_until > ?)) ORDER BY ended_at IS NOT NULL, COALESCE(ended_at, lease_until) DESC LIMIT 4",
        (thread_id, principal, ended, time.time())).fetchall()
    return [str(row[0]) for row in rows]
