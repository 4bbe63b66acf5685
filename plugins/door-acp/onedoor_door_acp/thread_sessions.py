"""ACP sessions as threads of the kernel's store: one conversation across every door.

A session id is a thread id. ``session/list`` lists the caller's threads (principal
"local": ACP runs over stdio or SLIM), whichever door started them, newest first;
``session/load`` replays any of them. A prompt runs with ``kernel.run(thread=...)``, so
the kernel appends the turn to the thread. What only ACP needs (cwd, backend, settings,
the turn in flight) is in a side table of ACP's own file (:mod:`.thread_state`).

Crash safety: the kernel appends the prompt as the run starts and the reply as it
ends. While a turn runs, the door also checkpoints its progress (text, tool calls) in
the side table with this process's id. The next process (at start, or when the
session is opened) finds a turn whose process is gone and that never got its reply,
and appends what the agent had said, marked as the kernel marks it
(``INTERRUPTED_REPLY``): kill -9 loses no completed turn and no prompt, and
``session/load`` shows the cut-short reply as such (``kernel.threads.view``: also a turn
another process left cut).

Sessions kept in ``acp-sessions.sqlite3`` (``--store none``, or an older version) move into the store on
the first start (same ids), then removed from that file.
"""

from __future__ import annotations

import logging
import os
import time
from typing import Any

from onedoor import LOCAL_PRINCIPAL, Message
from onedoor.kernel import INTERRUPTED_REPLY as INTERRUPTED  # what the kernel marks such a turn with
from onedoor.threads import Thread, ThreadDesk, ThreadError, append_turn, check_thread_id

from .sessions import PAGE_SIZE, Session, SessionPage, SessionStore, UnknownSession
from .thread_state import ThreadState, ThreadStateTable

log = logging.getLogger("onedoor.door.acp")
PRINCIPAL = LOCAL_PRINCIPAL  # stdio and SLIM callers; the ACP door has no other
LIST_BATCH = 100  # threads read per store call while filtering a listing by cwd
LIST_BATCHES = 20  # at most this many per session/list call (a short page then has a cursor)


def _clip(text: str) -> str:
    return repr(text) if len(text) <= 80 else repr(text[:77] + "...")


