"""A backend that ignores every cancel request: the door still gets its ending in time.

The door sees RunFinished(cancelled) within ``cancel_grace`` (plus slack for a slow
machine, less than the grace itself, so a doubled wait fails), the warning is logged
once, and the run keeps its slot until the backend's worker really ends.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time

import pytest
from onedoor.errors import RunRefused
from onedoor.events import RunFinished, RunStarted, TextDelta, ToolStarted
from onedoor.kernel import Backend, Kernel, Limits

GRACE = 2.0
SLACK = 1.5  # a slow, shared machine; still less than GRACE, so twice the grace fails
STUCK = "did not stop within"


def stubborn_sync(release: threading.Event):
    class Stubborn:
        """No cancel(), no context: only ``release`` ends its wait."""

        def run(self, message, *, history=None):
            yield RunStarted("r")
            yield ToolStarted("c1", "slow_tool", {})
            release.wait(60)
            yield TextDelta("too late")

    return Stubborn


def stubborn_async(release: asyncio.Event):
    class Stubborn:
        """Swallows task cancellation: only ``release`` ends its wait."""

        async def run(self, message, *, history=None):
            yield RunStarted("r")
            yield ToolStarted("c1", "slow_tool", {})
            while not release.is_set():
                try:
                    await release.wait()
                except asyncio.CancelledError:
                    continue
            yield TextDelta("too late")

    return Stubborn


async def wait_for_slot_release(kernel: Kernel, tries: int = 500) -> None:
    for _ in range(tries):
        if kernel.active_runs == 0:
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"waited for the stuck backend's slot to be released; still {kernel.active_runs} active")


def stuck_warnings(caplog) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "onedoor.kernel" and STUCK in r.getMessage()]


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_cancel_ends_the_stream_within_cancel_grace_and_holds_the_slot(mode, caplog):
    caplog.set_level(logging.WARNING, logger="onedoor.kernel")
    release: threading.Event | asyncio.Event = threading.Event() if mode == "sync" else asyncio.Event()
    agent = stubborn_sync(release) if mode == "sync" else stubborn_async(release)  # type: ignore[arg-type]
    kernel = Kernel(Backend("stubborn", agent), limits=Limits(cancel_grace=GRACE, max_concurrent_runs=1))
    events = []
    try:
        async with kernel.run("work") as run:
            async for event in run:
                events.append(event)
                if isinstance(event, ToolStarted):
                    cancelled_at = time.monotonic()
                    run.cancel()
            ended_after = time.monotonic() - cancelled_at
        assert isinstance(events[-1], RunFinished) and events[-1].stop_reason == "cancelled"
        assert events[-2].call_id == "c1" and events[-2].is_error, "the open tool call was closed"
        assert ended_after < GRACE + SLACK, f"the stream ended {ended_after:.1f} s after cancel (grace {GRACE} s)"
        assert len(stuck_warnings(caplog)) == 1

        assert kernel.active_runs == 1, "the stuck backend still holds its slot"
        with pytest.raises(RunRefused) as refused:
            kernel.run("another")
        assert refused.value.reason == "busy"
        if mode == "sync":
            assert len(kernel.worker_threads()) == 1
    finally:
        release.set()
    if mode == "sync":
        (thread,) = kernel.worker_threads() or [None]
        if thread is not None:
            await asyncio.to_thread(thread.join, 30)
        assert kernel.active_runs == 0, "the slot is free once the worker thread has ended"
        assert kernel.worker_threads() == []
    else:
        await wait_for_slot_release(kernel)
    assert len(stuck_warnings(caplog)) == 1, "logged once, not again when it finally ended"


async def test_a_backend_stuck_after_its_last_event_does_not_hold_the_door(caplog):
    caplog.set_level(logging.WARNING, logger="onedoor.kernel")
    release = threading.Event()

    class Lingering:
        def run(self, message, *, history=None):
            yield RunStarted("r")
            yield TextDelta("done")
            yield RunFinished("r", "done")
            release.wait(60)  # some cleanup that takes forever

    kernel = Kernel(Backend("lingering", Lingering), limits=Limits(cancel_grace=GRACE))
    try:
        started = time.monotonic()
        async with kernel.run("work") as run:
            events = [e async for e in run]
        took = time.monotonic() - started
        assert isinstance(events[-1], RunFinished) and events[-1].stop_reason == "end_turn"
        assert took < GRACE + SLACK, f"the stream ended after {took:.1f} s (grace {GRACE} s)"
        assert len(stuck_warnings(caplog)) == 1
        assert kernel.active_runs == 1
    finally:
        release.set()
    for thread in kernel.worker_threads():
        await asyncio.to_thread(thread.join, 30)
    assert kernel.active_runs == 0


async def test_cancel_all_with_a_shorter_grace():
    release = threading.Event()
    kernel = Kernel(Backend("stubborn", stubborn_sync(release)), limits=Limits(cancel_grace=60))
    try:
        run = kernel.run("work")
        seen = asyncio.Event()
        events = []

        async def door():
            async with run:
                async for event in run:
                    events.append(event)
                    if isinstance(event, ToolStarted):
                        seen.set()

        task = asyncio.create_task(door())
        await asyncio.wait_for(seen.wait(), 30)
        started = time.monotonic()
        assert await kernel.shutdown(GRACE) == 1
        took = time.monotonic() - started
        await asyncio.wait_for(task, 30)
        assert events[-1].stop_reason == "cancelled"
        assert took < GRACE + SLACK, f"shutdown took {took:.1f} s for a grace of {GRACE} s, not cancel_grace (60 s)"
    finally:
        release.set()
    for thread in kernel.worker_threads():
        await asyncio.to_thread(thread.join, 30)
    assert kernel.active_runs == 0


async def test_shutdown_shortens_a_cancel_already_waiting_for_its_backend():
    release = threading.Event()
    kernel = Kernel(Backend("stubborn", stubborn_sync(release)), limits=Limits(cancel_grace=60))
    events: list = []
    try:
        run = kernel.run("work")
        cancelled = asyncio.Event()

        async def door():
            async with run:
                async for event in run:
                    events.append(event)
                    if isinstance(event, ToolStarted):
                        run.cancel()  # the kernel now waits up to 60 s for the backend
                        cancelled.set()

        task = asyncio.create_task(door())
        await asyncio.wait_for(cancelled.wait(), 30)
        started = time.monotonic()
        await kernel.shutdown(GRACE)
        took = time.monotonic() - started
        await asyncio.wait_for(task, 30)
        assert events[-1].stop_reason == "cancelled"
        assert took < GRACE + SLACK, f"shutdown took {took:.1f} s for a grace of {GRACE} s"
    finally:
        release.set()
    for thread in kernel.worker_threads():
        await asyncio.to_thread(thread.join, 30)
    assert kernel.active_runs == 0
