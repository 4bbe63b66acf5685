"""ACP sessions kept by the door itself: the fallback when the kernel has no thread store.

With a thread store (the default of ``onedoor serve`` and ``onedoor acp``) sessions are
threads: see :mod:`.thread_sessions`. Without one (``--store none``) this module keeps
them in ACP's own file: a session is its id, working directory, title, backend, history
(a list of onedoor history messages, plain dicts) and settings (e.g. tools always
allowed), one row of ``acp-sessions.sqlite3`` in the data directory
(:func:`onedoor.threads.stores.data_dir`), and its history one row per message. The
manager saves a session on every change and checkpoints a running turn, so a new agent
process answers ``session/load`` with the whole conversation after a crash or a restart.
A save writes only the messages that changed (a turn's own), never the conversation
again: a pasted screenshot is written once, not at every checkpoint of every later turn.
A file of an older version (the history in the session's row) is read as it is and
moves to message rows at its first save.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import time
import uuid
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from onedoor import encode_json_text  # history may hold half an emoji: stored as an escape

DB_NAME = "acp-sessions.sqlite3"
PAGE_SIZE = 50
IDLE_KEPT = 16  # open sessions held in memory while idle, histories and all; the rest reload from the file


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


@dataclass
class Session:
    id: str
    cwd: str
    backend: str
    additional_directories: list[str] = field(default_factory=list)
    title: str = ""
    history: list[dict[str, Any]] = field(default_factory=list)
    settings: dict[str, Any] = field(default_factory=dict)
    created_at: str = field(default_factory=_now)
    updated_at: str = field(default_factory=_now)
    # In memory only:
    closed: bool = False
    turn: Any = None  # the running Turn, if any
    mcp: Any = None  # the editor's MCP servers (editor_mcp.EditorMcp), if any
    stored: int = 0  # how many messages of ``history`` the file holds as they are (SessionStore)


class UnknownSession(LookupError):
    pass


class SessionStore:
    """SQLite table of sessions; every write is committed at once (WAL journal)."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.db = sqlite3.connect(str(path), timeout=10, isolation_level=None, check_same_thread=False)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.execute(
            """CREATE TABLE IF NOT EXISTS sessions (
                id TEXT PRIMARY KEY, cwd TEXT NOT NULL, backend TEXT NOT NULL,
                additional_directories TEXT NOT NULL, title TEXT NOT NULL,
                history TEXT NOT NULL, settings TEXT NOT NULL,
                created_at TEXT NOT NULL, updated_at TEXT NOT NULL)"""
        )
        self.db.execute("CREATE INDEX IF NOT EXISTS sessions_updated ON sessions (updated_at DESC)")
        # ``history`` above is "[]" once a session's messages are rows here (older files keep it there)
        self.db.execute(
            """CREATE TABLE IF NOT EXISTS session_messages (
                session_id TEXT NOT NULL, seq INTEGER NOT NULL, body TEXT NOT NULL,
                PRIMARY KEY (session_id, seq))"""
        )

    def save(self, s: Session, changed_from: int | None = None) -> None:
        """Write the session; of its history only the messages from ``changed_from`` on
        (None: those past what the file holds, a history that only grew), in one transaction."""
        start = s.stored if changed_from is None else min(changed_from, s.stored)
        start = min(start, len(s.history))
        rows = [(s.id, seq, encode_json_text(message)) for seq, message in enumerate(s.history[start:], start)]
        with self._transaction():
            self.db.execute(
                "INSERT OR REPLACE INTO sessions VALUES (?, ?, ?, ?, ?, '[]', ?, ?, ?)",
                (s.id, s.cwd, s.backend, json.dumps(s.additional_directories), s.title, json.dumps(s.settings),
                 s.created_at, s.updated_at),
            )
            if start < s.stored or start == 0:
                self.db.execute("DELETE FROM session_messages WHERE session_id = ? AND seq >= ?", (s.id, start))
            self.db.executemany("INSERT OR REPLACE INTO session_messages VALUES (?, ?, ?)", rows)
        s.stored = len(s.history)

    def load(self, session_id: str) -> Session | None:
        row = self.db.execute("SELECT * FROM sessions WHERE id = ?", (session_id,)).fetchone()
        if row is None:
            return None
        session = self._session(row)
        if row[5] != "[]":  # an older version's file: the history is in the row, rows come at the first save
            session.history = json.loads(row[5])
            return session
        bodies = self.db.execute("SELECT body FROM session_messages WHERE session_id = ? ORDER BY seq", (session_id,))
        session.history = [json.loads(body) for (body,) in bodies]
        session.stored = len(session.history)
        return session

    def page(self, cwd: str | None, offset: int, limit: int) -> list[Session]:
        """A page of sessions, newest first, without their histories (a listing)."""
        if cwd:
            rows = self.db.execute(
                "SELECT * FROM sessions WHERE cwd = ? ORDER BY updated_at DESC, id LIMIT ? OFFSET ?",
                (cwd, limit, offset),
            )
        else:
            rows = self.db.execute("SELECT * FROM sessions ORDER BY updated_at DESC, id LIMIT ? OFFSET ?", (limit, offset))
        return [self._session(r) for r in rows.fetchall()]

    def delete(self, session_id: str) -> None:
        with self._transaction():
            self.db.execute("DELETE FROM sessions WHERE id = ?", (session_id,))
            self.db.execute("DELETE FROM session_messages WHERE session_id = ?", (session_id,))

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[None]:
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")

    def close(self) -> None:
        self.db.close()

    @staticmethod
    def _session(row: tuple) -> Session:
        """The session of a row, its history left empty (``load`` reads it)."""
        sid, cwd, backend, dirs, title, _history, settings, created, updated = row
        return Session(
            id=sid, cwd=cwd, backend=backend, additional_directories=json.loads(dirs), title=title,
            settings=json.loads(settings), created_at=created, updated_at=updated,
        )


