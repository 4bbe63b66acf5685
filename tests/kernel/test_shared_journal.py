"""Journals shared through the store: two servers on one threads file (two kernels, two
connections; a real second process for the killed-server case): a reader reattaches
through the server that does not run the run, sees every event exactly once, can cancel
it, and is told when the server running it died."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys

import pytest
from onedoor.builtins.scripted import ScriptedOptions, scripted
from onedoor.events import STOP_CANCELLED, RunFailed, RunFinished, TextDelta
from onedoor.journal import STOPPED
from onedoor.kernel import Backend, Kernel, Limits
from onedoor.threads.sqlite import SQLiteThreadStore
from onedoor_test_support import await_for


def server(path, delay=0.0) -> Kernel:
    store = SQLiteThreadStore(path, shared_journal=True)
    options = ScriptedOptions(delay=delay, reasoning=False, mode="async")
    return Kernel(Backend("scripted", lambda: scripted(options)), store=store, limits=Limits())


async def read(journal, after=0, stop_after=None):
    seen = []
    async for seq, event in journal.follow(after):
        seen.append((seq, event))
        if stop_after is not None and len(seen) == stop_after:
            break
    return seen


@pytest.fixture
async def two_servers(tmp_path):
    a, b = server(tmp_path / "t.db", delay=0.005), server(tmp_path / "t.db")
    yield a, b
    await a.store.close()
    await b.store.close()


async def test_a_reader_reattaches_through_the_other_server(two_servers):
    a, b = two_servers
    thread = await a.store.create("alice")
    journal = a.journals.start(a.run("/long 60", thread=thread, principal="alice"), on_disconnect="finish")
    first = await read(journal, stop_after=10)  # the client drops, and comes back through server b
    remote = await b.journals.find(journal.run_id, "alice")
    assert remote is not None and remote.thread_id == thread.id
    assert await b.journals.find(journal.run_id, "bob") is None, "another principal's run is unknown"
    rest = await read(remote, after=first[-1][0])
    whole = first + rest
    assert [seq for seq, _ in whole] == list(range(1, len(whole) + 1)), "every event exactly once, in order"
    ending = whole[-1][1]
    assert isinstance(ending, RunFinished) and ending.stop_reason != STOP_CANCELLED
    assert "".join(e.text for _, e in whole if isinstance(e, TextDelta)) == ending.text
    kept = await b.store.get("alice", thread.id)
    assert kept.messages[-1].content == ending.text


async def test_a_reader_on_the_other_server_can_cancel_the_run(two_servers):
    a, b = two_servers
    journal = a.journals.start(a.run("/long 100000", principal="alice"), on_disconnect="finish")
    await read(journal, stop_after=3)
    remote = await b.journals.find(journal.run_id, "alice")
    remote.cancel()
    await await_for(lambda: journal.done, "the run to stop after a cancel through the other server")
    ending = (await read(journal, after=journal.last_seq - 1))[-1][1]
    assert ending.stop_reason == STOP_CANCELLED and journal.last_seq < 100000


async def test_a_cursor_the_store_no_longer_holds_is_refused(two_servers):
    from onedoor.journal import CursorExpired

    a, b = two_servers
    journal = a.journals.start(a.run("hello", principal="alice"), on_disconnect="finish")
    await read(journal)
    remote = await b.journals.find(journal.run_id, "alice")
    with pytest.raises(CursorExpired, match="not a cursor"):
        await read(remote, after=journal.last_seq + 5)
    assert await read(remote, after=journal.last_seq) == []


KILLED = """
import asyncio, sys
from onedoor.builtins.scripted import ScriptedOptions, scripted
from onedoor.kernel import Backend, Kernel
from onedoor.threads.sqlite import SQLiteThreadStore
import onedoor.journal.shared as shared
shared.LEASE_TTL = 1.0
shared.LEASE_RENEW = 0.2

