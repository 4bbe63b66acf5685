"""Usage in the port (summed per model onto the terminal event, kept with the turn, read by
servers a version apart) and the observer hooks of a whole run."""

from __future__ import annotations

import asyncio
import contextvars
import threading

import pluggy
import pytest
from onedoor import hookspecs
from onedoor.errors import RunRefused
from onedoor.events import (
    RunFailed,
    RunFinished,
    RunStarted,
    TextDelta,
    ToolStarted,
    UsageReported,
    event_from_dict,
    event_from_json,
    event_to_dict,
)
from onedoor.hookspecs import hookimpl
from onedoor.observe import observed_request, trace_meta
from onedoor.questions import SuspendAsker
from onedoor.testing import collect, final, kernel_for_agent, scripted_kernel
from onedoor.threads.sqlite import SQLiteThreadStore
from onedoor.usage import ModelUsage, add_usage

GPT = ModelUsage("gpt-x", "openai", 10, 7, cache_read_tokens=4, requests=1, cost=0.5, currency="USD")
SMALL = ModelUsage("small", "local", 3, 2, requests=1)


class UsageAgent:
    """Reports usage as it goes (both ways) and on its terminal event."""

    def run(self, message, *, history=None, context=None):
        yield RunStarted(context.run_id)
        yield UsageReported((GPT,))
        context.report_usage(SMALL)
        yield TextDelta("hi")
        if message == "fail":
            yield RunFailed(context.run_id, "broke", usage=(GPT,))
        elif message == "hang":
            context.cancel.wait(5)
            return
        else:
            yield RunFinished(context.run_id, "hi", usage=(GPT,))


def test_add_usage_sums_per_model_and_keeps_cost():
    total = add_usage((GPT,), (SMALL, GPT))
    assert total == (ModelUsage("gpt-x", "openai", 20, 14, cache_read_tokens=8, requests=2, cost=1.0, currency="USD"),
                     SMALL)
    assert total[0].total_tokens == 34 and add_usage() == ()


def test_usage_json_reads_what_it_knows():
    entry = ModelUsage.from_dict({"model": "m", "input_tokens": 3, "future_field": {"x": 1}})
    assert entry == ModelUsage("m", input_tokens=3)
    for bad in ({"input_tokens": -1}, {"input_tokens": "3"}, {"model": 4}, {"cost": "free"}, [1]):
        with pytest.raises(ValueError):
            ModelUsage.from_dict(bad)


def test_events_carry_usage_and_old_and_new_shapes_read():
    event = RunFinished("r", "t", usage=(GPT,))
    assert event_from_dict(event_to_dict(event)) == event
    assert "usage" not in event_to_dict(RunFinished("r", "t")), "no usage: the shape older servers wrote"
    assert event_from_json('{"type": "run_finished", "run_id": "r", "text": "t"}') == RunFinished("r", "t")
    newer = {"type": "run_failed", "run_id": "r", "error": "e", "usage": [GPT.to_dict()], "trace_id": "abc"}
    assert event_from_dict(newer) == RunFailed("r", "e", (GPT,)), "a newer server's extra field is ignored"
    with pytest.raises(ValueError):
        event_from_dict({"type": "run_finished", "run_id": "r", "text": "t", "usage": [{"input_tokens": -5}]})


async def test_the_terminal_event_carries_the_sum_of_everything_reported():
    events = await collect(kernel_for_agent(UsageAgent), "go")
    assert [type(e) for e in events].count(UsageReported) == 2
    assert final(events).usage == add_usage((GPT,), (SMALL,), (GPT,))
    failed = final(await collect(kernel_for_agent(UsageAgent), "fail"))
    assert type(failed) is RunFailed and failed.usage == add_usage((GPT,), (SMALL,), (GPT,))


async def test_a_cancelled_run_ends_with_the_usage_reported_so_far():
    async with kernel_for_agent(UsageAgent).run("hang") as run:
        events = []
        async for event in run:
            events.append(event)
            if type(event) is TextDelta:
                run.cancel()
    assert final(events).stop_reason == "cancelled" and final(events).usage == (GPT, SMALL)