class SessionManager:
    """Owns every session of one agent process; the protocol layer stays thin.

    :class:`.thread_sessions.ThreadSessions` has the same methods (sessions as threads);
    the server calls whichever it was given."""

    def __init__(self, store: SessionStore, default_backend: str) -> None:
        self.store = store
        self.default_backend = default_backend
        # Open sessions in memory, least recently used first. An idle one (no turn, no editor
        # MCP servers) past IDLE_KEPT leaves memory, its images with it, and stays open: the
        # next call to it reads it back from the file.
        self.live: OrderedDict[str, Session] = OrderedDict()
        self.away: set[str] = set()  # open, not in memory
        self.closed_away: set[str] = set()  # closed (session/close), not in memory

    def _hold(self, session: Session) -> Session:
        """``session`` in memory, the most recently used; idle ones past the bound leave."""
        self.live[session.id] = session
        self.live.move_to_end(session.id)
        self.away.discard(session.id)
        self.closed_away.discard(session.id)
        idle = [s for s in self.live.values() if s.turn is None and s.mcp is None and s is not session]
        for gone in idle[: max(0, len(idle) - IDLE_KEPT)]:
            del self.live[gone.id]
            (self.closed_away if gone.closed else self.away).add(gone.id)
        return session

    async def start(self) -> None:
        """Nothing to prepare: the table is ready once the store is open."""

    async def create(self, cwd: str, additional_directories: list[str] | None = None) -> Session:
        session = Session(id="sess_" + uuid.uuid4().hex, cwd=cwd, backend=self.default_backend,
                          additional_directories=list(additional_directories or []))
        self._hold(session)
        self.save(session)
        return session

    async def get(self, session_id: str) -> Session:
        """A session this process has open (new, loaded or resumed)."""
        if session_id in self.closed_away:
            raise UnknownSession(f"session {session_id!r} was closed")
        session = self.live.get(session_id)
        if session is None and session_id in self.away:
            session = self.store.load(session_id)  # open, and idle long enough to have left memory
            if session is None:  # deleted meanwhile (another process)
                self.away.discard(session_id)
                raise UnknownSession(f"unknown session {session_id!r}")
        if session is None:
            if self.store.load(session_id) is not None:
                raise UnknownSession(f"session {session_id!r} is not open in this agent process; load or resume it first")
            raise UnknownSession(f"unknown session {session_id!r}")
        if session.closed:
            raise UnknownSession(f"session {session_id!r} was closed")
        return self._hold(session)

    async def open(self, session_id: str, cwd: str | None = None) -> Session:
        """Open a stored session (session/load, session/resume)."""
        session = self.live.get(session_id)
        if session is None or session.closed:
            session = self.store.load(session_id)
            if session is None:
                raise UnknownSession(f"unknown session {session_id!r}")
        self._hold(session)
        if cwd and cwd != session.cwd:
            session.cwd = cwd
            self.save(session)
        return session

    async def history(self, session: Session) -> list[dict[str, Any]]:
        """The conversation to replay (session/load)."""
        return session.history

    async def fork(self, session_id: str, cwd: str) -> Session:
        source = self.live.get(session_id) or self.store.load(session_id)
        if source is None:
            raise UnknownSession(f"unknown session {session_id!r}")
        forked = await self.create(cwd or source.cwd, source.additional_directories)
        forked.backend = source.backend
        forked.history = json.loads(json.dumps(source.history))
        forked.settings = dict(source.settings)
        forked.title = source.title
        self.save(forked)
        return forked

    async def close(self, session_id: str) -> Session:
        session = await self.get(session_id)
        session.closed = True
        return session

    async def reset(self, session: Session) -> int:
        """Forget the conversation, keep the session; how many messages were forgotten."""
        count = len(session.history)
        session.history = []
        self.save(session, changed_from=0)
        return count

    async def page(self, cwd: str | None, cursor: str | None) -> tuple[list[SessionPage], str | None]:
        try:
            offset = int(cursor) if cursor else 0
        except ValueError:
            raise ValueError(f"bad cursor {cursor!r}") from None
        if offset < 0:
            raise ValueError(f"bad cursor {cursor!r}")
        page = self.store.page(cwd, offset, PAGE_SIZE + 1)
        more = len(page) > PAGE_SIZE
        rows = [SessionPage(s.id, s.cwd, s.title, s.updated_at, s.additional_directories) for s in page[:PAGE_SIZE]]
        return rows, (str(offset + PAGE_SIZE) if more else None)

    def save(self, session: Session, changed_from: int | None = None) -> None:
        """Keep the session; ``changed_from``: the first message of its history that changed
        (None: the history only grew, or did not change)."""
        session.updated_at = _now()
        if not session.title:
            for message in session.history:
                if message.get("role") == "user" and message.get("content"):
                    text = " ".join(message["content"].split())
                    session.title = text if len(text) <= 60 else text[:59] + "…"
                    break
        self.store.save(session, changed_from)

    def running(self) -> list[Session]:
        return [s for s in self.live.values() if s.turn is not None]

    # -- a prompt turn: the door records it and keeps it here ---------------------------
    async def prepare_turn(self, session: Session, turn: Any) -> dict[str, Any]:
        """The run's arguments: the history so far."""
        return {"history": session.history}

    async def begin_turn(self, session: Session, turn: Any, prompt: dict[str, Any]) -> None:
        """The run started: keep the prompt (a history message; even if the process dies mid-turn)."""
        turn.base = session.history = session.history + [prompt]
        self.save(session)

    def checkpoint(self, session: Session, turn: Any) -> None:
        session.history = turn.base + turn.recorder.snapshot()
        self.save(session, changed_from=len(turn.base))  # the turn's messages, whatever they were before

    async def end_turn(self, session: Session, turn: Any, note: str) -> None:
        session.history = turn.base + turn.recorder.finish(note, turn.usage)
        self.save(session, changed_from=len(turn.base))

    def close_files(self) -> None:
        self.store.close()


@dataclass
class SessionPage:
    """One line of session/list."""

    id: str
    cwd: str
    title: str
    updated_at: str
    additional_directories: list[str]
