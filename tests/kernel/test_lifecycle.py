"""The run lifecycle: fresh agents, real cancellation, limits, hooks, backpressure."""

from __future__ import annotations

import asyncio
import threading

import pytest
from onedoor.errors import RunRefused
from onedoor.events import RunFailed, RunFinished, RunStarted, TextDelta, ToolFinished, ToolStarted
from onedoor.kernel import Backend, Kernel, Limits
from onedoor.testing import collect, scripted_kernel

MODES = ["sync", "async"]


async def _wait_until(predicate, tries=200):
    for _ in range(tries):
        if predicate():
            return True
        await asyncio.sleep(0.02)
    return predicate()


async def test_every_run_gets_a_fresh_agent():
    made = []

    class Agent:
        def __init__(self):
            made.append(self)

        def run(self, message, *, history=None):
            yield RunStarted("r")
            yield RunFinished("r", "")

    kernel = Kernel(Backend("fresh", Agent))
    await collect(kernel, "one")
    await collect(kernel, "two")
    assert len(made) == 2 and made[0] is not made[1]


@pytest.mark.parametrize("mode", MODES)
async def test_run_stream_shape(mode):
    kernel = scripted_kernel(mode=mode)
    out = await collect(kernel, "hello world", history=[{"role": "user", "content": "earlier"}, {"role": "assistant", "content": "ok"}])
    assert isinstance(out[0], RunStarted) and isinstance(out[-1], RunFinished)
    assert out[-1].run_id == out[0].run_id
    assert "".join(e.text for e in out if isinstance(e, TextDelta)) == out[-1].text
    assert "turn 2" in out[-1].text, "history reached the backend"


@pytest.mark.parametrize("mode", MODES)
async def test_cancel_stops_the_backend_and_ends_cancelled(mode):
    kernel = scripted_kernel(mode=mode, delay=0.02, deltas=500)
    seen = []
    async with kernel.run("long one") as run:
        async for event in run:
            seen.append(event)
            if isinstance(event, TextDelta) and len([e for e in seen if isinstance(e, TextDelta)]) == 3:
                run.cancel()
    last = seen[-1]
    assert isinstance(last, RunFinished) and last.stop_reason == "cancelled"
    assert last.text == "".join(e.text for e in seen if isinstance(e, TextDelta))
    assert len([e for e in seen if isinstance(e, TextDelta)]) < 500
    assert kernel.worker_threads() == [], "the sync worker thread is gone"
    assert kernel.active_runs == 0
    if mode == "async":
        tasks = [t for t in asyncio.all_tasks() if t.get_name().startswith("onedoor-run-")]
        assert tasks == [], "the async backend's task is gone"


@pytest.mark.parametrize("mode", MODES)
async def test_cancel_while_the_backend_hangs(mode):
    kernel = scripted_kernel(Limits(idle_timeout=30), mode=mode)
    async with kernel.run("/hang now") as run:
        events = []

        async def consume():
            async for event in run:
                events.append(event)

        task = asyncio.create_task(consume())
        await asyncio.sleep(0.2)
        run.cancel()
        await asyncio.wait_for(task, 10)
    assert isinstance(events[-1], RunFinished) and events[-1].stop_reason == "cancelled"
    assert kernel.worker_threads() == []


@pytest.mark.parametrize("mode", MODES)
async def test_consumer_going_away_cancels_the_backend(mode):
    outcomes = []

    class Hooks:
        def onedoor_run_started(self, run):
            pass

        def onedoor_run_finished(self, run, outcome):
            outcomes.append(outcome)

    kernel = scripted_kernel(mode=mode, delay=0.02, deltas=500)
    kernel.hooks = Hooks()
    run = kernel.run("going away")
    async for event in run:
        if isinstance(event, TextDelta):
            break
    await run.aclose()
    assert kernel.worker_threads() == []
    assert kernel.active_runs == 0
    assert len(outcomes) == 1 and outcomes[0].stop_reason == "cancelled"


@pytest.mark.parametrize("mode", MODES)
async def test_cancelling_the_consumer_task_cancels_the_run(mode):
    kernel = scripted_kernel(mode=mode, delay=0.05, deltas=500)
    started = asyncio.Event()

    async def door():
        async with kernel.run("task goes") as run:
            async for event in run:
                if isinstance(event, TextDelta):
                    started.set()

    task = asyncio.create_task(door())
    await asyncio.wait_for(started.wait(), 10)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await _wait_until(lambda: kernel.worker_threads() == [] and kernel.active_runs == 0)


async def test_sync_backend_is_told_through_cancel_method():
    told = threading.Event()

    class Agent:
        def cancel(self):
            told.set()

        def run(self, message, *, history=None):
            yield RunStarted("r")
            yield TextDelta("before ")
            told.wait(10)  # a blocking call that only the cancel() hook interrupts
            yield TextDelta("after")

    kernel = Kernel(Backend("told", Agent), limits=Limits(idle_timeout=30))
    async with kernel.run("x") as run:
        async for event in run:
            if isinstance(event, TextDelta):
                await asyncio.sleep(0.1)
                run.cancel()
    assert told.is_set() and run.outcome.stop_reason == "cancelled"
    assert await _wait_until(lambda: kernel.worker_threads() == [])