async def main():
    store = SQLiteThreadStore(sys.argv[1], shared_journal=True)
    kernel = Kernel(Backend("scripted", lambda: scripted(ScriptedOptions(delay=0.05, reasoning=False))), store=store)
    journal = kernel.journals.start(kernel.run("/long 100000", principal="alice", run_id="r-killed"),
                                    on_disconnect="finish")
    async for seq, event in journal.follow():
        if seq == 5:
            print("running", flush=True)

asyncio.run(main())
"""


async def test_a_reader_learns_that_the_server_running_the_run_died(tmp_path):
    path = tmp_path / "t.db"
    proc = subprocess.Popen([sys.executable, "-c", KILLED, str(path)], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "running", "the other server to start the run"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    b = server(path)
    try:
        remote = await b.journals.find("r-killed", "alice")
        seen = await read(remote)
        assert isinstance(seen[-1][1], RunFailed) and seen[-1][1].error == STOPPED
        assert [seq for seq, _ in seen] == list(range(1, len(seen) + 1))
    finally:
        await b.store.close()


async def test_deleting_a_thread_deletes_its_runs_journals(tmp_path):
    a, b = server(tmp_path / "t.db"), server(tmp_path / "t.db")
    thread = await a.store.create("alice")
    journal = a.journals.start(a.run("remember SWORDFISH", thread=thread, principal="alice"), on_disconnect="finish")
    await read(journal)
    assert await b.journals.find(journal.run_id, "alice") is not None
    assert await b.store.delete("alice", thread.id)
    assert await b.journals.find(journal.run_id, "alice") is None
    await a.store.close()
    await b.store.close()
    files = [p for p in tmp_path.iterdir() if p.name.startswith("t.db")]
    assert files and not any(b"SWORDFISH" in p.read_bytes() for p in files), "the text is gone from disk"


async def test_a_turn_another_server_is_still_answering_is_not_marked_interrupted(two_servers):
    from onedoor.kernel import INTERRUPTED_REPLY

    a, b = two_servers
    thread = await a.store.create("alice")
    journal = a.journals.start(a.run("/long 200", thread=thread, principal="alice"), on_disconnect="finish")
    await read(journal, stop_after=3)  # server a is answering; its message is in the thread
    on_b = await b.store.get("alice", thread.id)
    assert on_b.messages[-1].content == "/long 200"
    async with b.run("meanwhile, on b", thread=on_b, principal="alice") as run:
        assert type([e async for e in run][-1]) is RunFinished
    await await_for(lambda: journal.done, "server a's run to end")
    kept = await b.store.get("alice", thread.id)
    assert INTERRUPTED_REPLY not in [m.content for m in kept.messages], "a live turn on server a was not marked"
    assert sorted(m.content for m in kept.messages if m.role == "user") == ["/long 200", "meanwhile, on b"]


async def test_a_run_waiting_for_answers_reads_as_nothing_more_through_the_other_server(two_servers):
    from onedoor.events import STOP_SUSPENDED
    from onedoor.questions import SuspendAsker

    a, b = two_servers
    journal = a.journals.start(a.run('/question {"prompt": "Name?"}', principal="alice", asker=SuspendAsker()))
    seen = await read(journal)
    assert seen[-1][1].stop_reason == STOP_SUSPENDED
    await await_for(lambda: journal.writer is not None and journal.writer.written == journal.last_seq,
                    "the suspension to be in the store")
    remote = await b.journals.find(journal.run_id, "alice")
    assert await read(remote, after=journal.last_seq) == [], "no hang: nothing comes until an answer"
    again = await read(remote, after=journal.last_seq - 1)
    assert [e.stop_reason for _, e in again] == [STOP_SUSPENDED]


async def test_a_reused_run_id_never_continues_another_principals_journal(two_servers):
    from onedoor.errors import RunRefused

    a, b = two_servers
    journal = a.journals.start(a.run("alice's secret", principal="alice", run_id="r-same"), on_disconnect="finish")
    await read(journal)
    with pytest.raises(RunRefused, match="used recently"):
        a.run("bob here", principal="bob", run_id="r-same")  # this server still keeps the journal
    on_b = b.journals.start(b.run("bob's words", principal="bob", run_id="r-same"), on_disconnect="finish")
    await read(on_b)  # server b does not know the id: its run goes on, unshared
    await await_for(lambda: on_b.writer is not None and on_b.writer.failed, "b's writer to give the row up")
    c = server(a.store.path)  # a third server reads what the store holds for the run id
    try:
        remote = await c.journals.find("r-same", "alice")
        texts = "".join(getattr(e, "text", "") for _, e in await read(remote))
        assert "bob" not in texts and "alice" in texts
        assert await c.journals.find("r-same", "bob") is None
    finally:
        await c.store.close()
    assert await b.journals.find("r-same", "bob") is on_b  # b's own, local


OTHER_SERVER = """
import asyncio, json, sys
from onedoor.builtins.scripted import ScriptedOptions, scripted
from onedoor.kernel import Backend, Kernel
from onedoor.threads.sqlite import SQLiteThreadStore

