"""Runs on a stored thread: the kernel reads the conversation from the store and keeps
each run's turn there (SQLite on disk), whatever door the run came through."""

from __future__ import annotations

import asyncio
import base64

import pytest
from onedoor.builtins.scripted import ScriptedOptions, scripted
from onedoor.errors import RunRefused
from onedoor.events import STOP_CANCELLED, RunFailed, RunFinished, TextDelta
from onedoor.kernel import INTERRUPTED_REPLY, Backend, Kernel, Limits
from onedoor.questions import Answer, SuspendAsker
from onedoor.threads.sqlite import SQLiteThreadStore
from onedoor.threads.stores import SQLiteOptions

PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture
async def store(tmp_path):
    store = SQLiteThreadStore(tmp_path / "threads.db")
    yield store
    await store.close()


def kernel_with(store, mode="sync", **limits) -> Kernel:
    options = ScriptedOptions(mode=mode, reasoning=False)
    return Kernel(Backend("scripted", lambda: scripted(options)), store=store, limits=Limits(**limits))


async def drain(run) -> list:
    async with run:
        return [event async for event in run]


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_each_turn_is_kept_and_the_next_run_continues_it(store, mode):
    kernel = kernel_with(store, mode)
    thread = await store.create("alice")
    run = kernel.run("hello there", thread=thread, principal="alice", door="rest")
    first = await drain(run)
    assert "turn 1" in first[-1].text
    kept = await store.get("alice", thread.id)
    assert run.thread == kept and kept.version == 2  # the message as the run starts, the reply at its end
    assert [m.role for m in kept.messages] == ["user", "assistant", "tool", "assistant"]
    assert kept.messages[-1].content == first[-1].text, "the reply was kept before the client saw the end"
    second = await drain(kernel.run("and again", thread=kept, principal="alice", door="mcp"))
    assert "turn 2" in second[-1].text, "the second run (another door) saw the first turn"
    assert len((await store.get("alice", thread.id)).messages) == 8


async def test_two_doors_writing_one_thread_at_once_lose_no_turn(store):
    kernel = kernel_with(store, "async")
    thread = await store.create("alice")
    endings = await asyncio.gather(*(drain(kernel.run(f"message {i}", thread=thread, principal="alice")) for i in range(6)))
    assert all(type(e[-1]) is RunFinished for e in endings)
    kept = await store.get("alice", thread.id)
    users = sorted(m.content for m in kept.messages if m.role == "user")
    assert users == sorted(f"message {i}" for i in range(6)) and kept.version == 12


async def test_a_cancelled_reply_is_kept_and_marked(store):
    kernel = kernel_with(store, "sync")
    thread = await store.create("alice")
    run = kernel.run("/slow /long 400", thread=thread, principal="alice")
    async with run:
        async for event in run:
            if type(event) is TextDelta:
                run.cancel()
    assert run.outcome.stop_reason == STOP_CANCELLED
    kept = await store.get("alice", thread.id)
    assert kept.messages[0].content == "/slow /long 400"
    assert kept.messages[-1].content.endswith("[reply cancelled]")


async def test_a_reader_that_leaves_still_leaves_its_turn(store):
    kernel = kernel_with(store, "async")
    thread = await store.create("alice")
    run = kernel.run("/slow /long 400", thread=thread, principal="alice")
    async for event in run:
        if type(event) is TextDelta:
            break
    await run.aclose()
    kept = await store.get("alice", thread.id)
    assert kept is not None and kept.messages[-1].content.endswith("[reply cancelled]")


async def test_another_owners_thread_and_bad_combinations_are_refused(store):
    kernel = kernel_with(store)
    thread = await store.create("alice")
    with pytest.raises(RunRefused) as foreign:
        kernel.run("hi", thread=thread, principal="mallory")
    assert foreign.value.reason == "not_found"
    with pytest.raises(RunRefused, match="either a thread or a history"):
        kernel.run("hi", thread=thread, principal="alice", history=[])
    with pytest.raises(RunRefused, match="keeps no threads"):
        Kernel(kernel.backend).run("hi", thread=thread, principal="alice")
    assert kernel.active_runs == 0


async def test_a_thread_over_the_input_limit_is_refused_before_the_run(store):
    kernel = kernel_with(store, max_input_chars=200)
    thread = await store.create("alice")
    thread = (await drain(kernel.run("x " * 60, thread=thread, principal="alice")), await store.get("alice", thread.id))[1]
    with pytest.raises(RunRefused) as refused:
        kernel.run("one more", thread=thread, principal="alice")
    assert refused.value.reason == "too_large"


