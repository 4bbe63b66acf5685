"""Doors' notes and names of a run shared through PostgreSQL (onedoor.journal.notes): two
stores on one database, and two kernels: a reader on the server not running the run finds
it by another name (AG-UI: a resumed run's runId) with its notes."""

from __future__ import annotations

from onedoor.builtins.scripted import ScriptedOptions, scripted
from onedoor.journal import RemoteJournal
from onedoor.kernel import Backend, Kernel
from onedoor_store_postgres import PostgresThreadStore
from onedoor_test_support import await_for, check_shared_journal_notes


async def test_two_stores_share_notes_and_names(postgres):
    one, two = PostgresThreadStore(postgres.dsn, pool_size=2), PostgresThreadStore(postgres.dsn, pool_size=2)
    try:
        await check_shared_journal_notes(one, two)
    finally:
        await one.close()
        await two.close()


async def test_a_reader_finds_a_run_by_its_other_name_with_its_notes(postgres):
    options = ScriptedOptions(delay=0.01, reasoning=False, mode="async")
    a, b = (Kernel(Backend("scripted", lambda: scripted(options)), store=PostgresThreadStore(postgres.dsn, pool_size=4))
            for _ in range(2))
    try:
        thread = await a.store.create("alice")
        journal = a.journals.start(a.run("/long 100", thread=thread, principal="alice"), on_disconnect="finish")
        a.journals.name(journal, f"{journal.run_id}-resumed")
        a.journals.note(journal, "door", [{"from": 0}])
        async for seq, _ in journal.follow():
            if seq >= 3:
                break
        remote = await b.journals.find_named(f"{journal.run_id}-resumed", "alice")
        assert isinstance(remote, RemoteJournal) and remote.notes == {"door": [{"from": 0}]}
        assert [j.run_id for j in await b.journals.others_on_thread(thread.id, "alice")] == [journal.run_id]
        assert await b.journals.find_named(f"{journal.run_id}-resumed", "bob") is None
        await await_for(lambda: journal.done, "the run to end", timeout=30)
        assert await b.journals.others_on_thread(thread.id, "alice") == []
    finally:
        await a.store.close()
        await b.store.close()
