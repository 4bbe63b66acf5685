"""The ``postgres`` store plugin: found through its entry point, options checked before
anything connects (the DSN is a secret), tables made on first use, and a clear error
when PostgreSQL cannot be reached."""

from __future__ import annotations

import asyncio

import psycopg
import pytest
from onedoor import plugins
from onedoor.errors import OptionsError
from onedoor.plugins.options import describe, redacted
from onedoor.plugins.serve import make_store
from onedoor_store_postgres import PostgresOptions, PostgresThreadStore, StoreUnavailable
from onedoor_test_support import await_for
from pg_server import waiting_on_a_row_lock

SECRET_DSN = "postgresql://onedoor:hunter2-very-secret@127.0.0.1:1/threads"


def test_the_entry_point_names_the_factory_and_its_options():
    factory = plugins.load("store", "postgres")
    assert factory.Options is PostgresOptions
    store = make_store("postgres", cli={"dsn": SECRET_DSN, "pool_size": "3", "max_thread_chars": "5000"})
    assert isinstance(store, PostgresThreadStore)
    assert (store.pool_size, store.max_thread_chars, store.timeout) == (3, 5000, 10.0)


@pytest.mark.parametrize(("runs", "size"), [(10, 4), (200, 10), (300, 15), (5000, 20)])
def test_the_pool_is_sized_from_the_run_limit_unless_set(runs, size):
    from onedoor.builtins.scripted import scripted
    from onedoor.kernel import Backend, Kernel, Limits

    backend = Backend("scripted", scripted)
    store = make_store("postgres", cli={"dsn": SECRET_DSN})
    Kernel(backend, limits=Limits(max_concurrent_runs=runs), store=store).journals  # noqa: B018 - what doors reach for
    assert store.pool_size == size
    kernel = Kernel(backend, limits=Limits(max_concurrent_runs=runs))
    kernel.journals  # noqa: B018 - made first, the store set after: the same
    kernel.store = later = make_store("postgres", cli={"dsn": SECRET_DSN})
    assert later.pool_size == size
    kernel.store = chosen = make_store("postgres", cli={"dsn": SECRET_DSN, "pool_size": "3"})
    assert chosen.pool_size == 3


def test_the_dsn_is_a_secret_never_shown():
    options = PostgresOptions(dsn=SECRET_DSN)
    assert redacted(options)["dsn"] == "***"
    rows = {name: (default, text) for name, default, text in describe(PostgresOptions)}
    assert rows["dsn"][0] == "(required)" and "hunter2" not in repr(rows)


@pytest.mark.parametrize(
    ("cli", "says"),
    [
        ({}, "'dsn' of 'postgres' is required"),
        ({"dsn": "  "}, "dsn is empty"),
        ({"dsn": "host=x hunter2-very-secret"}, "not a PostgreSQL connection string"),
        ({"dsn": SECRET_DSN, "pool_size": "0"}, "pool_size must be at least 1"),
        ({"dsn": SECRET_DSN, "timeout": "0"}, "timeout must be more than 0"),
        ({"dsn": SECRET_DSN, "max_thread_chars": "10"}, "max_thread_chars must be at least 1000"),
        ({"dsn": SECRET_DSN, "pool": "3"}, "unknown option 'pool'"),
    ],
)
def test_bad_options_are_refused_before_anything_connects(cli, says, monkeypatch):
    monkeypatch.delenv("ONEDOOR_POSTGRES_DSN", raising=False)
    with pytest.raises(OptionsError, match=says) as refused:
        make_store("postgres", cli=cli)
    assert "hunter2" not in str(refused.value), "the error does not echo the DSN's password"


async def test_the_tables_are_made_on_first_use(postgres):
    with psycopg.connect(postgres.dsn, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS onedoor_messages, onedoor_threads, onedoor_journal_events, onedoor_journal_notes, "
                     "onedoor_journal_names, onedoor_journal_runs, onedoor_thread_turns, onedoor_records")
    store = PostgresThreadStore(postgres.dsn, pool_size=2)
    try:
        with psycopg.connect(postgres.dsn) as conn:
            assert conn.execute("SELECT to_regclass('onedoor_threads')").fetchone() == (None,), "nothing before first use"
        thread = await store.create("alice")
        assert await store.get("alice", thread.id) == thread
        with psycopg.connect(postgres.dsn) as conn:
            tables = {row[0] for row in conn.execute("SELECT tablename FROM pg_tables WHERE tablename LIKE 'onedoor_%'")}
        assert tables == {"onedoor_threads", "onedoor_messages", "onedoor_journal_runs", "onedoor_journal_events",
                          "onedoor_journal_notes", "onedoor_journal_names", "onedoor_thread_turns", "onedoor_records"}
    finally:
        await store.close()


