"""Shared run journals in PostgreSQL (:mod:`onedoor.journal.shared`): what lets a client
reattach, through any server sharing the database, to a run another server drives.

Every write is one statement (one round trip) and says so on the ``onedoor_journal``
channel (``NOTIFY``, sent when it commits): ``e<run_id>`` for events, a renewed lease or an
ending, ``c<run_id>`` for a cancel asked. Readers on other servers wait for that
(:mod:`.notify`), and read again on their own too (backing off to 200 ms) in case a
notification is lost. Journal rows and leases are committed without waiting for the disk
(``synchronous_commit`` off for the statement): they are visible to every server at once
and kept through a restart of PostgreSQL; only a crash of PostgreSQL itself can lose the
last fraction of a second of them, which a reader then finds missing (it reads the
thread, where every reply is kept durably). Functions over a connection;
:class:`PostgresThreadStore` calls them.
"""

from __future__ import annotations

import time
from typing import Any, Sequence

from onedoor.journal import JournalPage

from .schema import NO_WAIT

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
        cancel boolean NOT NULL DEFAULT false,
        answers text
    )
    """,
    "ALTER TABLE onedoor_journal_runs ADD COLUMN IF NOT EXISTS answers text",
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
    """
    CREATE TABLE IF NOT EXISTS onedoor_journal_notes (
        run_id text COLLATE "C" PRIMARY KEY REFERENCES onedoor_journal_runs (run_id) ON DELETE CASCADE,
        notes text NOT NULL
    )
    """,
    """
    CREATE TABLE IF NOT EXISTS onedoor_journal_names (
        name text COLLATE "C" PRIMARY KEY,
        run_id text COLLATE "C" NOT NULL REFERENCES onedoor_journal_runs (run_id) ON DELETE CASCADE
    )
    """,
    "CREATE INDEX IF NOT EXISTS onedoor_journal_names_run ON onedoor_journal_names (run_id)",
)


CHANNEL = "onedoor_journal"
EVENTS, CANCEL = "e", "c"  # what a notification's payload starts with (then the run id); answers left
# for a parked run's server go as a cancel does (its server watches that while the run is parked)

OPEN = f"""{NO_WAIT}
    INSERT INTO onedoor_journal_runs (run_id, principal, server_id, thread_id, lease_until)
    SELECT %s, %s, %s, %s, %s FROM no_wait
    ON CONFLICT (run_id) DO UPDATE SET server_id = EXCLUDED.server_id, lease_until = EXCLUDED.lease_until,
        thread_id = COALESCE(EXCLUDED.thread_id, onedoor_journal_runs.thread_id)
    WHERE onedoor_journal_runs.principal = EXCLUDED.principal AND onedoor_journal_runs.ended_at IS NULL
"""

WRITE = f"""{NO_WAIT},
    added AS (
        INSERT INTO onedoor_journal_events
        SELECT %(run)s, %(first)s + n - 1, body FROM no_wait, unnest(%(bodies)s::text[]) WITH ORDINALITY AS b (body, n)
        ON CONFLICT DO NOTHING
    ),
    run AS (
        UPDATE onedoor_journal_runs SET lease_until = %(lease)s, last_seq = GREATEST(last_seq, %(last)s),
            ended_at = %(ended)s, answers = NULL
        FROM no_wait WHERE run_id = %(run)s RETURNING cancel
    )
    SELECT cancel, pg_notify('{CHANNEL}', '{EVENTS}' || %(run)s) FROM run
"""


async def open_run(conn: Any, run_id: str, principal: str, server_id: str, thread_id: str | None,
                   lease_until: float) -> bool:
    """Claim the run's row: a new one, or the same principal's run going on (resumed). A row
    of another principal, or of a run that has ended, is never taken over: False."""
    cursor = await conn.execute(OPEN, (run_id, principal, server_id, thread_id, lease_until))
    return cursor.rowcount > 0


async def write(conn: Any, run_id: str, first_seq: int, events: Sequence[str], lease_until: float,
                ended: bool) -> bool:
    """Store events from ``first_seq``, renew the lease (and the ending): one statement, and
    its notification. True when a reader asked for the run to be cancelled."""
    cursor = await conn.execute(WRITE, {
        "run": run_id, "first": first_seq, "bodies": list(events), "lease": lease_until,
        "last": first_seq + len(events) - 1, "ended": time.time() if ended else None,
    })
    row = await cursor.fetchone()
    return bool(row and row[0])


READ = """
    SELECT r.last_seq, r.ended_at, r.lease_until, r.thread_id,
           (SELECT min(seq) FROM onedoor_journal_events WHERE run_id = r.run_id), e.seq, e.body
    FROM onedoor_journal_runs r LEFT JOIN LATERAL (
        SELECT seq, body FROM onedoor_journal_events WHERE run_id = r.run_id AND seq > %(after)s ORDER BY seq LIMIT %(limit)s
    ) e ON true
    WHERE r.run_id = %(run)s AND r.principal = %(principal)s
    ORDER BY e.seq
