"""Issues 26 and 27 for ACP: shared state stays with the thread (ACP has no place to show
it) and never breaks a turn; usage in the prompt response and ``usage_update``; every
message the door serves is observed, its ``_meta`` trace context passed to the run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pluggy
import pytest
from acp import RequestError, text_block
from acp_harness import DoorHarness  # type: ignore[import-not-found]
from onedoor import hookspecs
from onedoor.events import RunFinished, RunStarted, TextDelta, UsageReported
from onedoor.hookspecs import hookimpl
from onedoor.testing import kernel_for_agent, scripted_kernel
from onedoor.threads.sqlite import SQLiteThreadStore
from onedoor.usage import ModelUsage

pytestmark = pytest.mark.timeout(60)
TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


@pytest.fixture(params=["threads", "door-kept"])
async def store(request: pytest.FixtureRequest, data_dir: Path) -> Any:
    """Sessions as threads of a store, and kept by the door itself (a kernel without a store)."""
    store = SQLiteThreadStore(data_dir / "threads.sqlite3") if request.param == "threads" else None
    yield store
    if store is not None:
        await store.close()


# -- state (#26) ------------------------------------------------------------------------------------
async def test_state_stays_with_the_thread_and_never_breaks_a_turn(data_dir: Path, store: Any) -> None:
    kernel = scripted_kernel(tool=False, reasoning=False, store=store)
    async with DoorHarness(kernel, data_dir) as door:
        sid = await door.new_session()
        change = '/state {"todo": ["milk"]} /state [{"op": "add", "path": "/todo/-", "value": "eggs"}] shop'
        response = await door.prompt(sid, change)
        assert response.stop_reason == "end_turn"
        assert door.recorder.text() == 'You said: shop State: {"todo":["milk","eggs"]}'
        assert set(door.recorder.kinds(sid)) == {"available_commands_update", "agent_message_chunk"}
        door.recorder.updates.clear()
        await door.prompt(sid, "again")
        if store is not None:  # the kernel kept the state with the thread: the next run starts from it
            assert door.recorder.text() == 'You said: again State: {"todo":["milk","eggs"]}'
            state, version = await kernel.threads.state("local", sid)
            assert state == {"todo": ["milk", "eggs"]} and version >= 1
        else:  # no thread, no state between turns
            assert door.recorder.text() == "You said: again"
        # a change that does not apply fails the run (a JSON-RPC error); the door serves on
        with pytest.raises(RequestError) as failed:
            await door.prompt(sid, '/state [{"op": "replace", "path": "/missing", "value": 1}] x')
        assert failed.value.code == -32603 and "state change was refused" in str(failed.value)
        door.recorder.updates.clear()
        assert (await door.prompt(sid, "fine")).stop_reason == "end_turn"
        if store is not None:
            assert (await kernel.threads.state("local", sid))[0] == {"todo": ["milk", "eggs"]}


# -- usage (#27) ------------------------------------------------------------------------------------
class CostlyAgent:
    """Reports usage of two models: one as it goes, one on its terminal event."""

    async def run(self, message: str, *, history: Any = None, context: Any = None) -> Any:
        yield RunStarted(context.run_id)
        yield TextDelta("ok")
        yield UsageReported((ModelUsage("big", "acme", 100, 10, cache_read_tokens=30, cache_write_tokens=7,
                                        reasoning_tokens=4, requests=1, cost=0.25, currency="USD"),))
        yield RunFinished(context.run_id, "ok", usage=(ModelUsage("small", "acme", 50, 5, requests=1, cost=0.5,
                                                                  currency="USD"),))


async def test_usage_in_the_prompt_response_and_usage_update(data_dir: Path, store: Any) -> None:
    kernel = kernel_for_agent(CostlyAgent, store=store)
    async with DoorHarness(kernel, data_dir, context_window=8000) as door:
        sid = await door.new_session()
        for turn, cost in ((1, 0.75), (2, 1.5)):
            door.recorder.updates.clear()
            response = await door.prompt(sid, f"turn {turn}")
            usage = response.usage.model_dump(by_alias=True, exclude_none=True)
            assert usage == {"totalTokens": 165, "inputTokens": 150, "outputTokens": 15, "thoughtTokens": 4,
                             "cachedReadTokens": 30, "cachedWriteTokens": 7}
            per_model = response.field_meta["onedoor.dev/usage"]
            assert [(u["model"], u["input_tokens"], u["cost"]) for u in per_model] == [("big", 100, 0.25), ("small", 50, 0.5)]
            updates = [u for _, u in door.recorder.updates if u["sessionUpdate"] == "usage_update"]
            # the session's cost so far: both turns' after the second
            assert updates == [{"sessionUpdate": "usage_update", "used": 165, "size": 8000,
                                "cost": {"amount": cost, "currency": "USD"}}]


async def test_no_usage_update_without_a_known_context_window(data_dir: Path) -> None:
    async with DoorHarness(scripted_kernel(), data_dir) as door:
        sid = await door.new_session()
        response = await door.prompt(sid, "hello there")
        assert response.usage.input_tokens == 2 and response.usage.output_tokens > 0
        assert "usage_update" not in door.recorder.kinds(sid)
    async with DoorHarness(scripted_kernel(usage=False), data_dir, context_window=100) as door:
        sid = await door.new_session()
        response = await door.prompt(sid, "hello there")
        assert response.usage is None and response.field_meta is None, "a backend that reports none: no usage"
        assert "usage_update" not in door.recorder.kinds(sid)


def test_context_window_option_is_checked() -> None:
    from onedoor_door_acp.door import AcpOptions

    with pytest.raises(ValueError, match="context_window"):
        AcpOptions(context_window=-1)


# -- observed requests (#27) -------------------------------------------------------------------------
class Observer:
    def __init__(self) -> None:
        self.requests: list[tuple[Any, ...]] = []
        self.runs: list[Any] = []

    @hookimpl
    def onedoor_request_started(self, request: Any) -> None:
        self.requests.append(("start", request.door, request.transport, request.method, dict(request.meta)))

    @hookimpl
    def onedoor_request_finished(self, request: Any, error: Any) -> None:
        self.requests.append(("end", request.method, error))

    @hookimpl
    def onedoor_run_started(self, run: Any) -> None:
        self.runs.append(run)


async def test_each_message_is_observed_and_its_trace_context_reaches_the_run(data_dir: Path) -> None:
    observer = Observer()
    manager = pluggy.PluginManager("onedoor")
    manager.add_hookspecs(hookspecs)
    manager.register(observer)
    async with DoorHarness(scripted_kernel(hooks=manager.hook), data_dir) as door:
        sid = await door.new_session()
        await door.conn.prompt(session_id=sid, prompt=[text_block("traced")], traceparent=TRACEPARENT,
                               tracestate="k=v", other="not trace context")
        await door.prompt(sid, "untraced")
        with pytest.raises(RequestError):
            await door.conn.prompt(session_id="t-000000000000000000000000", prompt=[text_block("x")])
    starts = [r for r in observer.requests if r[0] == "start"]
    assert [r[3] for r in starts] == ["initialize", "session/new", "session/prompt", "session/prompt", "session/prompt"]
    assert {r[1:3] for r in starts} == {("acp", "memory")}
    assert starts[2][4] == {"traceparent": TRACEPARENT, "tracestate": "k=v"}
    assert starts[3][4] == {}
    ends = [r for r in observer.requests if r[0] == "end"]
    assert [e[2] is None for e in ends] == [True, True, True, True, False]
    assert "unknown session" in ends[-1][2]
    assert [run.meta for run in observer.runs] == [{"traceparent": TRACEPARENT, "tracestate": "k=v"}, {}]
    assert json.dumps([run.door for run in observer.runs]) == '["acp", "acp"]'