async def test_bad_usage_breaks_the_contract():
    class Agent:
        def run(self, message, *, history=None, context=None):
            yield RunStarted(context.run_id)
            yield RunFinished(context.run_id, "", usage=[{"input_tokens": 1}])

    assert "usage must be a tuple" in final(await collect(kernel_for_agent(Agent), "x")).error


async def test_the_scripted_backend_counts_and_the_thread_keeps_usage_per_turn(tmp_path):
    store = SQLiteThreadStore(tmp_path / "t.db")
    kernel = scripted_kernel(store=store, tool=False, reasoning=False)
    thread, _ = await kernel.threads.open("local", "t")
    first = final(await collect(kernel, "one two three", thread=thread))
    assert first.usage == (ModelUsage("scripted", "onedoor", 3, len("You said: one two three".split()), requests=1),)
    second = final(await collect(kernel, "four", thread=await kernel.threads.get("local", "t")))
    words_in = 1 + 3 + len(first.text.split())  # the message and the history
    assert second.usage[0].input_tokens == words_in
    kept = (await kernel.threads.get("local", "t")).messages
    assert [m.usage for m in kept if m.role == "assistant"] == [first.usage, second.usage]
    assert [m.usage for m in kept if m.role == "user"] == [(), ()]
    await store.close()


# -- observers -------------------------------------------------------------------------------
def manager(*plugins: object) -> pluggy.PluginManager:
    pm = pluggy.PluginManager("onedoor")
    pm.add_hookspecs(hookspecs)
    for plugin in plugins:
        pm.register(plugin)
    return pm


SPAN = contextvars.ContextVar("span", default=None)


class Recorder:
    def __init__(self) -> None:
        self.seen: list[tuple] = []

    @hookimpl
    def onedoor_run_started(self, run):
        self.seen.append(("started", run.thread_id, run.principal, run.meta.get("traceparent")))

    @hookimpl
    def onedoor_backend_starting(self, run):
        SPAN.set(f"span-of-{run.run_id}")  # current in the backend only
        self.seen.append(("backend",))

    @hookimpl
    def onedoor_first_token(self, run):
        self.seen.append(("first_token",))

    @hookimpl
    def onedoor_tool_started(self, run, call):
        self.seen.append(("tool_started", call.name))

    @hookimpl
    def onedoor_tool_finished(self, run, result):
        self.seen.append(("tool_finished", result.name, result.is_error))

    @hookimpl
    def onedoor_question_asked(self, run, question):
        self.seen.append(("asked", question.kind))

    @hookimpl
    def onedoor_question_answered(self, run, question, answer):
        self.seen.append(("answered", answer.outcome))

    @hookimpl
    def onedoor_usage(self, run, usage):
        self.seen.append(("usage", usage[0].model))

    @hookimpl
    def onedoor_run_finished(self, run, outcome):
        self.seen.append(("finished", type(outcome).__name__, bool(outcome.usage)))

    @hookimpl
    def onedoor_run_refused(self, door, reason, principal):
        self.seen.append(("refused", door, reason, principal))


class Broken:
    """Raises in every observer hook: nothing of it may reach a run."""

    @hookimpl
    def onedoor_backend_starting(self, run):
        raise RuntimeError("broken observer")

    @hookimpl
    def onedoor_tool_started(self, run, call):
        raise RuntimeError("broken observer")

    @hookimpl
    def onedoor_question_asked(self, run, question):
        raise RuntimeError("broken observer")


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_every_observer_hook_of_a_run_in_order(mode, tmp_path):
    recorder = Recorder()
    store = SQLiteThreadStore(tmp_path / "t.db")
    kernel = scripted_kernel(store=store, hooks=manager(Broken(), recorder).hook, mode=mode)
    thread, _ = await kernel.threads.open("alice", "t")
    events = await collect(kernel, '/ask deploy {"env": "prod"}', thread=thread, principal="alice",
                           meta={"traceparent": "00-" + "1" * 32 + "-" + "2" * 16 + "-01"})
    assert type(final(events)) is RunFinished, "a broken observer breaks nothing"
    assert recorder.seen == [
        ("started", "t", "alice", "00-" + "1" * 32 + "-" + "2" * 16 + "-01"),
        ("backend",),
        ("tool_started", "deploy"),
        ("asked", "approval"),
        ("answered", "reject_once"),
        ("tool_finished", "deploy", True),
        ("first_token",),
        ("finished", "RunFinished", True),
    ]
    await store.close()


