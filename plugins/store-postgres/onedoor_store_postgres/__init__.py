"""onedoor's PostgreSQL thread store: ``onedoor serve --store postgres -o postgres.dsn=…``.

The plugin is a factory (entry point ``postgres`` in the ``onedoor.stores`` group): it takes
the :class:`PostgresOptions` and returns a :class:`PostgresThreadStore`. Nothing connects
until the store is first used.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import psycopg.conninfo

from .store import PostgresThreadStore, StoreUnavailable


@dataclass
class PostgresOptions:
    dsn: str = field(
        metadata={
            "help": "PostgreSQL connection string (postgresql://user:password@host/db or 'host=… dbname=…')",
            "secret": True,
        }
    )
    pool_size: int | None = field(
        default=None,
        metadata={"help": "most connections this server opens (default: from the run limit, one per 20 runs, 4 to 20)"},
    )
    timeout: float = field(
        default=10.0, metadata={"help": "seconds a call waits for a connection before it fails (PostgreSQL down, pool busy)"}
    )
    max_thread_chars: int = field(default=64_000_000, metadata={
        "help": "largest thread: characters of text, plus the bytes of its images and files"})
    durable_openings: bool = field(
        default=False,
        metadata={"help": "a turn's first message waits for the disk too (else only its reply does, flushing both)"},
    )
    shared_journal: bool = field(
        default=True,
        metadata={"help": "keep run journals in the database, so a client can reattach through any server sharing it"},
    )

    def __post_init__(self) -> None:
        if not self.dsn.strip():
            raise ValueError("dsn is empty: pass -o postgres.dsn=postgresql://… or set ONEDOOR_POSTGRES_DSN")
        try:
            psycopg.conninfo.conninfo_to_dict(self.dsn)
        except psycopg.ProgrammingError:  # its message quotes the text: it may hold a password
            raise ValueError("dsn is not a PostgreSQL connection string (postgresql://… or 'host=… dbname=…')") from None
        if self.pool_size is not None and self.pool_size < 1:
            raise ValueError("pool_size must be at least 1")
        if not self.timeout > 0:
            raise ValueError("timeout must be more than 0 seconds")
        if self.max_thread_chars < 1000:
            raise ValueError("max_thread_chars must be at least 1000")


def postgres(options: PostgresOptions) -> PostgresThreadStore:
    """The ``postgres`` store plugin."""
    return PostgresThreadStore(
        options.dsn, pool_size=options.pool_size, timeout=options.timeout, max_thread_chars=options.max_thread_chars,
        shared_journal=options.shared_journal, durable_openings=options.durable_openings,
    )


postgres.Options = PostgresOptions  # type: ignore[attr-defined]

__all__ = ["PostgresOptions", "PostgresThreadStore", "StoreUnavailable", "postgres"]
