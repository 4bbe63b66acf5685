"""The journal: a run driven by the kernel, its events numbered and kept, so a reader
that reconnects (after any event) gets every later event exactly once; what a reader's
going away does (cancel or finish); cursors; retention; principals."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given
from hypothesis import strategies as st
from onedoor.builtins.scripted import ScriptedOptions, scripted
from onedoor.events import STOP_CANCELLED, STOP_SUSPENDED, QuestionAsked, RunFinished, TextDelta
from onedoor.journal import Cursor, CursorExpired, parse_cursor
from onedoor.kernel import Backend, Kernel, Limits
from onedoor.questions import Answer, SuspendAsker
from onedoor.threads.sqlite import SQLiteThreadStore
from onedoor_test_support import await_for


def kernel_with(mode="async", delay=0.0, store=None, **limits) -> Kernel:
    options = ScriptedOptions(mode=mode, delay=delay, reasoning=False)
    return Kernel(Backend("scripted", lambda: scripted(options)), store=store, limits=Limits(**limits))


def text_of(events) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta))


async def read(journal, after=0, stop_after=None) -> list[tuple[int, object]]:
    seen = []
    async for seq, event in journal.follow(after):
        seen.append((seq, event))
        if stop_after is not None and len(seen) == stop_after:
            break
    return seen


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_a_reader_reconnecting_after_any_event_gets_the_rest_exactly_once(mode):
    kernel = kernel_with(mode)
    journal = kernel.journals.start(kernel.run("/long 40"), on_disconnect="finish")
    whole = await read(journal)
    assert [seq for seq, _ in whole] == list(range(1, len(whole) + 1))
    assert isinstance(whole[-1][1], RunFinished) and journal.done
    for cut in range(len(whole)):
        again = await read(journal, after=cut)
        assert again == whole[cut:], f"reconnect after event {cut}"
    assert text_of(e for _, e in whole) == whole[-1][1].text


async def test_with_finish_the_run_goes_on_when_its_reader_leaves_and_keeps_its_turn(tmp_path):
    store = SQLiteThreadStore(tmp_path / "t.db")
    kernel = kernel_with(delay=0.01, store=store)
    thread = await store.create("alice")
    journal = kernel.journals.start(kernel.run("/long 30", thread=thread, principal="alice"), on_disconnect="finish")
    first = await read(journal, stop_after=5)  # the client goes away here
    await await_for(lambda: journal.done, "the run to finish without a reader")
    rest = await read(journal, after=first[-1][0])
    events = [e for _, e in first + rest]
    assert rest[0][0] == 6 and rest[-1][1].stop_reason != STOP_CANCELLED
    stored = await store.get("alice", thread.id)
    assert stored.messages[-1].content == events[-1].text == text_of(events)
    await store.close()


async def test_with_cancel_the_last_reader_leaving_cancels_the_run():
    kernel = kernel_with(delay=0.01)
    journal = kernel.journals.start(kernel.run("/long 200"))
    await read(journal, stop_after=3)
    await await_for(lambda: journal.done, "the run to end after its reader left")
    ending = (await read(journal, after=journal.last_seq - 1))[-1][1]
    assert isinstance(ending, RunFinished) and ending.stop_reason == STOP_CANCELLED
    assert journal.last_seq < 200 and kernel.active_runs == 0


async def test_two_readers_see_the_same_events_and_one_leaving_cancels_nothing():
    kernel = kernel_with(delay=0.005)
    journal = kernel.journals.start(kernel.run("/long 20"))
    stays = asyncio.ensure_future(read(journal))
    await read(journal, stop_after=2)
    whole = await stays
    assert whole[-1][1].stop_reason != STOP_CANCELLED and len(whole) == journal.last_seq


async def test_journals_are_per_principal_and_cursors_are_checked():
    kernel = kernel_with(max_journal_events=10)
    journal = kernel.journals.start(kernel.run("/long 30", principal="alice"), on_disconnect="finish")
    await await_for(lambda: journal.done, "the run to end")
    assert kernel.journals.get(journal.run_id, "alice") is journal
    assert kernel.journals.get(journal.run_id, "bob") is None and kernel.journals.get("nope", "alice") is None
    assert journal.last_seq > 10
    with pytest.raises(CursorExpired, match="no longer kept"):
        await read(journal, after=0)
    with pytest.raises(CursorExpired, match="not a cursor this run gave out"):
        await read(journal, after=journal.last_seq + 1)
    kept = await read(journal, after=journal.last_seq - 10)
    assert [s for s, _ in kept] == list(range(journal.last_seq - 9, journal.last_seq + 1))
    assert parse_cursor(journal.cursor(7)) == Cursor(journal.run_id, 0, 7)


async def test_a_journal_is_forgotten_after_its_retention():
    kernel = kernel_with(journal_retention=0.0)
    journal = kernel.journals.start(kernel.run("hi"))
    await read(journal)
    await await_for(lambda: kernel.journals.get(journal.run_id, "local") is None, "the journal to be forgotten")


async def test_a_resumed_run_continues_its_journal():
    kernel = kernel_with()
    journal = kernel.journals.start(kernel.run('/question {"prompt": "Name?"}', asker=SuspendAsker()))
    first = await read(journal)
    assert first[-1][1].stop_reason == STOP_SUSPENDED and not journal.done
    asked = next(e for _, e in first if isinstance(e, QuestionAsked))
    resumed = kernel.resume([Answer(asked.question.id, "accept", {"answer": "Ada"})])
    assert kernel.journals.start(resumed) is journal
    rest = await read(journal, after=first[-1][0])
    assert rest[0][0] == first[-1][0] + 1 and journal.done and "Ada" in rest[-1][1].text


@given(st.text(max_size=40) | st.integers() | st.none())
def test_anything_but_a_cursor_is_a_value_error(text):
    if isinstance(text, str) and parse_cursor_ok(text):
        return
    with pytest.raises(ValueError, match="not a cursor"):
        parse_cursor(text)


def parse_cursor_ok(text: str) -> bool:
    parts = text.split(":")
    return len(parts) == 3 and parts[1].isdigit() and parts[2].isdigit() and parts[1].isascii() and bool(parts[0])


def test_a_bad_on_disconnect_is_refused():
    kernel = kernel_with()

    async def go():
        run = kernel.run("hi")
        try:
            with pytest.raises(ValueError, match="on_disconnect"):
                kernel.journals.start(run, on_disconnect="linger")
        finally:
            await run.aclose()

    asyncio.run(go())


async def test_a_deleted_threads_journals_are_forgotten(tmp_path):
    store = SQLiteThreadStore(tmp_path / "t.db")
    kernel = kernel_with(store=store)
    thread = await store.create("alice")
    journal = kernel.journals.start(kernel.run("hi", thread=thread, principal="alice"))
    await read(journal)
    await await_for(lambda: not journal.running, "the run to end")
    assert kernel.journals.forget_thread(thread.id, "bob") == 0
    assert kernel.journals.forget_thread(thread.id, "alice") == 1
    assert kernel.journals.get(journal.run_id, "alice") is None
    await store.close()


async def test_ended_journals_stay_within_their_budget_oldest_first():
    kernel = kernel_with(max_kept_journal_events=60)
    journals = []
    for _ in range(4):
        journal = kernel.journals.start(kernel.run("/long 20"), on_disconnect="finish")
        await read(journal)
        await await_for(lambda j=journal: not j.running, "the run to end")
        journals.append(journal)
    kept = [kernel.journals.get(j.run_id, "local") is not None for j in journals]
    sizes = [j.last_seq for j in journals]
    assert all(30 > size > 20 for size in sizes), sizes  # so two fit in 60 events and three do not
    assert kept == [False, False, True, True], (kept, sizes)
