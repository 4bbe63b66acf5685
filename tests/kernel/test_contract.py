"""Each kind of broken stream: the contract checker rejects it, the kernel turns it into
a RunFailed with a clear message, and the stream still ends properly."""

from __future__ import annotations

import asyncio
import threading

import pytest
from onedoor.events import (
    RunFailed,
    RunFinished,
    RunStarted,
    TextDelta,
    ToolFinished,
    ToolStarted,
)
from onedoor.kernel import Backend, Kernel, Limits
from onedoor.port import ToolSpec
from onedoor.testing import check_backend, check_events, collect

BROKEN = {
    "no RunStarted": ([TextDelta("x"), RunFinished("r", "x")], "before RunStarted"),
    "RunStarted twice": ([RunStarted("r"), RunStarted("r"), RunFinished("r", "")], "RunStarted twice"),
    "event after the end": ([RunStarted("r"), RunFinished("r", ""), TextDelta("late")], "after the run had ended"),
    "tool left open": ([RunStarted("r"), ToolStarted("c1", "t", {}), RunFinished("r", "")], "still open"),
    "unknown tool finished": ([RunStarted("r"), ToolFinished("c9", "t", "x"), RunFinished("r", "")], "was not open"),
    "tool started twice": ([RunStarted("r"), ToolStarted("c1", "t", {}), ToolStarted("c1", "t", {})], "started twice"),
    "text does not add up": ([RunStarted("r"), TextDelta("a"), RunFinished("r", "ab")], "concatenation"),
    "not an event": ([RunStarted("r"), "a string", RunFinished("r", "")], "not a core event"),
    "no terminal event": ([RunStarted("r"), TextDelta("a")], "without RunFinished"),
}


def _sync_backend(events):
    class Agent:
        def run(self, message, *, history=None):
            yield from events

    return Agent


def _async_backend(events):
    class Agent:
        async def run(self, message, *, history=None):
            for event in events:
                yield event

    return Agent


@pytest.mark.parametrize("case", list(BROKEN))
def test_checker_rejects_each_broken_stream(case):
    events, expected = BROKEN[case]
    problems = check_events(events)
    assert problems and expected in problems[0]


@pytest.mark.parametrize("make", [_sync_backend, _async_backend], ids=["sync", "async"])
@pytest.mark.parametrize("case", list(BROKEN))
async def test_kernel_turns_each_broken_stream_into_run_failed(case, make):
    events, expected = BROKEN[case]
    kernel = Kernel(Backend("broken", make(events)), limits=Limits(idle_timeout=5))
    out = await collect(kernel, "hi")
    assert isinstance(out[0], RunStarted)
    if case == "event after the end":
        # The run had already ended cleanly: the kernel stops reading at the terminal
        # event, so the late event never reaches a door and the backend is stopped.
        assert isinstance(out[-1], RunFinished) and TextDelta("late") not in out
        assert kernel.worker_threads() == []
        return
    assert isinstance(out[-1], RunFailed), out
    assert "broke the event contract" in out[-1].error and expected in out[-1].error
    assert sum(isinstance(e, (RunFinished, RunFailed)) for e in out) == 1
    started = {e.call_id for e in out if isinstance(e, ToolStarted)}
    finished = {e.call_id for e in out if isinstance(e, ToolFinished)}
    assert started <= finished, "the kernel closes every tool call it let through"
    assert kernel.active_runs == 0


@pytest.mark.parametrize("make", [_sync_backend, _async_backend], ids=["sync", "async"])
async def test_a_raising_backend_becomes_run_failed_without_traceback(make):
    class Boom(Exception):
        pass

    def raising():
        class Agent:
            def run(self, message, *, history=None):
                yield RunStarted("r")
                yield TextDelta("partial")
                raise Boom("the model fell over\nTraceback (most recent call last): secret details")

        return Agent()

    factory = raising if make is _sync_backend else _async_raising(Boom)
    kernel = Kernel(Backend("flaky", factory))
    out = await collect(kernel, "hi")
    assert isinstance(out[-1], RunFailed)
    assert out[-1].error == "backend 'flaky' failed: Boom: the model fell over"


def _async_raising(exc_type):
    class Agent:
        async def run(self, message, *, history=None):
            yield RunStarted("r")
            raise exc_type("the model fell over\nTraceback (most recent call last): secret details")

    return Agent


async def test_a_backend_that_cannot_be_created_fails_cleanly():
    def factory():
        raise RuntimeError("no API key")

    out = await collect(Kernel(Backend("nokey", factory)), "hi")
    assert isinstance(out[-1], RunFailed) and "could not create an agent: RuntimeError: no API key" in out[-1].error


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_a_silent_backend_hits_the_idle_timeout(mode):
    from onedoor.testing import scripted_kernel

    kernel = scripted_kernel(Limits(idle_timeout=0.3), mode=mode)
    out = await collect(kernel, "/hang please")
    assert isinstance(out[-1], RunFailed) and "idle timeout" in out[-1].error
    assert kernel.worker_threads() == []


async def test_a_slow_backend_hits_the_run_timeout():
    from onedoor.testing import scripted_kernel

    kernel = scripted_kernel(
        Limits(idle_timeout=5, run_timeout=0.3), delay=0.05, deltas=1000, reasoning=False, tool=False
    )
    out = await collect(kernel, "long")
    assert isinstance(out[-1], RunFailed) and "run timeout" in out[-1].error
    assert any(isinstance(e, TextDelta) for e in out), "events before the timeout were delivered"


async def test_a_backend_ignoring_cancel_does_not_hang_the_door():
    release = threading.Event()

    class Stubborn:
        def run(self, message, *, history=None):
            yield RunStarted("r")
            release.wait(10)  # ignores every cancel request
            yield TextDelta("late")

    kernel = Kernel(Backend("stubborn", Stubborn), limits=Limits(idle_timeout=0.2, cancel_grace=0.2))
    out = await collect(kernel, "hi")
    assert isinstance(out[-1], RunFailed)
    release.set()
    for _ in range(100):
        if not kernel.worker_threads():
            break
        await asyncio.sleep(0.05)
    assert kernel.worker_threads() == []


def test_client_tools_may_stay_open_with_pending_tools():
    tools = [ToolSpec("pick_color", client=True)]
    seq = [RunStarted("r"), ToolStarted("c1", "pick_color", {}), RunFinished("r", "", "pending_tools")]
    assert check_events(seq, tools) == []
    assert check_events(seq) != [], "without the client tool offered, the open call is a violation"


def test_the_scripted_backend_keeps_the_contract_in_both_modes():
    from onedoor.builtins.scripted import ScriptedOptions, scripted

    for mode in ("sync", "async"):
        report = check_backend(lambda mode=mode: scripted(ScriptedOptions(mode=mode)), "hello there")
        assert report.ok, report.problems
        kinds = {type(e).__name__ for e in report.events}
        assert {"RunStarted", "ReasoningDelta", "ToolStarted", "ToolFinished", "TextDelta", "RunFinished"} <= kinds
