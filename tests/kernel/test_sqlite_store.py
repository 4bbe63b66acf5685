"""The embedded SQLite thread store, on a real file: owners, compare-and-set, limits,
deletion that really deletes, and committed turns that survive kill -9."""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap

import pytest
from onedoor.messages import Message, ToolCall
from onedoor.threads import ThreadError, ThreadStore
from onedoor.threads.sqlite import SQLiteThreadStore

TURN = (
    Message("user", "count the words of my secret plan"),
    Message("assistant", "", (ToolCall("c1", "word_count", {"text": "my secret plan"}),)),
    Message("tool", '{"words": 3}', tool_call_id="c1"),
    Message("assistant", "Three words."),
)


@pytest.fixture
async def store(tmp_path):
    store = SQLiteThreadStore(tmp_path / "threads.db", max_thread_chars=1_000)
    yield store
    await store.close()


async def test_a_thread_keeps_its_messages_in_order(store):
    assert isinstance(store, ThreadStore)
    thread = await store.create("alice", settings={"backend": "scripted"})
    assert thread.version == 0 and thread.messages == ()
    after = await store.append("alice", thread.id, TURN, expected_version=0)
    assert after.version == 1 and after.messages == TURN
    assert after.title == "count the words of my secret plan", "the first user message titles the thread"
    again = await store.get("alice", thread.id)
    assert again == after and again.settings == {"backend": "scripted"}
    more = await store.append("alice", thread.id, [Message("user", "thanks")], expected_version=1)
    assert [m.content for m in more.messages][-1] == "thanks" and more.title == after.title


async def test_another_owner_sees_nothing(store):
    thread = await store.create("alice")
    await store.append("alice", thread.id, TURN, expected_version=0)
    assert await store.get("bob", thread.id) is None
    assert await store.list("bob") == []
    with pytest.raises(ThreadError) as caught:
        await store.append("bob", thread.id, TURN, expected_version=1)
    assert caught.value.reason == "not_found"
    assert await store.delete("bob", thread.id) is False
    assert (await store.get("alice", thread.id)).version == 1, "alice's thread is untouched"


async def test_two_writers_serialise_and_lose_no_turn(store):
    thread = await store.create("alice")

    async def write_turn(text: str) -> None:
        while True:
            current = await store.get("alice", thread.id)
            try:
                await store.append("alice", thread.id, [Message("user", text)], expected_version=current.version)
                return
            except ThreadError as exc:
                assert exc.reason == "conflict"

    await asyncio.gather(*(write_turn(f"turn {i}") for i in range(20)))
    final = await store.get("alice", thread.id)
    assert final.version == 20
    assert sorted(m.content for m in final.messages) == sorted(f"turn {i}" for i in range(20))


async def test_a_stale_version_is_a_conflict(store):
    thread = await store.create("alice")
    await store.append("alice", thread.id, [Message("user", "one")], expected_version=0)
    with pytest.raises(ThreadError, match="version 1, expected 0") as caught:
        await store.append("alice", thread.id, [Message("user", "two")], expected_version=0)
    assert caught.value.reason == "conflict"


async def test_a_thread_over_its_size_limit_is_refused(store):
    thread = await store.create("alice")
    with pytest.raises(ThreadError, match="the limit is 1000") as caught:
        await store.append("alice", thread.id, [Message("user", "x" * 1_001)], expected_version=0)
    assert caught.value.reason == "too_large"
    assert (await store.get("alice", thread.id)).messages == (), "nothing of the refused change was kept"


async def test_listing_pages_newest_first(store):
    ids = []
    for i in range(120):
        thread = await store.create("alice", title=f"t{i}")
        ids.append(thread.id)
    pages, before = [], None
    while True:
        page = await store.list("alice", limit=50, before=before)
        if not page:
            break
        pages.append(page)
        before = page[-1].id
    listed = [summary.id for page in pages for summary in page]
    assert [len(p) for p in pages] == [50, 50, 20]
    assert sorted(listed) == sorted(ids) and len(set(listed)) == 120
    stamps = [summary.updated_at for page in pages for summary in page]
    assert stamps == sorted(stamps, reverse=True)
    assert await store.list("alice", before="t-unknown") == []


async def test_delete_really_deletes(tmp_path):
    path = tmp_path / "threads.db"
    store = SQLiteThreadStore(path)
    keep = await store.create("alice")
    await store.append("alice", keep.id, [Message("user", "a harmless note")], expected_version=0)
    gone = await store.create("alice")
    await store.append("alice", gone.id, [Message("user", "the launch code is 7481-SWORDFISH")], expected_version=0)
    assert await store.delete("alice", gone.id) is True
    assert await store.get("alice", gone.id) is None
    assert await store.delete("alice", gone.id) is False
    await store.close()
    files = [p for p in tmp_path.iterdir() if p.name.startswith("threads.db")]
    assert files and not any(b"SWORDFISH" in p.read_bytes() for p in files), "the deleted text is gone from disk"
    assert any(b"harmless" in p.read_bytes() for p in files), "the check could find text that is there"


WRITER = textwrap.dedent(
    """
    import asyncio, os, signal, sys
    from onedoor.messages import Message
    from onedoor.threads.sqlite import SQLiteThreadStore

    async def main(path):
        store = SQLiteThreadStore(path)
        thread = await store.create("alice")
        version = 0
        for turn in range(3):
            updated = await store.append("alice", thread.id, [Message("user", f"turn {turn}")], expected_version=version)
            version = updated.version
        print(thread.id, flush=True)
        os.kill(os.getpid(), signal.SIGKILL)

    asyncio.run(main(sys.argv[1]))
    """
)


