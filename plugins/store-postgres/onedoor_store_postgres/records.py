"""Doors' records in PostgreSQL (:mod:`onedoor.threads.records`): the A2A door's tasks and
push-notification configs, read through any server sharing the database. Functions over a
connection; :class:`PostgresThreadStore` calls them."""

from __future__ import annotations

from typing import Any

from onedoor.threads.records import MAX_LIST, Record, RecordPage, check_record

from .schema import NOW

SCHEMA = (
    """
    CREATE TABLE IF NOT EXISTS onedoor_records (
        kind text COLLATE "C" NOT NULL,
        id text COLLATE "C" NOT NULL,
        owner text NOT NULL,
        grp text COLLATE "C" NOT NULL,
        tag text NOT NULL,
        rank bigint NOT NULL,
        thread_id text COLLATE "C",
        body text NOT NULL,
        updated_at double precision NOT NULL,
        PRIMARY KEY (kind, id)
    )
    """,
    "CREATE INDEX IF NOT EXISTS onedoor_records_by_owner ON onedoor_records (kind, owner, rank DESC, id DESC)",
    "CREATE INDEX IF NOT EXISTS onedoor_records_by_group ON onedoor_records (kind, grp)",
    "CREATE INDEX IF NOT EXISTS onedoor_records_by_thread ON onedoor_records (thread_id, owner) WHERE thread_id IS NOT NULL",
)

_COLUMNS = "kind, id, owner, body, grp, tag, rank, thread_id, updated_at"


# One statement puts a record: a thread it names is checked (and locked against its delete)
# in the same statement; another owner's id is left as it is (no row changed).
PUT = f"""
    WITH thread AS (
        SELECT 1 FROM onedoor_threads WHERE id = %(thread)s AND owner = %(owner)s FOR SHARE
    )
    INSERT INTO onedoor_records ({_COLUMNS})
    SELECT %(kind)s, %(id)s, %(owner)s, %(body)s, %(group)s, %(tag)s, %(rank)s, %(thread)s, {NOW}
    WHERE %(thread)s::text IS NULL OR EXISTS (SELECT 1 FROM thread)
    ON CONFLICT (kind, id) DO UPDATE SET body = EXCLUDED.body, grp = EXCLUDED.grp, tag = EXCLUDED.tag,
        rank = EXCLUDED.rank, thread_id = EXCLUDED.thread_id, updated_at = EXCLUDED.updated_at
    WHERE onedoor_records.owner = EXCLUDED.owner
"""


async def put(conn: Any, record: Record) -> bool:
    check_record(record)
    cursor = await conn.execute(PUT, {
        "kind": record.kind, "id": record.id, "owner": record.owner, "body": record.body, "group": record.group,
        "tag": record.tag, "rank": record.rank, "thread": record.thread_id,
    })
    return cursor.rowcount > 0


async def get(conn: Any, kind: str, owner: str, record_id: str) -> Record | None:
    cursor = await conn.execute(f"SELECT {_COLUMNS} FROM onedoor_records WHERE kind = %s AND id = %s AND owner = %s",
                                (kind, record_id, owner))
    row = await cursor.fetchone()
    return Record(*row) if row is not None else None


async def listing(conn: Any, kind: str, owner: str | None, group: str | None, tag: str | None,
                  rank_from: int | None, before: tuple[int, str] | None, limit: int) -> RecordPage:
    """One statement: the count over every page, and this page's records (none: one row of nulls)."""
    where: list[str] = ["kind = %s"]
    args: list[Any] = [kind]
    for column, value in (("owner = %s", owner), ("grp = %s", group), ("tag = %s", tag), ("rank >= %s", rank_from)):
        if value is not None:
            where.append(column)
            args.append(value)
    condition = " AND ".join(where)
    page = condition + (" AND (rank, id) < (%s, %s)" if before is not None else "")
    cursor = await conn.execute(
        f"WITH total AS (SELECT count(*) AS n FROM onedoor_records WHERE {condition}), "
        f"page AS (SELECT {_COLUMNS} FROM onedoor_records WHERE {page} ORDER BY rank DESC, id DESC LIMIT %s) "
        f"SELECT total.n, page.* FROM total LEFT JOIN page ON true ORDER BY page.rank DESC, page.id DESC",
        [*args, *args, *(before or ()), max(1, min(limit, MAX_LIST))],
    )
    rows = await cursor.fetchall()
    return RecordPage([Record(*row[1:]) for row in rows if row[1] is not None], rows[0][0] if rows else 0)


async def delete(conn: Any, kind: str, owner: str, record_id: str) -> bool:
    cursor = await conn.execute("DELETE FROM onedoor_records WHERE kind = %s AND id = %s AND owner = %s",
                                (kind, record_id, owner))
    return cursor.rowcount > 0


async def forget_thread(conn: Any, thread_id: str, owner: str) -> None:
    """Inside the thread's delete: the records that go with it."""
    await conn.execute("DELETE FROM onedoor_records WHERE thread_id = %s AND owner = %s", (thread_id, owner))