"""


async def read(conn: Any, run_id: str, principal: str, after: int, limit: int) -> JournalPage | None:
    """The run's row and its events after ``after``: one statement (a row per event, or one
    row with no event)."""
    cursor = await conn.execute(READ, {"run": run_id, "principal": principal, "after": after, "limit": max(0, limit)})
    rows = await cursor.fetchall()
    if not rows:
        return None
    run = rows[0]
    events = [(row[5], row[6]) for row in rows if row[5] is not None]
    return JournalPage(events, run[4] or 1, run[0], run[1] is not None, run[2], run[3])


async def cancel(conn: Any, run_id: str, principal: str) -> bool:
    """Ask for the run to be cancelled; its server hears of it at once (the notification)."""
    cursor = await conn.execute(
        f"{NO_WAIT} UPDATE onedoor_journal_runs SET cancel = true FROM no_wait "
        f"WHERE run_id = %s AND principal = %s AND ended_at IS NULL RETURNING pg_notify('{CHANNEL}', '{CANCEL}' || run_id)",
        (run_id, principal),
    )
    return cursor.rowcount > 0


async def answer(conn: Any, run_id: str, principal: str, at_seq: int, answers: str) -> bool:
    """Leave answers for the parked run's server (one statement, its notification): only while
    the run is this principal's, goes on, still ends at ``at_seq`` and has none pending."""
    cursor = await conn.execute(
        f"{NO_WAIT} UPDATE onedoor_journal_runs SET answers = %s FROM no_wait WHERE run_id = %s AND principal = %s "
        f"AND ended_at IS NULL AND last_seq = %s AND answers IS NULL RETURNING pg_notify('{CHANNEL}', '{CANCEL}' || run_id)",
        (answers, run_id, principal, at_seq),
    )
    return cursor.rowcount > 0


async def parked(conn: Any, run_id: str, lease_until: float) -> tuple[bool, str | None]:
    """Renew a parked run's lease; (a cancel asked, the answers pending): one statement."""
    cursor = await conn.execute(
        f"{NO_WAIT} UPDATE onedoor_journal_runs SET lease_until = %s FROM no_wait "
        "WHERE run_id = %s AND ended_at IS NULL RETURNING cancel, answers",
        (lease_until, run_id),
    )
    row = await cursor.fetchone()
    return (bool(row[0]), row[1]) if row is not None else (False, None)


async def prune(conn: Any, ended_before: float) -> int:
    cursor = await conn.execute(
        f"{NO_WAIT} DELETE FROM onedoor_journal_runs USING no_wait WHERE ended_at IS NOT NULL AND ended_at < %s",
        (ended_before,))
    return cursor.rowcount


async def forget_thread(conn: Any, thread_id: str, principal: str) -> None:
    await conn.execute("DELETE FROM onedoor_journal_runs WHERE thread_id = %s AND principal = %s", (thread_id, principal))


NOTE = f"""{NO_WAIT},
    kept AS (
        INSERT INTO onedoor_journal_notes SELECT %(run)s, %(notes)s FROM no_wait
        ON CONFLICT (run_id) DO UPDATE SET notes = EXCLUDED.notes
    )
    INSERT INTO onedoor_journal_names SELECT name, %(run)s FROM no_wait, unnest(%(names)s::text[]) AS n (name)
    ON CONFLICT DO NOTHING
"""


async def note(conn: Any, run_id: str, notes: str, names: Sequence[str]) -> None:
    """Keep a run's doors' notes and names (``onedoor.journal.notes``): one statement; a name
    is never taken from another run."""
    await conn.execute(NOTE, {"run": run_id, "notes": notes, "names": list(names)})


async def notes_of(conn: Any, run_id: str, principal: str) -> str | None:
    cursor = await conn.execute(
        "SELECT n.notes FROM onedoor_journal_notes n JOIN onedoor_journal_runs r ON r.run_id = n.run_id "
        "WHERE n.run_id = %s AND r.principal = %s", (run_id, principal))
    row = await cursor.fetchone()
    return None if row is None else str(row[0])


async def named(conn: Any, name: str, principal: str) -> str | None:
    cursor = await conn.execute(
        "SELECT n.run_id FROM onedoor_journal_names n JOIN onedoor_journal_runs r ON r.run_id = n.run_id "
        "WHERE n.name = %s AND r.principal = %s", (name, principal))
    row = await cursor.fetchone()
    return None if row is None else str(row[0])


async def running(conn: Any, thread_id: str, principal: str, ended: bool) -> list[str]:
    cursor = await conn.execute(
        "SELECT run_id FROM onedoor_journal_runs WHERE thread_id = %s AND principal = %s "
        "AND (%s OR (ended_at IS NULL AND lease_until > %s)) ORDER BY ended_at DESC NULLS FIRST, lease_until DESC LIMIT 4",
        (thread_id, principal, ended, time.time()))
    return [str(row[0]) for row in await cursor.fetchall()]


async def live_on(conn: Any, thread_id: str, besides: str) -> bool:
    cursor = await conn.execute(
        "SELECT 1 FROM onedoor_journal_runs WHERE thread_id = %s AND run_id <> %s AND ended_at IS NULL "
        "AND lease_until > %s LIMIT 1",
        (thread_id, besides, time.time()),
    )
    return await cursor.fetchone() is not None
