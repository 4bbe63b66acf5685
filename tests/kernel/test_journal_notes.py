"""Doors' notes and names of a run shared through the store (onedoor.journal.notes): two
kernels on one SQLite threads file; a reader on the server not running the run finds it
by another name and gets its notes as they were before its events; the runs going on in
a thread; notes that are not JSON stay on their server."""

from __future__ import annotations

import pytest
from onedoor.builtins.scripted import ScriptedOptions, scripted
from onedoor.events import TextDelta
from onedoor.journal import RemoteJournal
from onedoor.kernel import Backend, Kernel, Limits
from onedoor.threads.sqlite import SQLiteThreadStore
from onedoor_test_support import await_for, check_shared_journal_notes


def server(path, delay=0.0) -> Kernel:
    options = ScriptedOptions(delay=delay, reasoning=False, mode="async")
    return Kernel(Backend("scripted", lambda: scripted(options)), store=SQLiteThreadStore(path, shared_journal=True),
                  limits=Limits())


@pytest.fixture
async def two_servers(tmp_path):
    a, b = server(tmp_path / "t.db", delay=0.01), server(tmp_path / "t.db")
    yield a, b
    await a.store.close()
    await b.store.close()


async def test_two_sqlite_stores_share_notes_and_names(tmp_path):
    one, two = SQLiteThreadStore(tmp_path / "t.db", shared_journal=True), SQLiteThreadStore(tmp_path / "t.db", shared_journal=True)
    try:
        await check_shared_journal_notes(one, two)
    finally:
        await one.close()
        await two.close()


async def test_a_reader_finds_a_run_by_its_other_name_with_its_notes(two_servers):
    a, b = two_servers
    thread = await a.store.create("alice")
    journal = a.journals.start(a.run("/long 200", thread=thread, principal="alice"), on_disconnect="finish")
    a.journals.name(journal, "its-other-name")
    a.journals.note(journal, "door", [{"from": journal.last_seq}])  # set before any event: it is written first
    async for seq, _ in journal.follow():
        if seq >= 3:
            break
    remote = await b.journals.find_named("its-other-name", "alice")
    assert isinstance(remote, RemoteJournal) and remote.run_id == journal.run_id
    assert remote.notes == {"door": [{"from": 0}]}
    assert await b.journals.find_named("its-other-name", "bob") is None and await b.journals.find_named("nope", "alice") is None
    assert [j.run_id for j in await b.journals.others_on_thread(thread.id, "alice")] == [journal.run_id]
    assert await b.journals.others_on_thread(thread.id, "bob") == [] and await a.journals.others_on_thread(thread.id, "alice") == []
    assert (await b.journals.find_named(journal.run_id, "alice")).run_id == journal.run_id  # its own id too
    # a note changed later reaches the store with the events after it
    a.journals.note(journal, "door", [{"from": 0}, {"more": True}])
    await await_for(lambda: journal.done, "the run to end", timeout=30)
    ended = await b.journals.find_named("its-other-name", "alice")
    assert ended.notes == {"door": [{"from": 0}, {"more": True}]} and ended.done
    assert await b.journals.others_on_thread(thread.id, "alice") == []
    texts = [e for _, e in [pair async for pair in ended.follow()] if isinstance(e, TextDelta)]
    assert len(texts) == 200


async def test_notes_that_are_not_json_stay_on_their_server(two_servers, caplog):
    a, b = two_servers
    journal = a.journals.start(a.run("/long 5", principal="alice"))
    a.journals.note(journal, "door", {1, 2})  # a set: not JSON
    a.journals.name(journal, "a-name")
    async for _ in journal.follow():
        pass
    await await_for(lambda: journal.writer.written == journal.last_seq, "the run to be in the store")
    remote = await b.journals.find(journal.run_id, "alice")
    assert remote is not None and remote.notes == {} and await b.journals.find_named("a-name", "alice") is None
    assert "not shared (not JSON" in caplog.text


async def test_names_and_notes_sent_with_answers_are_the_runs_before_its_continuation(two_servers):
    """``kernel.answer(..., names=, notes=)`` through B: A, taking the answers, gives the run
    the name and notes before the continuation's first event: both servers find it so."""
    from onedoor import RemoteAnswer
    from onedoor.events import QuestionAsked
    from onedoor.questions import SuspendAsker

    a, b = two_servers
    journal = a.journals.start(a.run("/question Name?", principal="alice", asker=SuspendAsker()))
    a.journals.note(journal, "door", ["first"])
    seen = [pair async for pair in journal.follow()]
    question = next(e.question for _, e in seen if isinstance(e, QuestionAsked))
    await await_for(lambda: journal.writer.written == journal.last_seq, "the suspension to be in the store")
    answered = await b.answer([{"question_id": question.id, "outcome": "accept", "value": {"answer": "Ada"}}],
                              principal="alice", run_id=journal.run_id, names=["the-resume"], notes={"door": ["first", "second"]})
    assert isinstance(answered, RemoteAnswer)
    assert journal.notes == {"door": ["first", "second"]} and "the-resume" in journal.names
    assert a.journals.named("the-resume", "alice") is journal
    rest = [pair async for pair in answered.journal.follow(answered.after)]
    found = await b.journals.find_named("the-resume", "alice")
    assert found is not None and found.run_id == journal.run_id and found.notes == {"door": ["first", "second"]}
    assert rest[-1][1].text.startswith("You answered")