async def test_a_thread_read_again_parses_only_its_new_messages(tmp_path, monkeypatch):
    """Two stores on one file (two servers): each parses a message once, sees what the
    other appended, and a thread deleted and made again under the same id is read anew."""
    from onedoor.threads import sqlite as sqlite_module

    parsed: list[str] = []
    real = sqlite_module.Message.from_dict

    def counting(data):
        parsed.append(data["content"])
        return real(data)

    monkeypatch.setattr(sqlite_module.Message, "from_dict", staticmethod(counting))
    one, two = SQLiteThreadStore(tmp_path / "t.db"), SQLiteThreadStore(tmp_path / "t.db")
    try:
        thread = await one.create("alice", thread_id="t-again")
        await one.append("alice", thread.id, TURN[:2], expected_version=0)
        assert (await one.get("alice", thread.id)).messages == TURN[:2]
        assert len(parsed) == 2, "the append read back its two messages; the next read parsed none"
        await two.append("alice", thread.id, TURN[2:], expected_version=1)
        parsed.clear()
        assert (await one.get("alice", thread.id)).messages == TURN, "the other store's messages are seen"
        assert parsed == [m.content for m in TURN[2:]], "only what the other store added is parsed"
        assert await two.delete("alice", thread.id)
        await asyncio.sleep(0.01)  # (a new created_at)
        await two.create("alice", thread_id="t-again")
        other = (Message("user", "another thread, the same id"),)
        await two.append("alice", "t-again", other, expected_version=0)
        assert (await one.get("alice", "t-again")).messages == other
    finally:
        await one.close()
        await two.close()


async def test_a_write_rolled_back_leaves_nothing_parsed_behind(tmp_path, monkeypatch):
    """An append whose commit fails (a full disk) read its messages back before: they are
    not kept as the thread's, so what another server appends in their place is read."""
    from onedoor.threads import sqlite as sqlite_module

    store = SQLiteThreadStore(tmp_path / "t.db")
    try:
        thread = await store.create("alice")
        await store.append("alice", thread.id, TURN[:1], expected_version=0)

        def failing_commit(work):
            def run(db):
                db.execute("BEGIN IMMEDIATE")
                try:
                    work(db)
                    raise sqlite3.OperationalError("disk I/O error")
                finally:
                    db.execute("ROLLBACK")

            return run

        with monkeypatch.context() as patched:
            patched.setattr(sqlite_module, "_immediate", failing_commit)
            with pytest.raises(sqlite3.OperationalError):
                await store.append("alice", thread.id, TURN[1:2], expected_version=1)
        other = (Message("assistant", "what the store holds instead"),)
        elsewhere = SQLiteThreadStore(tmp_path / "t.db")
        try:
            await elsewhere.append("alice", thread.id, other, expected_version=1)
        finally:
            await elsewhere.close()
        assert (await store.get("alice", thread.id)).messages == (TURN[0], *other)
    finally:
        await store.close()


async def test_committed_turns_survive_kill_9(tmp_path):
    path = tmp_path / "threads.db"
    proc = subprocess.run([sys.executable, "-c", WRITER, str(path)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    thread_id = proc.stdout.strip()
    store = SQLiteThreadStore(path)
    try:
        thread = await store.get("alice", thread_id)
        assert thread is not None and [m.content for m in thread.messages] == ["turn 0", "turn 1", "turn 2"]
    finally:
        await store.close()
    assert os.path.exists(path)


async def test_a_runs_events_become_the_turn_a_thread_keeps():
    from onedoor.builtins.scripted import ScriptedOptions, scripted
    from onedoor.kernel import Backend, Kernel
    from onedoor.port import normalize_history
    from onedoor.threads import turn_messages

    kernel = Kernel(Backend("scripted", lambda: scripted(ScriptedOptions(reasoning=False))))
    async with kernel.run("count my words") as run:
        events = [event async for event in run]
    turn = turn_messages("count my words", events)
    assert [m.role for m in turn] == ["user", "assistant", "tool", "assistant"]
    assert turn[1].tool_calls[0].name == "word_count" and turn[2].tool_call_id == turn[1].tool_calls[0].id
    assert turn[-1].content == events[-1].text
    assert normalize_history([m.to_dict() for m in turn]) == turn, "a turn is valid history for the next run"
    async with kernel.run("and again", history=turn) as run:
        again = [event async for event in run]
    assert "turn 2" in again[-1].text, "the backend saw the stored turn as the conversation so far"


def test_a_turn_keeps_text_and_tool_calls_in_order():
    from onedoor.events import TextDelta, ToolFinished, ToolStarted
    from onedoor.threads import turn_messages

    events = [
        TextDelta("a"), ToolStarted("c1", "one", {}), ToolStarted("c2", "two", {}),
        ToolFinished("c1", "one", 1), ToolFinished("c2", "two", 2),
        TextDelta("b"), ToolStarted("c3", "three", {}), ToolFinished("c3", "three", "3"), TextDelta("c"), TextDelta("d"),
    ]
    turn = turn_messages("go", events)
    assert [(m.role, m.content, [c.id for c in m.tool_calls], m.tool_call_id) for m in turn] == [
        ("user", "go", [], None),
        ("assistant", "a", ["c1", "c2"], None), ("tool", "1", [], "c1"), ("tool", "2", [], "c2"),
        ("assistant", "b", ["c3"], None), ("tool", "3", [], "c3"),
        ("assistant", "cd", [], None),
    ]
    cut = turn_messages("go", [TextDelta("half a rep")], interrupted="cancelled")
    assert cut[-1] == Message("assistant", "half a rep\n[reply cancelled]")
    assert turn_messages("go", [], interrupted="cancelled")[-1] == Message("assistant", "[reply cancelled]")
    assert turn_messages("go", []) == [Message("user", "go")]
