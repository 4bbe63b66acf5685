"""The tables the store keeps, created on first use.

Text columns hold JSON text (``title`` as a JSON string, ``settings`` and each message
``body`` as JSON documents) rather than ``jsonb``: PostgreSQL's ``text`` and ``jsonb`` cannot
hold the NUL character, and JSON's escaping (``\\u0000``) keeps any text a user sends exact.
Times are seconds since the epoch from the database's clock, so servers sharing the
database order threads by one clock.
"""

from __future__ import annotations

# Any constant: servers starting together take this advisory lock so that only one of them
# runs the CREATE statements at a time (concurrent CREATE ... IF NOT EXISTS can still collide).
SCHEMA_LOCK = 0x6F6E65646F6F72

SCHEMA = (
    """
    CREATE TABLE IF NOT EXISTS onedoor_threads (
        id text COLLATE "C" PRIMARY KEY,  -- byte order, as SQLite compares: listing pages by id
        owner text NOT NULL,
        title text NOT NULL,
        settings text NOT NULL,
        version bigint NOT NULL,
        chars bigint NOT NULL,
        message_count integer NOT NULL,
        created_at double precision NOT NULL,
        updated_at double precision NOT NULL
    )
    """,
    "CREATE INDEX IF NOT EXISTS onedoor_threads_by_owner ON onedoor_threads (owner, updated_at DESC, id DESC)",
    """
    CREATE TABLE IF NOT EXISTS onedoor_thread_turns (
        run_id text COLLATE "C" PRIMARY KEY,
        owner text NOT NULL,
        thread_id text COLLATE "C" NOT NULL,
        holder text NOT NULL,
        lease_until double precision NOT NULL
    )
    """,
    "CREATE INDEX IF NOT EXISTS onedoor_thread_turns_by_thread ON onedoor_thread_turns (thread_id, owner)",
    """
    CREATE TABLE IF NOT EXISTS onedoor_messages (
        thread_id text COLLATE "C" NOT NULL REFERENCES onedoor_threads (id) ON DELETE CASCADE,
        seq integer NOT NULL,
        body text NOT NULL,
        PRIMARY KEY (thread_id, seq)
    )
    """,
)

# Columns added after the first release, to tables made before: (table, column, definition).
# Added only when missing (ALTER TABLE locks the table, even when there is nothing to add).
ADDED_COLUMNS = (
    ("onedoor_threads", "state", "text NOT NULL DEFAULT '{}'"),  # a thread's shared state (onedoor.state)
    ("onedoor_threads", "state_version", "bigint NOT NULL DEFAULT 0"),
)
MISSING_COLUMNS = """
    SELECT t.table_name, t.column_name FROM unnest(%s::text[], %s::text[]) AS t (table_name, column_name)
    WHERE NOT EXISTS (SELECT 1 FROM information_schema.columns c WHERE c.table_schema = current_schema()
                      AND c.table_name = t.table_name AND c.column_name = t.column_name)
"""


async def add_missing_columns(conn: object) -> None:
    """Add the columns of :data:`ADDED_COLUMNS` a table made by an older version lacks."""
    tables = [table for table, _, _ in ADDED_COLUMNS]
    columns = [column for _, column, _ in ADDED_COLUMNS]
    cursor = await conn.execute(MISSING_COLUMNS, (tables, columns))  # type: ignore[attr-defined]
    missing = {tuple(row) for row in await cursor.fetchall()}
    for table, column, definition in ADDED_COLUMNS:
        if (table, column) in missing:
            await conn.execute(f"ALTER TABLE {table} ADD COLUMN IF NOT EXISTS {column} {definition}")  # type: ignore[attr-defined]


# One time per statement: a new thread's created_at and updated_at are equal.
NOW = "extract(epoch from statement_timestamp())::double precision"

# A statement that joins ``no_wait`` commits without waiting for the disk: at once visible to
# every session and kept through a restart of PostgreSQL, flushed within a fraction of a
# second (by the next commit that waits, or the WAL writer); only a crash of PostgreSQL can
# lose it before that. For what can be lost so: leases, journals, the opening of a turn.
NO_WAIT = "WITH no_wait AS (SELECT set_config('synchronous_commit', 'off', true))"

# One round trip reads a thread: its row and its messages in order from seq ``from``
# (those before it the store has parsed already), one snapshot; ``message_count`` and
# ``created_at`` tell the store whether what it holds is this thread's.
READ_THREAD = """
    SELECT id, owner, title, settings, version, created_at, updated_at,
           ARRAY(SELECT body FROM onedoor_messages WHERE thread_id = t.id AND seq >= %(from)s ORDER BY seq),
           state, state_version, message_count
    FROM onedoor_threads t WHERE id = %(id)s AND owner = %(owner)s
"""

# One round trip appends to a thread: the row locked, the compare-and-set and the size limit
# checked, the messages added, the row moved on, the thread read back (its messages before
# this statement, from seq ``from``: the caller adds the new ones). No row: no such thread of this owner; a
# row whose ``kept`` is null: the check refused it (the caller says why from ``version``
# and ``chars``). ``wait``: ``no_wait`` to commit without waiting for the disk.
APPEND = """
    {wait} old AS (
        SELECT version, chars, message_count, title FROM onedoor_threads
        WHERE id = %(id)s AND owner = %(owner)s FOR UPDATE
    ),
    fits AS (SELECT * FROM old WHERE version = %(expected)s AND chars + %(added)s <= %(limit)s),
    added AS (
        INSERT INTO onedoor_messages
        SELECT %(id)s, fits.message_count + n - 1, body FROM fits, unnest(%(bodies)s::text[]) WITH ORDINALITY AS b (body, n)
    ),
    kept AS (
        UPDATE onedoor_threads t SET version = fits.version + 1, chars = fits.chars + %(added)s,
            message_count = fits.message_count + %(count)s,
            title = CASE WHEN fits.title = '""' THEN %(title)s ELSE fits.title END, updated_at = {now}
        FROM fits {joined} WHERE t.id = %(id)s
        RETURNING t.id, t.owner, t.title, t.settings, t.version, t.created_at, t.updated_at, t.state, t.state_version
    )
    SELECT old.version, old.chars, kept.id, kept.owner, kept.title, kept.settings, kept.version, kept.created_at,
           kept.updated_at, ARRAY(SELECT body FROM onedoor_messages WHERE thread_id = %(id)s AND seq >= %(from)s
                                  ORDER BY seq),
           kept.state, kept.state_version, old.message_count
    FROM old LEFT JOIN kept ON true
"""
APPEND_DURABLE = APPEND.format(wait="WITH", now=NOW, joined="")
APPEND_NO_WAIT = APPEND.format(wait=NO_WAIT + ",", now=NOW, joined=", no_wait")
