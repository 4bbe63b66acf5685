"""Shared state in the port: what a run starts with, how a backend changes it (sync and
async, by context call or event), what the kernel refuses, and how it is kept with the
thread (compare-and-set, rebased on a change made meanwhile, never another principal's)."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from onedoor.errors import RunRefused
from onedoor.events import RunFailed, RunFinished, RunStarted, StateDelta, StateSnapshot, TextDelta
from onedoor.limits import Limits
from onedoor.state import apply_patch
from onedoor.testing import collect, final, kernel_for_agent, scripted_kernel
from onedoor.threads import ThreadError
from onedoor.threads.sqlite import SQLiteThreadStore


def states(events):
    return [e for e in events if type(e) in (StateSnapshot, StateDelta)]


def replay(events):
    """The state a client holds after applying every state event in order."""
    held = None
    for event in states(events):
        held = event.state if type(event) is StateSnapshot else apply_patch(held, list(event.ops))
    return held


@pytest.fixture
async def store(tmp_path):
    store = SQLiteThreadStore(tmp_path / "threads.db")
    yield store
    await store.close()


async def test_a_run_without_state_has_no_state_events():
    events = await collect(scripted_kernel(), "hello")
    assert states(events) == []


async def test_a_state_sent_starts_the_stream_and_the_backend_sees_a_copy():
    seen = {}

    class Agent:
        def run(self, message, *, history=None, context=None):
            seen["state"] = context.state
            context.state["mutated"] = True  # a copy: changing it changes nothing
            yield RunStarted(context.run_id)
            yield RunFinished(context.run_id, "")

    sent = {"todo": ["milk"]}
    events = await collect(kernel_for_agent(Agent), "x", state=sent)
    assert events[1] == StateSnapshot({"todo": ["milk"]}) and sent == {"todo": ["milk"]}
    assert seen["state"] == {"todo": ["milk"], "mutated": True} and len(states(events)) == 1


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_a_backend_changes_the_state_by_context_calls_and_events(mode):
    class SyncAgent:
        def run(self, message, *, history=None, context=None):
            context.set_state({"n": 0})  # before RunStarted: allowed
            yield RunStarted(context.run_id)
            context.patch_state([{"op": "replace", "path": "/n", "value": 1}])
            yield StateDelta(({"op": "add", "path": "/items", "value": ["a"]},))
            yield TextDelta("done")
            context.patch_state([{"op": "add", "path": "/items/-", "value": "b"}])
            yield RunFinished(context.run_id, "done")

    class AsyncAgent:
        async def run(self, message, *, history=None, context=None):
            for event in SyncAgent().run(message, context=context):
                await asyncio.sleep(0)
                yield event

    kernel = kernel_for_agent(SyncAgent if mode == "sync" else AsyncAgent)
    async with kernel.run("x", state={"old": 1}) as run:
        events = [e async for e in run]
        assert run.state == {"n": 1, "items": ["a", "b"]}
    assert type(final(events)) is RunFinished
    assert replay(events) == {"n": 1, "items": ["a", "b"]}
    assert [type(e).__name__ for e in states(events)] == ["StateSnapshot", "StateSnapshot", "StateDelta", "StateDelta",
                                                          "StateDelta"]


@pytest.mark.parametrize("ops, why", [
    ([{"op": "replace", "path": "/missing", "value": 1}], "does not apply"),
    ([{"op": "test", "path": "/n", "value": 99}], "does not apply"),
    ([{"op": "remove", "path": ""}], "may not remove the whole state"),
    ([{"op": "add", "path": "/n"}], "does not apply"),  # no value
    ([{"op": "frobnicate", "path": "/n"}], "does not apply"),
    ("not a list", "list of JSON Patch operations"),
    ([{"op": "add", "path": "/big", "value": "x" * 2000}], "limit"),
    ([{"op": "add", "path": "/o", "value": object()}], "not JSON"),
])
async def test_a_change_that_does_not_apply_fails_the_run_and_leaves_the_state(ops, why, store):
    class Agent:
        def run(self, message, *, history=None, context=None):
            yield RunStarted(context.run_id)
            yield StateDelta(({"op": "add", "path": "/kept", "value": 1},))
            yield StateDelta(tuple(ops) if isinstance(ops, list) else ops)
            yield RunFinished(context.run_id, "")

    kernel = kernel_for_agent(Agent, limits=Limits(max_state_chars=1000), store=store)
    thread, _ = await kernel.threads.open("local", "t")
    async with kernel.run("x", thread=thread, state={"n": 1}) as run:
        events = [e async for e in run]
        assert run.state == {"n": 1, "kept": 1}, "the refused change left no trace"
    failed = final(events)
    assert type(failed) is RunFailed and why in failed.error, failed.error
    assert replay(events) == {"n": 1, "kept": 1}
    kept = await kernel.threads.get("local", "t")
    assert kept.state == {"n": 1, "kept": 1}, "a failed run keeps the changes its client saw applied, not the refused one"


async def test_bad_states_are_refused_before_the_run():
    kernel = scripted_kernel(Limits(max_state_chars=50))
    for bad, reason in (([1, 2], "invalid"), ({"x": "y" * 100}, "too_large"), ({"f": float("nan")}, "invalid"),
                        ({"o": object()}, "invalid"), ({"s": {1, 2}}, "invalid")):
        with pytest.raises(RunRefused) as caught:
            kernel.run("x", state=bad)
        assert caught.value.reason == reason, (bad, caught.value)
    assert kernel.active_runs == 0


async def test_the_state_is_kept_with_the_thread_and_starts_the_next_run(store):
    kernel = scripted_kernel(store=store)
    thread, _ = await kernel.threads.open("local", "todo")
    events = await collect(kernel, '/state {"todo": []} /state [{"op": "add", "path": "/todo/-", "value": "milk"}] go',
                           thread=thread)
    assert final(events).text.endswith('State: {"todo":["milk"]}')
    thread = await kernel.threads.get("local", "todo")
    assert (thread.state, thread.state_version) == ({"todo": ["milk"]}, 1)
    events = await collect(kernel, "again", thread=thread)
    assert events[1] == StateSnapshot({"todo": ["milk"]}), "a thread's state starts its next run"
    assert (await kernel.threads.get("local", "todo")).state_version == 1, "an unchanged state is not written"


async def test_a_client_state_is_kept_and_a_stale_version_is_refused(store):
    kernel = scripted_kernel(store=store)
    thread, _ = await kernel.threads.open("local", "t")
    await collect(kernel, "one", thread=thread, state={"draft": "v1"}, state_version=0)
    thread = await kernel.threads.get("local", "t")
    assert (thread.state, thread.state_version) == ({"draft": "v1"}, 1)
    with pytest.raises(RunRefused) as caught:
        kernel.run("two", thread=thread, state={"draft": "stale"}, state_version=0)
    assert caught.value.reason == "state_conflict" and "now at version 1" in str(caught.value)
    assert (await kernel.threads.get("local", "t")).state == {"draft": "v1"}


async def test_a_change_made_meanwhile_is_kept_and_the_runs_changes_go_on_top(store):
    release = asyncio.Event()

    class Agent:
        async def run(self, message, *, history=None, context=None):
            yield RunStarted(context.run_id)
            context.patch_state([{"op": "add", "path": "/by_agent", "value": 1}])
            await release.wait()
            yield RunFinished(context.run_id, "")

    kernel = kernel_for_agent(Agent, store=store)
    thread, _ = await kernel.threads.open("local", "t")
    await kernel.threads.set_state("local", "t", {"a": 0})
    thread = await kernel.threads.get("local", "t")
    async with kernel.run("x", thread=thread) as run:
        iterator = aiter(run)
        while not (run.state or {}).get("by_agent"):
            await anext(iterator)
        await kernel.threads.patch_state("local", "t", [{"op": "add", "path": "/by_client", "value": 2}])
        release.set()
        rest = [e async for e in iterator]
    assert type(rest[-1]) is RunFinished
    kept = await kernel.threads.get("local", "t")
    assert kept.state == {"a": 0, "by_client": 2, "by_agent": 1} and kept.state_version == 3


async def test_when_the_runs_changes_no_longer_apply_the_run_says_so(store):
    release = asyncio.Event()

    class Agent:
        async def run(self, message, *, history=None, context=None):
            yield RunStarted(context.run_id)
            context.patch_state([{"op": "replace", "path": "/a", "value": "agent"}])
            await release.wait()
            yield TextDelta("replied")
            yield RunFinished(context.run_id, "replied")

    kernel = kernel_for_agent(Agent, store=store)
    await kernel.threads.open("local", "t")
    await kernel.threads.set_state("local", "t", {"a": 0})
    async with kernel.run("x", thread=await kernel.threads.get("local", "t")) as run:
        iterator = aiter(run)
        while (run.state or {}).get("a") != "agent":
            await anext(iterator)
        await kernel.threads.set_state("local", "t", {"b": 1})  # /a is gone
        release.set()
        rest = [e async for e in iterator]
    assert type(rest[-1]) is RunFailed and "no longer apply" in rest[-1].error
    assert rest[-1].error.startswith("the run's state changes could not be kept in thread 't'")
    kept = await kernel.threads.get("local", "t")
    assert kept.state == {"b": 1}, "the other client's state stays"
    assert kept.messages[-1].content == "replied", "the turn is kept"


async def test_the_desk_changes_state_between_runs(store):
    kernel = scripted_kernel(Limits(max_state_chars=100), store=store)
    await kernel.threads.open("local", "t")
    kept = await kernel.threads.patch_state("local", "t", [{"op": "add", "path": "/x", "value": 1}])
    assert (kept.state, kept.state_version) == ({"x": 1}, 1)
    assert await kernel.threads.state("local", "t") == ({"x": 1}, 1)
    for call, reason in (
        (kernel.threads.patch_state("local", "t", [{"op": "remove", "path": "/nope"}]), "invalid"),
        (kernel.threads.patch_state("local", "t", [{"op": "test", "path": "/x", "value": 2}]), "invalid"),
        (kernel.threads.patch_state("local", "t", {"op": "add"}), "invalid"),
        (kernel.threads.set_state("local", "t", {"x": "y" * 200}), "too_large"),
        (kernel.threads.patch_state("local", "t", [{"op": "add", "path": "/y", "value": "z" * 200}]), "too_large"),
        (kernel.threads.set_state("local", "t", {"x": 2}, expected_version=0), "stale"),
        (kernel.threads.set_state("bob", "t", {"x": 2}), "not_found"),
        (kernel.threads.state("bob", "t"), "not_found"),
        (kernel.threads.patch_state("local", "../t", []), "invalid"),
    ):
        with pytest.raises(ThreadError) as caught:
            await call
        assert caught.value.reason == reason, (reason, caught.value)
    assert await kernel.threads.state("local", "t") == ({"x": 1}, 1), "every refusal left the state as it was"
    kept = await kernel.threads.set_state("local", "t", {"x": 2}, expected_version=1)
    assert kept.state_version == 2


async def test_another_principal_cannot_start_from_or_change_a_threads_state(store):
    kernel = scripted_kernel(store=store)
    thread, _ = await kernel.threads.open("alice", "t")
    await kernel.threads.set_state("alice", "t", {"secret": 1})
    with pytest.raises(RunRefused):
        kernel.run("x", thread=await kernel.threads.get("alice", "t"), principal="bob")
    with pytest.raises(ThreadError):
        await kernel.threads.patch_state("bob", "t", [{"op": "add", "path": "/x", "value": 1}])
    assert (await kernel.threads.get("alice", "t")).state == {"secret": 1}


async def test_two_writers_of_one_version_one_wins_the_other_is_told(store):
    kernel = scripted_kernel(store=store)
    await kernel.threads.open("local", "t")
    results = await asyncio.gather(
        *(kernel.threads.set_state("local", "t", {"by": n}, expected_version=0) for n in range(6)),
        return_exceptions=True,
    )
    won = [r for r in results if not isinstance(r, BaseException)]
    assert len(won) == 1 and all(isinstance(r, ThreadError) and r.reason in ("stale", "conflict")
                                 for r in results if r not in won)
    # without a version every patch lands: none is lost
    await asyncio.gather(*(kernel.threads.patch_state("local", "t", [{"op": "add", "path": f"/k{n}", "value": n}])
                           for n in range(6)))
    state, version = await kernel.threads.state("local", "t")
    assert {f"k{n}" for n in range(6)} <= set(state) and version == 7


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=3),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text("ab", max_size=2), inner, max_size=3),
    max_leaves=6,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from(["add", "replace", "remove"]), st.text("abc", min_size=1, max_size=2),
                          json_values), max_size=12))
def test_the_state_a_client_replays_is_the_kernels(ops):
    """Random changes, some of which do not apply: a client applying the stream's events ends
    with the kernel's state, and the run fails exactly when a change did not apply."""

    class Agent:
        def run(self, message, *, history=None, context=None):
            yield RunStarted(context.run_id)
            for op, key, value in ops:
                change = {"op": op, "path": f"/{key}"}
                if op != "remove":
                    change["value"] = value
                yield StateDelta((change,))
            yield RunFinished(context.run_id, "")

    async def go():
        async with kernel_for_agent(Agent).run("x", state={}) as run:
            events = [e async for e in run]
            return events, run.state

    events, kernel_state = asyncio.run(go())
    assert replay(events) == kernel_state
    model, applies = {}, True
    for op, key, value in ops:
        if op in ("replace", "remove") and key not in model:
            applies = False
            break
        if op == "remove":
            del model[key]
        else:
            model[key] = value
    assert (type(final(events)) is RunFinished) == applies
    if applies:
        assert kernel_state == model