async def test_a_message_that_would_overfill_its_thread_is_refused_before_the_run(tmp_path):
    """Counted as the store counts it (text, plus a part's bytes): refused with no slot
    taken and nothing kept, not a run that starts and then fails keeping the message."""
    store = SQLiteThreadStore(tmp_path / "threads.db", max_thread_chars=5_000)
    try:
        kernel = Kernel(Backend("scripted", scripted, accepts=frozenset({"image"})), store=store)
        thread = await store.create("alice")
        image = [{"type": "text", "text": "look"}, {"type": "image", "media_type": "image/png",
                                                    "data": base64.b64encode(PNG + bytes(6_000)).decode()}]
        with pytest.raises(RunRefused) as refused:
            kernel.run(image, thread=thread, principal="alice")
        assert refused.value.reason == "too_large" and "the limit is 5000" in str(refused.value)
        assert kernel.active_runs == 0 and not (await store.get("alice", thread.id)).messages
        smaller = [image[0], {**image[1], "data": base64.b64encode(PNG + bytes(3_000)).decode()}]
        events = await drain(kernel.run(smaller, thread=thread, principal="alice"))
        assert type(events[-1]) is RunFinished, events[-1]
        kept = await store.get("alice", thread.id)
        assert kept.messages[0].parts[-1].data == PNG + bytes(3_000)
        with pytest.raises(RunRefused) as again:  # 3,000 bytes held: another such image does not fit
            kernel.run(smaller, thread=kept, principal="alice")
        assert again.value.reason == "too_large" and f"holds {sum(m.size for m in kept.messages)} characters" in str(
            again.value)
    finally:
        await store.close()


def test_the_default_store_keeps_what_the_default_content_limits_let_in():
    """A message the kernel takes by default (its parts up to ``max_content_bytes``) fits a
    new thread of the default store, with room for more."""
    limits, options = Limits(), SQLiteOptions()
    assert options.max_thread_chars >= 3 * limits.max_content_bytes


async def test_a_store_that_fails_fails_the_run_clearly(tmp_path):
    store = SQLiteThreadStore(tmp_path / "threads.db", max_thread_chars=50)
    try:
        kernel = kernel_with(store)
        thread = await store.create("alice")
        events = await drain(kernel.run("a message that makes the thread too long", thread=thread, principal="alice"))
        assert type(events[-1]) is RunFailed and "could not be kept" in events[-1].error and "limit is 50" in events[-1].error
        assert kernel.active_runs == 0
    finally:
        await store.close()


async def test_a_parked_run_keeps_one_turn_when_it_ends(store):
    kernel = kernel_with(store, "async")
    thread = await store.create("alice")
    first = await drain(kernel.run('/ask rm {"path": "x"}', thread=thread, principal="alice", asker=SuspendAsker()))
    waiting = await store.get("alice", thread.id)
    assert [m.role for m in waiting.messages] == ["user"], "only the message is kept while the run waits"
    question = first[-2].question
    await drain(kernel.resume([Answer(question.id, "allow_once")], principal="alice"))
    kept = await store.get("alice", thread.id)
    assert kept.version == 2
    assert [m.role for m in kept.messages] == ["user", "assistant", "tool", "assistant"]
    assert kept.messages[-1].content.startswith("Approved")


KILLED_SERVER = """
import asyncio, sys
from onedoor.builtins.scripted import ScriptedOptions, scripted
from onedoor.kernel import Backend, Kernel
from onedoor.threads.sqlite import SQLiteThreadStore

async def main():
    store = SQLiteThreadStore(sys.argv[1])
    kernel = Kernel(Backend("scripted", lambda: scripted(ScriptedOptions(delay=0.05, reasoning=False, tool=False))), store=store)
    thread = await store.create("alice", thread_id="t-killed")
    async with kernel.run("first question", thread=thread, principal="alice") as run:
        async for _ in run:
            pass
    thread = await store.get("alice", "t-killed")
    async with kernel.run("/long 1000", thread=thread, principal="alice") as run:
        async for event in run:
            if type(event).__name__ == "TextDelta":
                print("replying", flush=True)

asyncio.run(main())
"""