async def test_open_tool_calls_are_closed_on_cancel():
    class Agent:
        async def run(self, message, *, history=None):
            yield RunStarted("r")
            yield ToolStarted("c1", "slow_tool", {})
            await asyncio.sleep(30)

    kernel = Kernel(Backend("tooly", Agent))
    events = []
    async with kernel.run("x") as run:
        async for event in run:
            events.append(event)
            if isinstance(event, ToolStarted):
                run.cancel()
    closing = [e for e in events if isinstance(e, ToolFinished)]
    assert len(closing) == 1 and closing[0].call_id == "c1" and closing[0].is_error
    assert events[-1].stop_reason == "cancelled"


async def test_concurrency_limit_refuses_with_retry_after():
    kernel = scripted_kernel(Limits(max_concurrent_runs=2, retry_after=3), deltas=5)
    a = kernel.run("a")
    b = kernel.run("b")
    with pytest.raises(RunRefused) as refused:
        kernel.run("c")
    assert refused.value.reason == "busy" and refused.value.retry_after == 3
    await a.aclose()
    await b.aclose()
    assert kernel.active_runs == 0
    out = await collect(kernel, "d")
    assert isinstance(out[-1], RunFinished)


@pytest.mark.parametrize(
    "message,history,reason",
    [
        ("", None, "invalid"),
        ("   ", None, "invalid"),
        ("x" * 101, None, "too_large"),
        ("ok", [{"role": "user", "content": "y" * 200}], "too_large"),
        ("ok", [{"role": "alien", "content": "?"}], "invalid"),
        ("ok", ["not a message"], "invalid"),
    ],
)
def test_bad_input_is_refused_before_any_event(message, history, reason):
    kernel = scripted_kernel(Limits(max_message_chars=100, max_input_chars=150))
    with pytest.raises(RunRefused) as refused:
        kernel.run(message, history=history)
    assert refused.value.reason == reason
    assert kernel.active_runs == 0


async def test_hooks_see_every_run_once():
    import pluggy
    from onedoor import hookspecs
    from onedoor.hookspecs import hookimpl

    seen = []

    class Observer:
        @hookimpl
        def onedoor_run_started(self, run):
            seen.append(("start", run.run_id, run.door))

        @hookimpl
        def onedoor_run_finished(self, run, outcome):
            seen.append(("end", run.run_id, type(outcome).__name__))

    class Broken:
        @hookimpl
        def onedoor_run_finished(self, run, outcome):
            raise RuntimeError("observer bug")

    pm = pluggy.PluginManager("onedoor")
    pm.add_hookspecs(hookspecs)
    pm.register(Observer())
    pm.register(Broken())
    kernel = scripted_kernel()
    kernel.hooks = pm.hook
    ok = await collect(kernel, "fine", door="test")
    failed = await collect(kernel, "/fail now", door="test")
    assert isinstance(failed[-1], RunFailed)
    assert seen == [
        ("start", ok[0].run_id, "test"), ("end", ok[0].run_id, "RunFinished"),
        ("start", failed[0].run_id, "test"), ("end", failed[0].run_id, "RunFailed"),
    ]


async def test_backpressure_bounds_how_far_a_backend_runs_ahead():
    produced = []

    class Fast:
        def run(self, message, *, history=None):
            yield RunStarted("r")
            text = ""
            for i in range(5000):
                produced.append(i)
                text += "x"
                yield TextDelta("x")
            yield RunFinished("r", text)

    kernel = Kernel(Backend("fast", Fast), limits=Limits(queue_size=50))
    async with kernel.run("go") as run:
        async for event in run:
            if isinstance(event, TextDelta):
                await asyncio.sleep(0.3)  # a slow client
                ahead = len(produced)
                break
    # one batch in the consumer's hands plus a full buffer, never the whole run
    assert ahead <= 2 * 50 + 2, f"backend ran {ahead} events ahead of a stalled consumer"


async def test_cancel_all_cancels_every_run_in_flight():
    kernel = scripted_kernel(delay=0.02, deltas=1000)
    runs = [kernel.run(f"run {i}") for i in range(3)]
    results = []

    async def consume(run):
        async with run:
            results.append([e async for e in run][-1])

    tasks = [asyncio.create_task(consume(r)) for r in runs]
    await asyncio.sleep(0.2)
    assert kernel.cancel_all() == 3
    await asyncio.wait_for(asyncio.gather(*tasks), 10)
    assert [r.stop_reason for r in results] == ["cancelled"] * 3
    assert kernel.worker_threads() == []


async def test_a_run_never_iterated_releases_its_slot_on_close():
    kernel = scripted_kernel(Limits(max_concurrent_runs=1))
    run = kernel.run("never read")
    await run.aclose()
    assert kernel.active_runs == 0
    await collect(kernel, "next")


async def test_an_empty_message_continues_after_tool_results():
    kernel = scripted_kernel()
    history = [
        {"role": "user", "content": "/call pick_color {}"},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "name": "pick_color", "arguments": {}}]},
        {"role": "tool", "content": "blue", "tool_call_id": "c1"},
    ]
    out = await collect(kernel, "", history=history)
    assert out[-1].text == "The tool returned: blue"
    with pytest.raises(RunRefused):
        kernel.run("", history=history[:1])
