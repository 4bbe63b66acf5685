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
    # a thread's shared state (onedoor.state) and its version; added to tables made before
    "ALTER TABLE onedoor_threads ADD COLUMN IF NOT EXISTS state text NOT NULL DEFAULT '{}'",
    "ALTER TABLE onedoor_threads ADD COLUMN IF NOT EXISTS state_version bigint NOT NULL DEFAULT 0",
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

# One time per statement: a new thread's created_at and updated_at are equal.
NOW = "extract(epoch from statement_timestamp())::double precision"

# One round trip reads a whole thread: its row and its messages in order, one snapshot.
READ_THREAD = """
    SELECT id, owner, title, settings, version, created_at, updated_at,
           ARRAY(SELECT body FROM onedoor_messages WHERE thread_id = t.id ORDER BY seq), state, state_version
    FROM onedoor_threads t WHERE id = %s AND owner = %s
"""