async def main(path):
    store = SQLiteThreadStore(path, shared_journal=True, busy_timeout=0.2)
    kernel = Kernel(Backend("scripted", lambda: scripted(ScriptedOptions(mode="async", delay=0.02, tool=False))),
                    store=store)
    journal = kernel.journals.start(kernel.run("/long 150 through a lock", run_id="locked-run"), on_disconnect="finish")
    print("started", flush=True)
    seqs = [seq async for seq, _ in journal.follow(after=0)]
    print(json.dumps(seqs), flush=True)
    await asyncio.sleep(1.5)  # let the writer backfill what the store lacked
    await store.close()

asyncio.run(main(sys.argv[1]))
"""


async def test_a_locked_sqlite_file_mid_run_loses_no_sharing(tmp_path):
    """#24 item 5 on SQLite shared journals: another process holds the file's write lock for
    a while in mid-run (writes fail: 'database is locked'); sharing resumes, and a reader in
    this process, following the run through the file, gets every event once, ending as it did."""
    import json
    import sqlite3
    import subprocess
    import sys

    path = tmp_path / "threads.db"
    SQLiteThreadStore(path)  # the tables
    warm = SQLiteThreadStore(path, shared_journal=True)
    await warm.create("local")
    await warm.close()
    proc = subprocess.Popen([sys.executable, "-c", OTHER_SERVER, str(path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    assert proc.stdout.readline().strip() == "started"
    reader_store = SQLiteThreadStore(path, shared_journal=True)
    kernel = Kernel(Backend("scripted", lambda: scripted(ScriptedOptions())), store=reader_store)
    journal = None
    for _ in range(200):
        journal = await kernel.journals.find("locked-run", "local")
        if journal is not None:
            break
        await asyncio.sleep(0.02)
    assert journal is not None, "the other process shares its journal"
    got: list[int] = []
    ending: list = []

    async def read() -> None:
        async for seq, event in journal.follow(after=0):
            got.append(seq)
            ending[:] = [event]

    reading = asyncio.ensure_future(read())
    await asyncio.sleep(0.5)
    lock = sqlite3.connect(path, timeout=5, isolation_level=None)
    lock.execute("BEGIN EXCLUSIVE")  # the other process's writes fail meanwhile
    await asyncio.sleep(1.5)
    lock.execute("ROLLBACK")
    lock.close()
    await asyncio.wait_for(reading, 60)
    out, err = proc.communicate(timeout=60)
    local = json.loads(out.strip().splitlines()[-1])
    assert got == local == list(range(1, len(local) + 1)), (got[-3:], local[-3:])
    assert type(ending[0]) is RunFinished and ending[0].stop_reason == "end_turn", ending
    assert "Traceback" not in err, err[-2000:]
    await reader_store.close()
