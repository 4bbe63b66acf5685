"""What only ACP knows about a thread: one row per thread in ACP's own SQLite file.

The conversation lives in the kernel's thread store; this side table (``acp_threads``
in ``acp-sessions.sqlite3``, the data directory) keeps the rest of an ACP session: its
working directory, extra directories, the backend picked for it, its settings (tools
"always" allowed or rejected) and the turn in flight (the prompt and its progress so
far, with the id of the process running it), so a turn cut short by kill -9 can be
kept, marked interrupted, by the next process. A thread started by another door has no
row until ACP opens it. Every write is committed at once (WAL journal).
"""

from __future__ import annotations

import json
import sqlite3
import time
from dataclasses import dataclass, field
from typing import Any

from onedoor import encode_json_text  # a turn may hold half an emoji: stored as an escape

_SCHEMA = """
CREATE TABLE IF NOT EXISTS acp_threads (
    thread_id TEXT PRIMARY KEY,
    cwd TEXT NOT NULL,
    backend TEXT NOT NULL,
    additional_directories TEXT NOT NULL,
    settings TEXT NOT NULL,
    pending TEXT,
    updated_at REAL NOT NULL
);
"""


@dataclass
class ThreadState:
    thread_id: str
    cwd: str
    backend: str
    additional_directories: list[str] = field(default_factory=list)
    settings: dict[str, Any] = field(default_factory=dict)
    pending: dict[str, Any] | None = None  # the turn in flight: {"pid", "base_count", "messages"}


class ThreadStateTable:
    """The ``acp_threads`` table on an open connection (the one the legacy sessions use)."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db
        self.db.executescript(_SCHEMA)

    def get(self, thread_id: str) -> ThreadState | None:
        row = self.db.execute(
            "SELECT thread_id, cwd, backend, additional_directories, settings, pending FROM acp_threads WHERE thread_id = ?",
            (thread_id,),
        ).fetchone()
        return None if row is None else _state(row)

    def many(self, thread_ids: list[str]) -> dict[str, ThreadState]:
        if not thread_ids:
            return {}
        marks = ",".join("?" * len(thread_ids))
        rows = self.db.execute(
            "SELECT thread_id, cwd, backend, additional_directories, settings, pending FROM acp_threads "
            f"WHERE thread_id IN ({marks})",
            thread_ids,
        ).fetchall()
        return {row[0]: _state(row) for row in rows}

    def save(self, state: ThreadState) -> None:
        """The session's settings; the turn in flight is written by :meth:`set_pending`."""
        self.db.execute(
            """INSERT INTO acp_threads VALUES (?, ?, ?, ?, ?, NULL, ?)
               ON CONFLICT (thread_id) DO UPDATE SET cwd = excluded.cwd, backend = excluded.backend,
               additional_directories = excluded.additional_directories, settings = excluded.settings,
               updated_at = excluded.updated_at""",
            (state.thread_id, state.cwd, state.backend, json.dumps(state.additional_directories),
             json.dumps(state.settings), time.time()),
        )

    def set_pending(self, thread_id: str, pending: dict[str, Any] | None) -> None:
        text = None if pending is None else encode_json_text(pending)
        self.db.execute("UPDATE acp_threads SET pending = ?, updated_at = ? WHERE thread_id = ?", (text, time.time(), thread_id))

    def with_pending(self) -> list[ThreadState]:
        rows = self.db.execute(
            "SELECT thread_id, cwd, backend, additional_directories, settings, pending FROM acp_threads "
            "WHERE pending IS NOT NULL LIMIT 1000"
        ).fetchall()
        return [_state(row) for row in rows]

    def delete(self, thread_id: str) -> None:
        self.db.execute("DELETE FROM acp_threads WHERE thread_id = ?", (thread_id,))


def _state(row: tuple) -> ThreadState:
    thread_id, cwd, backend, dirs, settings, pending = row
    return ThreadState(thread_id, cwd, backend, json.loads(dirs), json.loads(settings),
                       json.loads(pending) if pending else None)