paths = st.lists(st.sampled_from(["a", "b", "0", "1", "-"]), min_size=1, max_size=3).map(lambda p: "/" + "/".join(p))
ops_strategy = st.lists(
    st.one_of(
        st.builds(lambda p, v: {"op": "add", "path": p, "value": v}, paths, json_values),
        st.builds(lambda p, v: {"op": "replace", "path": p, "value": v}, paths, json_values),
        st.builds(lambda p: {"op": "remove", "path": p}, paths),
        st.builds(lambda f, p: {"op": "move", "from": f, "path": p}, paths, paths),
        st.builds(lambda f, p: {"op": "copy", "from": f, "path": p}, paths, paths),
        st.builds(lambda p, v: {"op": "test", "path": p, "value": v}, paths, json_values),
    ),
    max_size=6,
)
documents = st.dictionaries(st.sampled_from(["a", "b", "c"]), json_values | st.lists(json_values, max_size=3)
                            | st.dictionaries(st.sampled_from(["a", "b", "0"]), json_values, max_size=3), max_size=3)


@settings(max_examples=600, deadline=None)
@given(documents, st.lists(ops_strategy, min_size=1, max_size=4))
def test_patches_share_what_they_leave_and_never_change_an_older_document(doc, patches):
    """The kernel's patching copies only the containers a patch changes: every document
    it made before stays exactly as it was, and each result equals jsonpatch's own
    (deep-copying) result, applying or refusing alike."""
    import copy as copying

    import jsonpatch

    history = [(doc, copying.deepcopy(doc))]
    current = doc
    for ops in patches:
        try:
            expected = jsonpatch.apply_patch(copying.deepcopy(current), ops, in_place=False)
            expected_error = None
        except Exception as exc:  # noqa: BLE001 - what the reference refuses, the kernel refuses
            expected, expected_error = None, exc
        try:
            result = apply_patch(current, ops)
        except ValueError:
            assert expected_error is not None or not isinstance(expected, dict), ops
        else:
            assert expected_error is None and result == expected, (current, ops)
            current = result
            history.append((result, copying.deepcopy(result)))
        for made, as_made in history:
            assert made == as_made, "a document made earlier was changed in place"
