"""Shared journals hear of each other through PostgreSQL's LISTEN/NOTIFY: a reader on
another server gets a run's events from the notifications (its own polls spaced an hour
apart), a cancel asked through another server reaches a silent run at once (no lease
renewal due for an hour), and when the notifications stop (the listening session killed)
readers carry on by polling, then hear again. Two kernels, two stores, one database."""

from __future__ import annotations

import asyncio

import psycopg
import pytest
from onedoor.builtins.scripted import ScriptedOptions, scripted
from onedoor.events import STOP_CANCELLED, RunFinished, TextDelta
from onedoor.journal import news, shared
from onedoor.kernel import Backend, Kernel
from onedoor_store_postgres import PostgresThreadStore, notify
from onedoor_test_support import await_for

HOUR = 3600.0


def server(dsn: str, delay: float = 0.0) -> Kernel:
    options = ScriptedOptions(delay=delay, reasoning=False, mode="async")
    return Kernel(Backend("scripted", lambda: scripted(options)), store=PostgresThreadStore(dsn, pool_size=4))


@pytest.fixture
async def two_servers(postgres):
    a, b = server(postgres.dsn, delay=0.01), server(postgres.dsn)
    yield a, b
    await a.store.close()
    await b.store.close()


async def read(journal, after=0) -> list[tuple[int, object]]:
    return [pair async for pair in journal.follow(after)]


async def test_a_reader_on_another_server_is_told_of_every_event(two_servers, monkeypatch):
    a, b = two_servers
    monkeypatch.setattr(news, "NEWS_POLL", HOUR)  # while news is heard, only news wakes a reader
    journal = a.journals.start(a.run("/long 40", principal="alice"), on_disconnect="finish")
    await await_for(lambda: journal.last_seq >= 2, "the run to be going")
    remote = await b.journals.find(journal.run_id, "alice")
    following = asyncio.ensure_future(read(remote))
    await await_for(lambda: b.store.journal_news_live(), "the other server to listen")
    seen = await asyncio.wait_for(following, timeout=60)
    here = await read(journal)
    assert seen == here and isinstance(seen[-1][1], RunFinished) and seen[-1][1].stop_reason != STOP_CANCELLED


async def test_a_cancel_through_another_server_reaches_a_silent_run_at_once(two_servers, monkeypatch):
    a, b = two_servers
    monkeypatch.setattr(shared, "LEASE_RENEW", HOUR)  # its server writes nothing more on its own for an hour
    journal = a.journals.start(a.run("/hang", principal="alice"), on_disconnect="finish")
    await await_for(lambda: journal.writer is not None and journal.writer.written >= 1, "the run's start to be shared")
    await await_for(lambda: a.store.journal_news_live(), "the run's server to listen")
    assert await b.cancel_run(journal.run_id, principal="alice")
    await await_for(lambda: journal.done, "the run to stop on the cancel asked through the other server")
    assert journal.events_after(journal.last_seq - 1)[-1].stop_reason == STOP_CANCELLED


async def test_readers_poll_while_the_notifications_are_lost_and_hear_again_after(two_servers, postgres, monkeypatch):
    a, b = two_servers
    monkeypatch.setattr(news, "NEWS_POLL", HOUR)  # a reader that kept trusting the news would wait an hour
    refused = asyncio.Event()
    real_connect = notify.connect

    async def connect(dsn):  # while `refused` is set, the listening session cannot come back
        if refused.is_set():
            raise psycopg.OperationalError("refused by the test")
        return await real_connect(dsn)

    monkeypatch.setattr(notify, "connect", connect)
    journal = a.journals.start(a.run("/long 150", principal="alice"), on_disconnect="finish")
    await await_for(lambda: journal.last_seq >= 2, "the run to be going")
    remote = await b.journals.find(journal.run_id, "alice")
    following = asyncio.ensure_future(read(remote))
    await await_for(lambda: b.store.journal_news_live(), "the other server to listen")
    refused.set()
    async with await psycopg.AsyncConnection.connect(postgres.dsn, autocommit=True) as admin:
        await admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE 'LISTEN%%'"
                            " AND pid <> pg_backend_pid()")
    await await_for(lambda: not b.store.journal_news_live(), "the listening session to be gone")
    assert not journal.done, "the run goes on while the notifications are lost"
    seen = await asyncio.wait_for(following, timeout=60)
    assert [seq for seq, _ in seen] == list(range(1, journal.last_seq + 1)), "every event once, in order"
    assert "".join(e.text for _, e in seen if isinstance(e, TextDelta)) == seen[-1][1].text
    refused.clear()
    await await_for(lambda: b.store.journal_news_live(), "the other server to listen again", timeout=30)
