"""News of shared journals pushed by PostgreSQL: one connection per store ``LISTEN``s on the
journal channel (:mod:`.journal` says what each write sends), so a reader on this server
learns of another server's events, and a run's server of a cancel asked elsewhere, when
they are committed rather than at its next poll.

The connection is opened on the first watch and kept (reconnecting, backing off, when
PostgreSQL goes away: meanwhile nothing is heard and the kernel's polling carries on);
every time it starts listening again, everyone watching is told, since news may have been
missed, and so every time it stops (they poll as often as without news, until it is back).
Nothing runs in the background of a store nobody watches through.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Callable

import psycopg

from .journal import CANCEL, CHANNEL, EVENTS
from .pool import Connection, connect

log = logging.getLogger("onedoor.store.postgres")

KINDS = {"events": EVENTS, "cancel": CANCEL}
RETRY_FIRST, RETRY_MAX = 0.05, 1.0


class JournalNews:
    """``watch(run_id, kind, callback)``: ``callback()`` on the event loop whenever PostgreSQL
    says there is news of that kind for the run (and whenever news may have been missed)."""

    def __init__(self, dsn: str) -> None:
        self._dsn = dsn
        self._watchers: dict[str, list[Callable[[], None]]] = {}
        self._task: asyncio.Task[None] | None = None
        self._conn: Connection | None = None
        self.listening = False

    def watch(self, run_id: str, kind: str, callback: Callable[[], None]) -> Callable[[], None]:
        """Start watching; returns the function that stops it."""
        key = KINDS[kind] + run_id
        self._watchers.setdefault(key, []).append(callback)
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._listen(), name="onedoor-postgres-journal-news")

        def stop() -> None:
            callbacks = self._watchers.get(key)
            if callbacks is not None and callback in callbacks:
                callbacks.remove(callback)
                if not callbacks:
                    del self._watchers[key]

        return stop

    async def close(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(BaseException):
                await task

    def drop(self) -> None:
        """Let go without the event loop (it has ended): the connection is closed, not awaited."""
        self._task = None
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.pgconn.finish()

    async def _listen(self) -> None:
        pause = RETRY_FIRST
        while True:
            try:
                self._conn = conn = await connect(self._dsn)
                await conn.execute(f"LISTEN {CHANNEL}")
                self.listening, pause = True, RETRY_FIRST
                self._tell_everyone()  # whatever was sent before this could hear it
                async for note in conn.notifies():
                    self._tell(note.payload)
            except psycopg.Error as exc:
                log.debug("journal news: not listening (%s); readers poll meanwhile", exc)
            finally:
                if self.listening:  # news may be missed from now on: everyone polls as without it
                    self.listening = False
                    self._tell_everyone()
                opened, self._conn = self._conn, None
                if opened is not None:
                    with contextlib.suppress(Exception):
                        await opened.close()
            await asyncio.sleep(pause)
            pause = min(pause * 2, RETRY_MAX)

    def _tell(self, key: str) -> None:
        for callback in tuple(self._watchers.get(key, ())):
            callback()

    def _tell_everyone(self) -> None:
        for callbacks in tuple(self._watchers.values()):
            for callback in tuple(callbacks):
                callback()


__all__ = ["KINDS", "JournalNews"]
