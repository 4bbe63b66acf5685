"""Shared run journals in PostgreSQL (:mod:`onedoor.journal.shared`): what lets a client
reattach, through any server sharing the database, to a run another server drives.

Readers on other servers poll (the kernel backs off from 5 to 200 ms); one indexed read
per poll. Functions over a connection; :class:`PostgresThreadStore` calls them.
"""

from __future__ import annotations

import time
from typing import Any, Sequence

from onedoor.journal import JournalPage

SCHEMA = (
    """
    CREATE TABLE IF NOT EXISTS onedoor_journal_runs (
        run_id text COLLATE "C" PRIMARY KEY,
        principal text NOT NULL,
        server_id text NOT NULL,
        thread_id text,
        lease_until double precision NOT NULL,
        last_seq bigint NOT NULL DEFAULT 0,
        ended_at double precision,
        cancel boolean NOT NULL DEFAULT false
    )
    """,
    "CREATE INDEX IF NOT EXISTS onedoor_journal_runs_ended ON onedoor_journal_runs (ended_at)",
    "CREATE INDEX IF NOT EXISTS onedoor_journal_runs_thread ON onedoor_journal_runs (thread_id)",
    """
    CREATE TABLE IF NOT EXISTS onedoor_journal_events (
        run_id text COLLATE "C" NOT NULL REFERENCES onedoor_journal_runs (run_id) ON DELETE CASCADE,
        seq bigint NOT NULL,
        body text NOT NULL,
        PRIMARY KEY (run_id, seq)
    )
    """,
)


async def open_run(conn: Any, run_id: str, principal: str, server_id: str, thread_id: str | None,
                   lease_until: float) -> bool:
    """Claim the run's row: a new one, or the same principal's run going on (resumed). A row
    of another principal, or of a run that has ended, is never taken over: False."""
    cursor = await conn.execute(
        "INSERT INTO onedoor_journal_runs (run_id, principal, server_id, thread_id, lease_until) "
        "VALUES (%s, %s, %s, %s, %s) ON CONFLICT (run_id) DO UPDATE SET server_id = EXCLUDED.server_id, "
        "lease_until = EXCLUDED.lease_until, thread_id = COALESCE(EXCLUDED.thread_id, onedoor_journal_runs.thread_id) "
        "WHERE onedoor_journal_runs.principal = EXCLUDED.principal AND onedoor_journal_runs.ended_at IS NULL",
        (run_id, principal, server_id, thread_id, lease_until),
    )
    return cursor.rowcount > 0


async def write(conn: Any, run_id: str, first_seq: int, events: Sequence[str], lease_until: float,
                ended: bool) -> bool:
    async with conn.transaction():
        if events:
            async with conn.cursor() as cursor:
                await cursor.executemany(
                    "INSERT INTO onedoor_journal_events VALUES (%s, %s, %s) ON CONFLICT DO NOTHING",
                    [(run_id, first_seq + i, body) for i, body in enumerate(events)],
                )
        cursor = await conn.execute(
            "UPDATE onedoor_journal_runs SET lease_until = %s, last_seq = GREATEST(last_seq, %s), ended_at = %s "
            "WHERE run_id = %s RETURNING cancel",
            (lease_until, first_seq + len(events) - 1, time.time() if ended else None, run_id),
        )
        row = await cursor.fetchone()
    return bool(row and row[0])


async def read(conn: Any, run_id: str, principal: str, after: int, limit: int) -> JournalPage | None:
    cursor = await conn.execute(
        "SELECT last_seq, ended_at, lease_until, thread_id, "
        "(SELECT min(seq) FROM onedoor_journal_events WHERE run_id = r.run_id) "
        "FROM onedoor_journal_runs r WHERE run_id = %s AND principal = %s",
        (run_id, principal),
    )
    run = await cursor.fetchone()
    if run is None:
        return None
    events: list[tuple[int, str]] = []
    if limit > 0:
        cursor = await conn.execute(
            "SELECT seq, body FROM onedoor_journal_events WHERE run_id = %s AND seq > %s ORDER BY seq LIMIT %s",
            (run_id, after, limit),
        )
        events = [(seq, body) for seq, body in await cursor.fetchall()]
    return JournalPage(events, run[4] or 1, run[0], run[1] is not None, run[2], run[3])


async def cancel(conn: Any, run_id: str, principal: str) -> bool:
    cursor = await conn.execute(
        "UPDATE onedoor_journal_runs SET cancel = true WHERE run_id = %s AND principal = %s AND ended_at IS NULL",
        (run_id, principal),
    )
    return cursor.rowcount > 0


async def prune(conn: Any, ended_before: float) -> int:
    cursor = await conn.execute(
        "DELETE FROM onedoor_journal_runs WHERE ended_at IS NOT NULL AND ended_at < %s", (ended_before,))
    return cursor.rowcount


async def forget_thread(conn: Any, thread_id: str, principal: str) -> None:
    await conn.execute("DELETE FROM onedoor_journal_runs WHERE thread_id = %s AND principal = %s", (thread_id, principal))


async def live_on(conn: Any, thread_id: str, besides: str) -> bool:
    cursor = await conn.execute(
        "SELECT 1 FROM onedoor_journal_runs WHERE thread_id = %s AND run_id <> %s AND ended_at IS NULL "
        "AND lease_until > %s LIMIT 1",
        (thread_id, besides, time.time()),
    )
    return await cursor.fetchone() is not None