async def test_a_server_killed_mid_run_keeps_every_turn_and_the_next_run_marks_the_cut(tmp_path):
    import signal
    import subprocess
    import sys

    path = tmp_path / "threads.db"
    server = subprocess.Popen([sys.executable, "-c", KILLED_SERVER, str(path)], stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout.readline().strip() == "replying", "the second run to start replying"
    finally:
        server.send_signal(signal.SIGKILL)
        server.wait(timeout=30)
    store = SQLiteThreadStore(path)
    try:
        left = await store.get("alice", "t-killed")
        assert [m.role for m in left.messages] == ["user", "assistant", "user"]
        assert left.messages[-1].content == "/long 1000", "the message of the cut turn was kept as its run started"
        kernel = kernel_with(store)
        events = await drain(kernel.run("are you there?", thread=left, principal="alice"))
        assert type(events[-1]) is RunFinished
        kept = await store.get("alice", "t-killed")
        assert [(m.role, m.content) for m in kept.messages[2:5]] == [
            ("user", "/long 1000"), ("assistant", INTERRUPTED_REPLY), ("user", "are you there?")]
        assert kept.messages[-1].content == events[-1].text
    finally:
        await store.close()


async def test_a_new_message_on_a_thread_waiting_for_answers_is_refused(store):
    kernel = kernel_with(store, "async")
    thread = await store.create("alice")
    first = await drain(kernel.run('/ask rm {"path": "x"}', thread=thread, principal="alice", asker=SuspendAsker()))
    question = first[-2].question
    with pytest.raises(RunRefused) as refused:
        kernel.run("yes", thread=await store.get("alice", thread.id), principal="alice")
    assert refused.value.reason == "pending_questions" and question.id in str(refused.value)
    await drain(kernel.resume([Answer(question.id, "reject_once")], principal="alice"))
    after = await drain(kernel.run("and now?", thread=await store.get("alice", thread.id), principal="alice"))
    assert type(after[-1]) is RunFinished


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_many_turns_on_one_thread_at_once_are_all_kept(store, mode):
    """50 runs on one thread at once (#24 item 1): every one finishes, every turn is kept whole."""
    kernel = kernel_with(store, mode, max_concurrent_runs=64)
    thread = await store.create("alice")
    endings = await asyncio.gather(*(drain(kernel.run(f"turn {i}", thread=thread, principal="alice")) for i in range(50)))
    assert [type(e[-1]).__name__ for e in endings] == ["RunFinished"] * 50, [e[-1] for e in endings if type(e[-1]) is RunFailed]
    kept = await store.get("alice", thread.id)
    assert sorted(m.content for m in kept.messages if m.role == "user") == sorted(f"turn {i}" for i in range(50))
    replies = [m.content for m in kept.messages if m.role == "assistant" and m.content.startswith("You said")]
    assert sorted(replies) == sorted(e[-1].text for e in endings)


TWO_WRITERS = """
import asyncio, sys
from onedoor.builtins.scripted import ScriptedOptions, scripted
from onedoor.kernel import Backend, Kernel, Limits
from onedoor.threads.sqlite import SQLiteThreadStore

async def main(path, thread_id, name):
    store = SQLiteThreadStore(path)
    kernel = Kernel(Backend("scripted", lambda: scripted(ScriptedOptions(mode="async", tool=False, reasoning=False))),
                    store=store, limits=Limits(max_concurrent_runs=64))
    thread = await store.get("alice", thread_id)
    async def one(i):
        async with kernel.run(f"{name} {i}", thread=thread, principal="alice") as run:
            return [e async for e in run][-1]
    endings = await asyncio.gather(*(one(i) for i in range(20)))
    print(" ".join(type(e).__name__ for e in endings))
    await store.close()

asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3]))
"""


async def test_two_processes_writing_one_thread_at_once_keep_every_turn(tmp_path):
    """Two servers on one SQLite file (compare-and-set across processes), 20 turns each at once."""
    import subprocess
    import sys

    path = tmp_path / "threads.db"
    store = SQLiteThreadStore(path)
    thread = await store.create("alice")
    procs = [subprocess.Popen([sys.executable, "-c", TWO_WRITERS, str(path), thread.id, name], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for name in ("one", "two")]
    outs = [p.communicate(timeout=120) for p in procs]
    for out, err in outs:
        assert out.split() == ["RunFinished"] * 20, err[-2000:]
    kept = await store.get("alice", thread.id)
    users = sorted(m.content for m in kept.messages if m.role == "user")
    assert users == sorted(f"{name} {i}" for name in ("one", "two") for i in range(20))
    await store.close()


class Splitter:
    """A backend that streams an emoji as its two UTF-16 halves, and one half alone."""

    def __init__(self, lone: bool = False) -> None:
        self.lone = lone

    async def run(self, message, *, history=None, context=None):
        from onedoor.events import RunStarted

        parts = ["smile ", "\ud83d", "\ude00"] + (["\ud83d"] if self.lone else [])
        yield RunStarted(context.run_id)
        for part in parts:
            yield TextDelta(part)
        yield RunFinished(context.run_id, "".join(parts))


@pytest.mark.parametrize("lone", [False, True], ids=["pair", "lone"])
async def test_a_split_surrogate_pair_is_kept_as_the_door_delivered_it(store, lone):
    """#24 item 2: the reply streamed; the store keeps it (the pair as one character; a lone
    half as it was), the run does not fail after the client saw its reply."""
    kernel = Kernel(Backend("splitter", lambda: Splitter(lone)), store=store)
    thread = await store.create("alice")
    events = await drain(kernel.run("hi", thread=thread, principal="alice"))
    assert type(events[-1]) is RunFinished, events[-1]
    kept = (await store.get("alice", thread.id)).messages[-1].content
    assert kept == ("smile 😀\ud83d" if lone else "smile 😀")