async def test_two_stores_starting_at_once_both_make_the_tables_safely(postgres):
    with psycopg.connect(postgres.dsn, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS onedoor_messages, onedoor_threads, onedoor_journal_events, onedoor_journal_notes, "
                     "onedoor_journal_names, onedoor_journal_runs, onedoor_thread_turns, onedoor_records")
    stores = [PostgresThreadStore(postgres.dsn, pool_size=1) for _ in range(4)]
    try:
        made = await asyncio.gather(*(store.create("alice") for store in stores))
        assert len({thread.id for thread in made}) == 4
        assert len(await stores[0].list("alice")) == 4
    finally:
        for store in stores:
            await store.close()


async def test_an_unreachable_server_is_a_clear_error_within_the_timeout(tmp_path):
    store = PostgresThreadStore(f"host={tmp_path} port=5432 dbname=postgres user=onedoor", timeout=1.0)
    try:
        with pytest.raises(StoreUnavailable, match=r"the thread store \(PostgreSQL\) is unavailable: .*try again"):
            await store.get("alice", "t-1")
    finally:
        await store.close()
    with pytest.raises(StoreUnavailable, match="closed"):
        await store.get("alice", "t-1")


def test_a_store_used_from_one_event_loop_after_another_reconnects(own_postgres):
    """`onedoor serve` closes its store after the server's loop ended; a CLI may run one loop
    after another: the store follows the loop it is used from."""
    store = PostgresThreadStore(own_postgres.dsn, pool_size=2)
    thread = asyncio.run(store.create("alice"))
    assert asyncio.run(store.get("alice", thread.id)) == thread, "used again from a new event loop"
    asyncio.run(store.close())
    with psycopg.connect(own_postgres.dsn) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()"
        ).fetchone()
    assert row == (0,), "closing from a third loop left no connection open"


async def test_a_call_that_finds_every_connection_busy_fails_after_the_timeout(postgres):
    store = PostgresThreadStore(postgres.dsn, pool_size=1, timeout=0.5)
    holder = await psycopg.AsyncConnection.connect(postgres.dsn)
    try:
        thread = await store.create("alice")
        await holder.execute("SELECT 1 FROM onedoor_threads WHERE id = %s FOR UPDATE", (thread.id,))
        waiting = asyncio.create_task(store.append("alice", thread.id, [], expected_version=0))  # holds the only connection
        await await_for(lambda: waiting_on_a_row_lock(postgres.dsn), "the append to wait for the row lock")
        with pytest.raises(StoreUnavailable, match=r"no free connection after 0.5 s \(all 1 are busy\)"):
            await store.get("alice", thread.id)
        await holder.rollback()
        assert (await waiting).version == 1, "the waiting call went on once the lock was released"
        assert (await store.get("alice", thread.id)).version == 1
    finally:
        await holder.close()
        await store.close()


async def test_a_database_made_by_the_previous_version_gets_the_state_columns(own_postgres):
    """Tables made before threads kept a state: opening the store adds the two columns (once,
    and never again: ALTER TABLE would lock the table against other servers), and a thread
    made then reads with an empty state at version 0. (Run on every open, ALTER TABLE deadlocked
    with a writer on another server: check_concurrent_writers_on_two_stores.)"""
    with psycopg.connect(own_postgres.dsn, autocommit=True) as conn:
        conn.execute("""CREATE TABLE onedoor_threads (id text COLLATE "C" PRIMARY KEY, owner text NOT NULL,
            title text NOT NULL, settings text NOT NULL, version bigint NOT NULL, chars bigint NOT NULL,
            message_count integer NOT NULL, created_at double precision NOT NULL, updated_at double precision NOT NULL)""")
        conn.execute("INSERT INTO onedoor_threads VALUES ('old', 'alice', '\"Old\"', '{}', 0, 0, 0, 1.0, 1.0)")
    store = PostgresThreadStore(own_postgres.dsn)
    try:
        old = await store.get("alice", "old")
        assert old is not None and (old.title, old.state, old.state_version) == ("Old", {}, 0)
        kept = await store.update_state("alice", "old", {"n": 1}, expected_version=0)
        assert (kept.state, kept.state_version) == ({"n": 1}, 1)
    finally:
        await store.close()


def test_readiness_follows_postgresql(own_postgres):
    """/readyz is 503 while PostgreSQL is down and 200 again once it is back; /healthz stays 200."""
    import httpx
    from onedoor_test_support import wait_for
    from onedoor_transport_http.testing import start_server

    args = ["--door", "rest", "--store", "postgres", "-o", f"postgres.dsn={own_postgres.dsn}", "-o", "postgres.timeout=1"]
    with start_server(args) as server:
        ready = lambda: httpx.get(server.base_url + "/readyz", timeout=10)  # noqa: E731
        assert ready().json() == {"status": "ready"}
        own_postgres.stop()
        down = wait_for(lambda: (r := ready()).status_code == 503 and r, "readyz 503", timeout=20)
        assert down.json() == {"status": "not_ready", "reason": "store"}
        assert httpx.get(server.base_url + "/healthz", timeout=10).status_code == 200
        own_postgres._pg_ctl("start")  # the same data again
        wait_for(lambda: ready().status_code == 200, "readyz 200 again", timeout=30)