async def test_first_token_usage_and_refusals():
    recorder = Recorder()
    kernel = kernel_for_agent(UsageAgent, hooks=manager(recorder).hook)
    await collect(kernel, "go", door="rest")
    assert recorder.seen[2:] == [("usage", "gpt-x"), ("usage", "small"), ("first_token",), ("finished", "RunFinished", True)]
    with pytest.raises(RunRefused):
        kernel.run("", door="rest", principal="bob")
    assert recorder.seen[-1] == ("refused", "rest", "invalid", "bob")


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_what_backend_starting_sets_is_current_in_the_backend_only(mode):
    seen = {}

    class SyncAgent:
        def run(self, message, *, history=None, context=None):
            seen["span"], seen["thread"] = SPAN.get(), threading.current_thread().name
            yield RunStarted(context.run_id)
            yield RunFinished(context.run_id, "")

    class AsyncAgent:
        async def run(self, message, *, history=None, context=None):
            seen["span"], seen["thread"] = SPAN.get(), threading.current_thread().name
            yield RunStarted(context.run_id)
            yield RunFinished(context.run_id, "")

    kernel = kernel_for_agent(SyncAgent if mode == "sync" else AsyncAgent, hooks=manager(Recorder()).hook)
    async with kernel.run("x") as run:
        [e async for e in run]
    assert seen["span"] == f"span-of-{run.run_id}"
    assert (seen["thread"] != threading.current_thread().name) == (mode == "sync")
    assert SPAN.get() is None, "the door's own context is untouched"


async def test_a_parked_run_is_observed_once_across_its_responses():
    recorder = Recorder()
    kernel = scripted_kernel(hooks=manager(recorder).hook)
    async with kernel.run("/question which branch?", asker=SuspendAsker()) as run:
        events = [e async for e in run]
    assert final(events).stop_reason == "suspended"
    question = kernel.open_questions(run.run_id)[0]
    async with kernel.resume([{"question_id": question.id, "outcome": "accept", "value": {"answer": "main"}}]) as rest:
        [e async for e in rest]
    names = [s[0] for s in recorder.seen]
    assert names.count("started") == 1 and names.count("finished") == 1 and names.count("backend") == 1
    assert ("answered", "accept") in recorder.seen


async def test_requests_are_observed_only_when_someone_listens():
    seen = []

    class Requests:
        @hookimpl
        def onedoor_request_started(self, request):
            request.scratch["token"] = SPAN.set("request-span")
            seen.append(("start", request.door, request.method, request.meta))

        @hookimpl
        def onedoor_request_finished(self, request, error):
            SPAN.reset(request.scratch["token"])
            seen.append(("end", error))

    hooks = manager(Requests()).hook
    meta = trace_meta({"TraceParent": "00-abc", "x-other": "no", b"tracestate": b"k=v"})
    assert meta == {"traceparent": "00-abc", "tracestate": "k=v"}
    async with observed_request(hooks, door="mcp", transport="stdio", method="tools/call", meta=meta) as request:
        assert SPAN.get() == "request-span" and request is not None
    with pytest.raises(KeyError):
        async with observed_request(hooks, door="mcp", method="tools/call"):
            raise KeyError("boom")
    assert seen == [("start", "mcp", "tools/call", meta), ("end", None), ("start", "mcp", "tools/call", {}),
                    ("end", "KeyError: 'boom'")]
    async with observed_request(manager().hook, door="mcp") as nobody:
        assert nobody is None
    assert SPAN.get() is None


async def test_observers_see_tool_calls_the_kernel_closes():
    recorder = Recorder()

    class Agent:
        async def run(self, message, *, history=None, context=None):
            yield RunStarted(context.run_id)
            yield ToolStarted("c1", "slow", {})
            await asyncio.sleep(10)

    async with kernel_for_agent(Agent, hooks=manager(recorder).hook).run("x") as run:
        async for event in run:
            if type(event) is ToolStarted:
                run.cancel()
    assert ("tool_finished", "slow", True) in recorder.seen
