"""``RunJournal.deliver``: a reader the journal's own task hands each event to as it keeps it
(no task switch per event). The same events as ``follow``, exactly once and in order,
whatever the reader's room; a reader's own failure stays its own; its leaving does what
``on_disconnect`` says."""

from __future__ import annotations

import asyncio

import pytest
from onedoor.builtins.scripted import ScriptedOptions, scripted
from onedoor.events import STOP_CANCELLED, RunFinished
from onedoor.journal import CursorExpired
from onedoor.kernel import Backend, Kernel, Limits
from onedoor_test_support import await_for


def kernel_with(mode="async", delay=0.0, **limits) -> Kernel:
    options = ScriptedOptions(mode=mode, delay=delay, reasoning=False)
    return Kernel(Backend("scripted", lambda: scripted(options)), limits=Limits(**limits))


async def follow(journal, after=0) -> list[tuple[int, object]]:
    return [pair async for pair in journal.follow(after)]


async def no_wait() -> None:
    return None


async def deliver(journal, after=0, room_every=0, rooms=None) -> list[tuple[int, object]]:
    """Everything ``deliver`` hands over; ``room_every``: say "no room" after that many events."""
    got: list[tuple[int, object]] = []

    async def room() -> None:
        if rooms is not None:
            rooms.append(len(got))
        await asyncio.sleep(0)

    def put(seq, event) -> bool:
        got.append((seq, event))
        return not room_every or len(got) % room_every != 0

    await journal.deliver(put, after, room=room)
    return got


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_a_delivered_reader_gets_what_a_follower_gets_whatever_its_room(mode):
    kernel = kernel_with(mode, delay=0.002)
    journal = kernel.journals.start(kernel.run("/long 60"), on_disconnect="finish")
    rooms: list[int] = []
    pushed, cramped, followed = await asyncio.gather(
        deliver(journal), deliver(journal, room_every=7, rooms=rooms), follow(journal))
    assert [seq for seq, _ in followed] == list(range(1, journal.last_seq + 1))
    assert pushed == followed and cramped == followed
    assert isinstance(followed[-1][1], RunFinished) and followed[-1][1].stop_reason != STOP_CANCELLED
    assert rooms and all(n % 7 == 0 for n in rooms)  # it waited for room exactly when it had none
    assert await deliver(journal, after=10) == followed[10:]  # after the end: read in its own task


async def test_a_reader_whose_put_fails_gets_its_error_and_nobody_else_does():
    kernel = kernel_with(delay=0.002)
    journal = kernel.journals.start(kernel.run("/long 40"), on_disconnect="finish")
    other = asyncio.ensure_future(follow(journal))
    await await_for(lambda: journal.last_seq >= 3, "the run to be going")
    calls = []

    def put(seq, event) -> bool:
        calls.append(seq)
        if len(calls) == 5:
            raise ValueError("the door's encoder broke")
        return True

    with pytest.raises(ValueError, match="encoder broke"):
        await journal.deliver(put, journal.last_seq, room=no_wait)
    whole = await other
    assert whole[-1][1].stop_reason != STOP_CANCELLED and [s for s, _ in whole] == list(range(1, journal.last_seq + 1))
    assert calls == list(range(calls[0], calls[0] + 5))


async def test_the_last_delivered_reader_leaving_cancels_the_run():
    kernel = kernel_with(delay=0.01)
    journal = kernel.journals.start(kernel.run("/long 200"))
    reader = asyncio.ensure_future(deliver(journal))
    await await_for(lambda: journal.last_seq >= 4, "the reader to be handed events")
    reader.cancel()
    await await_for(lambda: journal.done, "the run to end after its reader left")
    ending = (await follow(journal, after=journal.last_seq - 1))[-1][1]
    assert isinstance(ending, RunFinished) and ending.stop_reason == STOP_CANCELLED
    assert journal.last_seq < 200 and kernel.active_runs == 0


async def test_a_delivered_reader_that_falls_behind_is_told():
    kernel = kernel_with(delay=0.001, max_journal_events=10)
    journal = kernel.journals.start(kernel.run("/long 100"), on_disconnect="finish")
    release = asyncio.Event()

    async def room() -> None:
        await release.wait()

    got = []
    reader = asyncio.ensure_future(journal.deliver(lambda seq, event: got.append(seq) or False, 0, room=room))
    await await_for(lambda: journal.done, "the run to end")
    release.set()
    with pytest.raises(CursorExpired, match="fell behind"):
        await reader
    assert got == [1]
