"""A small connection pool that runs nothing in the background.

Connections are made, checked and given back in the task of the call that needs one, so
nothing of the pool outlives a call, and an event loop can end at any moment without
waiting for the pool. (psycopg_pool's ``AsyncConnectionPool`` connects in worker tasks
that keep running when cancelled, by design: an event loop ending while it reconnects to
a PostgreSQL that is down waits for them forever, so ``onedoor serve`` would hang on
Ctrl-C.)

An idle connection is checked before it is lent without a round trip: a server that ends a
session (a restart of PostgreSQL, an administrator) says so on its socket, so only a
connection whose socket has something to read is asked (an empty query); one that fails
it is dropped and the next one, or a new one, is used instead. Statements are prepared on
their first use on a connection (``prepare_threshold=0``): every later call of the same
statement sends only its parameters.
"""

from __future__ import annotations

import asyncio
import contextlib
import select
from typing import Any, AsyncIterator

import psycopg
from psycopg.pq import TransactionStatus

Connection = psycopg.AsyncConnection[Any]


class ConnectionPool:
    """At most ``size`` connections to ``dsn`` (autocommit); a call waits at most ``timeout``
    seconds for one (all busy, or PostgreSQL not answering) and then fails with
    ``psycopg.OperationalError``. Use it from one event loop."""

    def __init__(self, dsn: str, *, size: int, timeout: float) -> None:
        self._dsn = dsn
        self.size = size
        self.timeout = timeout
        self._idle: list[Connection] = []
        self._slots = asyncio.Semaphore(size)
        self._closed = False

    @contextlib.asynccontextmanager
    async def connection(self) -> AsyncIterator[Connection]:
        try:
            async with asyncio.timeout(self.timeout):
                await self._slots.acquire()
        except TimeoutError:
            raise psycopg.OperationalError(
                f"no free connection after {self.timeout:g} s (all {self.size} are busy)"
            ) from None
        try:
            conn = await self._lend()
            try:
                yield conn
            finally:
                self._give_back(conn)
        finally:
            self._slots.release()

    async def _lend(self) -> Connection:
        try:
            async with asyncio.timeout(self.timeout):
                while self._idle:
                    conn = self._idle.pop()
                    try:
                        if _has_news(conn):  # the server said something while it sat idle: most likely goodbye
                            await conn.execute("")
                        return conn
                    except psycopg.Error:  # broken (PostgreSQL restarted): try the next one
                        conn.pgconn.finish()
                return await connect(self._dsn)
        except TimeoutError:
            raise psycopg.OperationalError(f"PostgreSQL did not answer within {self.timeout:g} s") from None

    def grow(self, size: int) -> None:
        """Allow up to ``size`` connections from now on (never fewer than before)."""
        for _ in range(size - self.size):
            self._slots.release()
        self.size = max(self.size, size)

    def _give_back(self, conn: Connection) -> None:
        usable = not conn.closed and conn.pgconn.transaction_status == TransactionStatus.IDLE
        if usable and not self._closed:
            self._idle.append(conn)
        else:  # broken, or cut off mid-query (a cancelled call): never lent again
            conn.pgconn.finish()

    async def close(self) -> None:
        """Close the idle connections; one in use is closed when it comes back."""
        self._closed = True
        idle, self._idle = self._idle, []
        for conn in idle:
            await conn.close()

    def drop(self) -> None:
        """Close the idle connections without the event loop (the pool's loop has ended)."""
        self._closed = True
        idle, self._idle = self._idle, []
        for conn in idle:
            conn.pgconn.finish()


async def connect(dsn: str) -> Connection:
    """A new connection as the store uses them: autocommit, statements prepared at once."""
    return await psycopg.AsyncConnection.connect(dsn, autocommit=True, prepare_threshold=0)


def _has_news(conn: Connection) -> bool:
    """Whether an idle connection's socket has something to read (or is closed)."""
    if conn.closed:
        raise psycopg.OperationalError("the connection is closed")
    readable, _, _ = select.select([conn.fileno()], [], [], 0)
    return bool(readable)


__all__ = ["ConnectionPool", "connect"]
