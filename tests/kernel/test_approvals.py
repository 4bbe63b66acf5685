"""Approvals: a backend asks before a tool runs; the door answers (or cannot)."""

from __future__ import annotations

import asyncio

import pytest
from onedoor.events import RunFinished, RunStarted, TextDelta, ToolFinished, ToolStarted
from onedoor.kernel import Backend, Kernel, Limits


def make_backend(mode: str, answers: list):
    class AsyncAsker:
        async def run(self, message, *, history=None, context=None):
            yield RunStarted("r")
            yield TextDelta("before ")
            ok = await context.request_approval("c1", "delete_file", {"path": "x"})
            answers.append(ok)
            if ok:
                yield ToolStarted("c1", "delete_file", {"path": "x"})
                yield ToolFinished("c1", "delete_file", "deleted")
            yield TextDelta("after")
            yield RunFinished("r", "before after")

    class SyncAsker:
        def run(self, message, *, history=None, context=None):
            yield RunStarted("r")
            yield TextDelta("before ")
            ok = context.request_approval_sync("c1", "delete_file", {"path": "x"})
            answers.append(ok)
            if ok:
                yield ToolStarted("c1", "delete_file", {"path": "x"})
                yield ToolFinished("c1", "delete_file", "deleted")
            yield TextDelta("after")
            yield RunFinished("r", "before after")

    return AsyncAsker if mode == "async" else SyncAsker


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("answer", [True, False])
async def test_the_door_answers_after_seeing_earlier_events(mode, answer):
    answers: list = []
    seen: list = []
    asked_after: list = []

    async def approver(call_id, name, arguments):
        asked_after.append(list(seen))
        await asyncio.sleep(0.4)  # a human thinking, longer than the idle timeout
        return answer

    kernel = Kernel(Backend("asker", make_backend(mode, answers)), limits=Limits(idle_timeout=0.2))
    async with kernel.run("go", approver=approver) as run:
        async for event in run:
            seen.append(event)
    assert answers == [answer]
    assert TextDelta("before ") in asked_after[0], "events before the question reached the door first"
    assert isinstance(seen[-1], RunFinished), "the idle timeout waited for the human"
    assert any(isinstance(e, ToolStarted) for e in seen) is answer


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_no_approver_means_no(mode):
    answers: list = []
    kernel = Kernel(Backend("asker", make_backend(mode, answers)))
    async with kernel.run("go") as run:
        events = [e async for e in run]
    assert answers == [False] and isinstance(events[-1], RunFinished)


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_cancel_while_asking_answers_no_and_ends_cancelled(mode):
    answers: list = []
    asking = asyncio.Event()

    async def approver(call_id, name, arguments):
        asking.set()
        await asyncio.sleep(30)
        return True

    kernel = Kernel(Backend("asker", make_backend(mode, answers)))
    async with kernel.run("go", approver=approver) as run:

        async def cancel_soon():
            await asking.wait()
            run.cancel()

        canceller = asyncio.create_task(cancel_soon())
        events = [e async for e in run]
        await canceller
    assert events[-1].stop_reason == "cancelled"
    assert kernel.worker_threads() == []
    assert answers in ([False], []), "the question was answered no, or the backend was stopped first"
