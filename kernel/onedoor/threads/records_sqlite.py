"""Doors' records in the SQLite file (see :mod:`onedoor.threads.records`). Functions over a
connection; :class:`onedoor.threads.sqlite.SQLiteThreadStore` runs them on its worker thread."""

from __future__ import annotations

import sqlite3
import time
from typing import Any

from .records import MAX_LIST, Record, RecordPage, check_record

SCHEMA = """
CREATE TABLE IF NOT EXISTS door_records (
    kind TEXT NOT NULL,
    id TEXT NOT NULL,
    owner TEXT NOT NULL,
    grp TEXT NOT NULL,
    tag TEXT NOT NULL,
    rank INTEGER NOT NULL,
    thread_id TEXT,
    body TEXT NOT NULL,
    updated_at REAL NOT NULL,
    PRIMARY KEY (kind, id)
);
CREATE INDEX IF NOT EXISTS door_records_by_owner ON door_records (kind, owner, rank DESC, id DESC);
CREATE INDEX IF NOT EXISTS door_records_by_group ON door_records (kind, grp);
CREATE INDEX IF NOT EXISTS door_records_by_thread ON door_records (thread_id, owner) WHERE thread_id IS NOT NULL;
"""

_COLUMNS = "kind, id, owner, body, grp, tag, rank, thread_id, updated_at"


def put(db: sqlite3.Connection, record: Record) -> bool:
    check_record(record)
    db.execute("BEGIN IMMEDIATE")  # the thread it names, checked and kept, in one write transaction
    try:
        if record.thread_id is not None and db.execute(
                "SELECT 1 FROM threads WHERE id = ? AND owner = ?", (record.thread_id, record.owner)).fetchone() is None:
            db.execute("ROLLBACK")
            return False
        changed = db.execute(
            f"INSERT INTO door_records ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (kind, id) DO UPDATE SET body = excluded.body, grp = excluded.grp, tag = excluded.tag, "
            "rank = excluded.rank, thread_id = excluded.thread_id, updated_at = excluded.updated_at "
            "WHERE door_records.owner = excluded.owner",
            (record.kind, record.id, record.owner, record.body, record.group, record.tag, record.rank,
             record.thread_id, time.time()),
        ).rowcount
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise
    return changed > 0


def get(db: sqlite3.Connection, kind: str, owner: str, record_id: str) -> Record | None:
    row = db.execute(f"SELECT {_COLUMNS} FROM door_records WHERE kind = ? AND id = ? AND owner = ?",
                     (kind, record_id, owner)).fetchone()
    return Record(*row) if row is not None else None


def listing(db: sqlite3.Connection, kind: str, owner: str | None, group: str | None, tag: str | None,
            rank_from: int | None, before: tuple[int, str] | None, limit: int) -> RecordPage:
    where: list[str] = ["kind = ?"]
    args: list[Any] = [kind]
    for column, value in (("owner = ?", owner), ("grp = ?", group), ("tag = ?", tag), ("rank >= ?", rank_from)):
        if value is not None:
            where.append(column)
            args.append(value)
    condition = " AND ".join(where)
    total = db.execute(f"SELECT count(*) FROM door_records WHERE {condition}", args).fetchone()[0]
    page_args: list[Any] = list(args)
    if before is not None:
        condition += " AND (rank < ? OR (rank = ? AND id < ?))"
        page_args += [before[0], before[0], before[1]]
    rows = db.execute(f"SELECT {_COLUMNS} FROM door_records WHERE {condition} ORDER BY rank DESC, id DESC LIMIT ?",
                      [*page_args, max(1, min(limit, MAX_LIST))]).fetchall()
    return RecordPage([Record(*row) for row in rows], total)


def delete(db: sqlite3.Connection, kind: str, owner: str, record_id: str) -> bool:
    with db:
        gone = db.execute("DELETE FROM door_records WHERE kind = ? AND id = ? AND owner = ?",
                          (kind, record_id, owner)).rowcount
    return gone > 0


def forget_thread(db: sqlite3.Connection, thread_id: str, owner: str) -> None:
    """Inside the thread's delete: the records that go with it."""
    db.execute("DELETE FROM door_records WHERE thread_id = ? AND owner = ?", (thread_id, owner))


__all__ = ["SCHEMA", "delete", "forget_thread", "get", "listing", "put"]