def _iso(seconds: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


def _process_alive(pid: Any) -> bool:
    if not isinstance(pid, int) or pid <= 0:
        return False
    if pid == os.getpid():
        return True
    if os.name != "posix":  # no harmless liveness probe: treat another process's turn as abandoned
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _messages(raw: Any) -> list[Message]:
    out = []
    for item in raw if isinstance(raw, list) else ():
        try:
            out.append(Message.from_dict(item))
        except ValueError:
            continue
    return out


def _mark_interrupted(messages: list[Message]) -> list[Message]:
    last = messages[-1] if messages and messages[-1].role == "assistant" else None
    if last is None:
        return messages + [Message("assistant", INTERRUPTED)]
    content = f"{last.content}\n{INTERRUPTED}" if last.content else INTERRUPTED
    return messages[:-1] + [Message("assistant", content, last.tool_calls)]


def _unfinished(thread: Thread, base_count: Any, turn: list[Message]) -> list[Message]:
    """What to append for a turn a dead process left: its progress, marked interrupted,
    when the thread ends with its prompt (the kernel keeps the prompt as a run starts);
    the whole turn when the prompt never reached the thread; nothing when the turn was
    finished or marked already."""
    start = base_count if isinstance(base_count, int) and base_count >= 0 else 0
    after = thread.messages[start:]
    prompt = turn[0]
    if after and after[-1].role == "user" and after[-1].content == prompt.content:
        return _mark_interrupted(turn[1:])
    if any(m.role == "user" and m.content == prompt.content for m in after):
        return []
    return _mark_interrupted(turn)


class ThreadSessions:
    """The session manager (same methods as :class:`.sessions.SessionManager`) over a thread store."""

    def __init__(self, store: Any, legacy: SessionStore, default_backend: str, view: Any = None) -> None:
        self.store = store
        self.view = view or ThreadDesk(store).view  # a thread as readers see it (kernel.threads.view)
        self.legacy = legacy
        self.table = ThreadStateTable(legacy.db)
        self.default_backend = default_backend
        self.live: dict[str, Session] = {}

    # -- start: old sessions in, interrupted turns kept -----------------------------------
    async def start(self) -> None:
        try:
            moved = await self.migrate()
            if moved:
                log.info("acp: moved %d session(s) from %s into the thread store", moved, self.legacy.path)
        except Exception:
            log.warning("acp: moving old sessions into the thread store failed", exc_info=True)
        for state in self.table.with_pending():
            await self._recover(state)

    async def migrate(self) -> int:
        """Move every session of the old table into the store (oldest first); how many."""
        ids = [row[0] for row in self.legacy.db.execute("SELECT id FROM sessions ORDER BY updated_at, id")]
        moved = 0
        for session_id in ids:
            old = self.legacy.load(session_id)
            if old is not None and await self._migrate_one(old):
                self.legacy.delete(session_id)
                moved += 1
        return moved

    async def _migrate_one(self, old: Session) -> bool:
        try:  # an earlier start may have made it, then stopped
            thread, _ = await ThreadDesk(self.store).open(PRINCIPAL, old.id, create=True, title=old.title)
        except ThreadError as exc:
            log.warning("acp: session %s cannot become a thread: %s", old.id, exc)
            return False
        if thread.version == 0 and old.history:
            try:
                await self.store.append(PRINCIPAL, thread.id, _messages(old.history), expected_version=0)
            except ThreadError as exc:
                log.warning("acp: session %s was not moved: %s", old.id, exc)
                return False
        self.table.save(ThreadState(old.id, old.cwd, old.backend, old.additional_directories, old.settings))
        return True

    async def _recover(self, state: ThreadState) -> None:
        """Keep the turn a dead process left in flight (once), marked interrupted."""
        pending = state.pending or {}
        session = self.live.get(state.thread_id)
        if pending.get("pid") == os.getpid() and session is not None and session.turn is not None:
            return  # our own turn, still running
        if pending.get("pid") != os.getpid() and _process_alive(pending.get("pid")):
            return  # another agent process is running it
        messages = _messages(pending.get("messages"))
        try:
            thread = await self.store.get(PRINCIPAL, state.thread_id)
            missing = _unfinished(thread, pending.get("base_count", 0), messages) if thread and messages else []
            if thread is not None and missing:
                await append_turn(self.store, thread, missing)
                log.info("acp: kept the interrupted turn of session %s", state.thread_id)
        except ThreadError as exc:  # too large, deleted meanwhile: nothing more to do
            log.warning("acp: the interrupted turn of session %s was not kept: %s", state.thread_id, exc)
        except Exception:
            log.warning("acp: keeping the interrupted turn of session %s failed", state.thread_id, exc_info=True)
            return
        self.table.set_pending(state.thread_id, None)

    # -- sessions --------------------------------------------------------------------------
    async def _thread(self, session_id: str) -> Thread:
        try:
            check_thread_id(session_id)
        except ThreadError:
            raise UnknownSession(f"unknown session {_clip(session_id)} (not a session id)") from None
        thread = await self.store.get(PRINCIPAL, session_id)
        if thread is None:
            raise UnknownSession(f"unknown session {_clip(session_id)}")
        return thread

    async def create(self, cwd: str, additional_directories: list[str] | None = None) -> Session:
        thread = await self.store.create(PRINCIPAL)
        session = Session(id=thread.id, cwd=cwd, backend=self.default_backend,
                          additional_directories=list(additional_directories or []))
        self.live[session.id] = session
        self.save(session)
        return session

    async def get(self, session_id: str) -> Session:
        """A session this process has open (new, loaded or resumed)."""
        session = self.live.get(session_id)
        if session is None:
            await self._thread(session_id)  # unknown: says so
            raise UnknownSession(f"session {_clip(session_id)} is not open in this agent process; load or resume it first")
        if session.closed:
            raise UnknownSession(f"session {_clip(session_id)} was closed")
        return session

    async def open(self, session_id: str, cwd: str | None = None) -> Session:
        """Open a thread as a session (session/load, session/resume): any door's thread."""
        session = self.live.get(session_id)
        if session is None or session.closed:
            thread = await self._thread(session_id)
            state = self.table.get(session_id)
            if state is None:
                state = ThreadState(thread.id, cwd or "", self.default_backend)
                self.table.save(state)
            elif state.pending:
                await self._recover(state)
            session = Session(id=thread.id, cwd=state.cwd, backend=state.backend, title=thread.title,
                              additional_directories=state.additional_directories, settings=state.settings)
            self.live[session_id] = session
        if cwd and cwd != session.cwd:
            session.cwd = cwd
            self.save(session)
        return session

    async def history(self, session: Session) -> list[dict[str, Any]]:
        """The thread's messages (what session/load replays), as readers see them: a turn no
        run answers any more (its server was killed) shown marked."""
        await self._thread(session.id)  # unknown: says so
        return [m.to_dict() for m in (await self.view(PRINCIPAL, session.id)).messages]

    async def fork(self, session_id: str, cwd: str) -> Session:
        source = await self._thread(session_id)
        origin = self.live.get(session_id) or self._session_of(source)
        thread = await self.store.create(PRINCIPAL, title=source.title, settings=dict(source.settings))
        if source.messages:
            await self.store.append(PRINCIPAL, thread.id, source.messages, expected_version=0)
        forked = Session(id=thread.id, cwd=cwd or origin.cwd, backend=origin.backend, title=source.title,
                         additional_directories=list(origin.additional_directories), settings=dict(origin.settings))
        self.live[forked.id] = forked
        self.save(forked)
        return forked

    def _session_of(self, thread: Thread) -> Session:
        state = self.table.get(thread.id)
        if state is None:
            return Session(id=thread.id, cwd="", backend=self.default_backend, title=thread.title)
        return Session(id=thread.id, cwd=state.cwd, backend=state.backend, title=thread.title,
                       additional_directories=state.additional_directories, settings=state.settings)

    async def close(self, session_id: str) -> Session:
        session = await self.get(session_id)
        session.closed = True
        return session

    async def reset(self, session: Session) -> int:
        """Forget the conversation, keep the session (the thread is emptied: same id)."""
        thread = await self._thread(session.id)
        await self.store.delete(PRINCIPAL, thread.id)
        await self.store.create(PRINCIPAL, thread_id=thread.id, settings=dict(thread.settings))
        session.title = ""
        return len(thread.messages)

    async def page(self, cwd: str | None, cursor: str | None) -> tuple[list[SessionPage], str | None]:
        """One page of session/list, newest first. The cursor is the id of the last session
        shown. With ``cwd``, threads ACP opened in another directory are left out; threads
        ACP never opened (another door's) are shown in every directory."""
        before = await self._cursor(cursor) if cursor else None
        rows: list[SessionPage] = []
        for _ in range(LIST_BATCHES):
            batch = await self.store.list(PRINCIPAL, limit=LIST_BATCH, before=before)
            states = self.table.many([t.id for t in batch])
            for summary in batch:
                state = states.get(summary.id)
                if cwd and state is not None and state.cwd and state.cwd != cwd:
                    continue
                if len(rows) == PAGE_SIZE:
                    return rows, rows[-1].id  # one more matches
                rows.append(SessionPage(
                    summary.id, state.cwd if state is not None and state.cwd else (cwd or os.getcwd()), summary.title,
                    _iso(summary.updated_at), state.additional_directories if state is not None else [],
                ))
            if len(batch) < LIST_BATCH:
                return rows, None
            before = batch[-1].id
        return rows, before  # scanned enough for one call: the client asks for more

    async def _cursor(self, cursor: str) -> str:
        try:
            check_thread_id(cursor)
        except ThreadError:
            raise ValueError(f"bad cursor {_clip(cursor)}: not a cursor this agent gave") from None
        if await self.store.get(PRINCIPAL, cursor) is None:
            raise ValueError(f"bad cursor {_clip(cursor)}: its session is gone; list again without a cursor")
        return cursor

    def save(self, session: Session) -> None:
        self.table.save(ThreadState(session.id, session.cwd, session.backend,
                                    session.additional_directories, session.settings))

    def running(self) -> list[Session]:
        return [s for s in self.live.values() if s.turn is not None]

    # -- a prompt turn: the kernel keeps it in the thread -----------------------------------
    async def prepare_turn(self, session: Session, turn: Any) -> dict[str, Any]:
        """The run's arguments: the thread as it is now."""
        thread = await self._thread(session.id)
        turn.base_count = len(thread.messages)
        return {"thread": thread, "principal": PRINCIPAL}

    async def begin_turn(self, session: Session, turn: Any, prompt: dict[str, Any]) -> None:
        """The run started: checkpoint the prompt, so a crash cannot lose it. Its text only:
        the kernel has kept the prompt, parts and all, in the thread as the run started."""
        kept = {"role": "user", "content": prompt.get("content") or ""}
        turn.pending = {"pid": os.getpid(), "base_count": turn.base_count, "messages": [kept]}
        self.table.set_pending(session.id, turn.pending)

    def checkpoint(self, session: Session, turn: Any) -> None:
        turn.pending["messages"] = turn.pending["messages"][:1] + turn.recorder.snapshot()
        self.table.set_pending(session.id, turn.pending)

    async def end_turn(self, session: Session, turn: Any, note: str) -> None:
        """The kernel has appended the turn (before the run's end): the checkpoint goes."""
        self.table.set_pending(session.id, None)

    def close_files(self) -> None:
        self.legacy.close()
