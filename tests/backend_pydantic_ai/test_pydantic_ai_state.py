"""Shared state through the pydantic-ai backend: StateDeps in, tools' changes out, kept with the thread."""

from __future__ import annotations

import importlib
import json
import sys

import pytest
from onedoor.events import RunFailed, RunFinished, StateDelta, StateSnapshot
from onedoor.state import apply_patch
from onedoor.testing import collect, kernel_for_agent
from onedoor.threads.sqlite import SQLiteThreadStore
from onedoor_backend_pydantic_ai import PydanticAIOptions, pydantic_ai_backend
from onedoor_backend_pydantic_ai.state import diff

STATE_AGENT = """
import json, os
from openai import AsyncOpenAI
from pydantic import BaseModel
from pydantic_ai import Agent, RunContext, ToolReturn
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider
from pydantic_ai.ui import StateDeps


class Todo(BaseModel):
    items: list[str] = []
    owner: str = ""


def build():
    client = AsyncOpenAI(base_url=os.environ["STATE_FAKE_URL"], api_key="k", max_retries=0)
    agent = Agent(OpenAIChatModel("fake-model", provider=OpenAIProvider(openai_client=client)), deps_type=StateDeps[Todo])

    @agent.tool
    def show(ctx: RunContext[StateDeps[Todo]]) -> str:
        '''The list.'''
        return json.dumps(ctx.deps.state.model_dump(), sort_keys=True)

    @agent.tool
    def add_item(ctx: RunContext[StateDeps[Todo]], item: str) -> str:
        '''Add an item.'''
        ctx.deps.state.items.append(item)
        return f"added {item}"

    @agent.tool_plain
    def reset(owner: str) -> ToolReturn:
        '''Start over.'''
        return ToolReturn(return_value="reset", metadata=[{"type": "STATE_SNAPSHOT", "snapshot": {"items": [], "owner": owner}}])

    @agent.tool_plain
    def rename(owner: str) -> ToolReturn:
        '''Rename the owner.'''
        delta = [{"op": "replace", "path": "/owner", "value": owner}]
        return ToolReturn(return_value="renamed", metadata=[{"type": "STATE_DELTA", "delta": delta}])

    @agent.tool
    def ag_ui_snapshot(ctx: RunContext[StateDeps[Todo]]):
        '''AG-UI's own event, as pydantic-ai's AG-UI docs return it.'''
        from ag_ui.core import EventType, StateSnapshotEvent

        ctx.deps.state.owner = "ag-ui"
        return StateSnapshotEvent(type=EventType.STATE_SNAPSHOT, snapshot=ctx.deps.state)

    @agent.tool_plain
    def ag_ui_delta():
        '''AG-UI's delta event (typed operations on ag-ui-protocol 1.x).'''
        from ag_ui.core import EventType, StateDeltaEvent

        delta = [{"op": "add", "path": "/items/-", "value": "from ag-ui"}]
        return ToolReturn(return_value="ok", metadata=[StateDeltaEvent(type=EventType.STATE_DELTA, delta=delta)])

    return agent
"""


@pytest.fixture
def kernel_of(server, tmp_path, monkeypatch):
    (tmp_path / "pa_state_agent.py").write_text(STATE_AGENT)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("STATE_FAKE_URL", server.base_url)
    monkeypatch.delitem(sys.modules, "pa_state_agent", raising=False)
    importlib.import_module("pa_state_agent")
    opts = PydanticAIOptions(agent="pa_state_agent:build")
    return lambda **kw: kernel_for_agent(lambda: pydantic_ai_backend(opts), "pydantic-ai", **kw)


def held(events):
    """The state a client holds after every state event, in order."""
    state = None
    for event in events:
        if type(event) is StateSnapshot:
            state = event.state
        elif type(event) is StateDelta:
            state = apply_patch(state, list(event.ops))
    return state


async def run_with(kernel, message, **kwargs):
    async with kernel.run(message, **kwargs) as run:
        events = [e async for e in run]
        return events, run.state


async def test_the_state_reaches_the_agents_state_deps(kernel_of, server):
    events, state = await run_with(kernel_of(), "/tool show {}", state={"items": ["milk"], "owner": "ann"})
    assert events[-1].text == 'The tool returned: {"items": ["milk"], "owner": "ann"}'
    assert [type(e) for e in events if type(e) in (StateSnapshot, StateDelta)] == [StateSnapshot]  # the kernel's first
    assert state == {"items": ["milk"], "owner": "ann"}


async def test_a_tool_changing_state_deps_sends_a_delta(kernel_of):
    events, state = await run_with(kernel_of(), '/tool add_item {"item": "eggs"}', state={"items": ["milk"]})
    assert isinstance(events[-1], RunFinished), events[-1]
    deltas = [e for e in events if type(e) is StateDelta]
    assert deltas, "the change went out as a delta"
    assert state == held(events) == {"items": ["milk", "eggs"], "owner": ""}


async def test_a_run_without_state_gets_a_snapshot_of_the_changed_deps(kernel_of):
    events, state = await run_with(kernel_of(), '/tool add_item {"item": "tea"}')
    assert [type(e) for e in events if type(e) in (StateSnapshot, StateDelta)] == [StateSnapshot]
    assert state == held(events) == {"items": ["tea"], "owner": ""}


@pytest.mark.parametrize(("message", "expected"), [
    ('/tool reset {"owner": "bo"}', {"items": [], "owner": "bo"}),
    ('/tool rename {"owner": "cy"}', {"items": ["milk"], "owner": "cy"}),
])
async def test_state_events_a_tool_returns_reach_the_kernel(kernel_of, message, expected):
    events, state = await run_with(kernel_of(), message, state={"items": ["milk"], "owner": "ann"})
    assert isinstance(events[-1], RunFinished), events[-1]
    assert state == held(events) == expected
    changes = [e for e in events if type(e) in (StateSnapshot, StateDelta)][1:]
    assert len(changes) == 1, "the event the tool sent, and no echo of the deps it updated"


async def test_ag_ui_state_events(kernel_of):
    pytest.importorskip("ag_ui.core", reason="ag-ui-protocol is not installed (the AG-UI door brings it)")
    events, state = await run_with(kernel_of(), "/tool ag_ui_snapshot {}", state={"items": ["a"]})
    assert state == held(events) == {"items": ["a"], "owner": "ag-ui"}
    events, state = await run_with(kernel_of(), "/tool ag_ui_delta {}", state={"items": ["a"]})
    assert state == held(events) == {"items": ["a", "from ag-ui"]}


async def test_a_state_that_does_not_fit_the_model_fails_clearly(kernel_of, server):
    events, _ = await run_with(kernel_of(), "/tool show {}", state={"items": "not a list"})
    assert isinstance(events[-1], RunFailed)
    assert "does not fit Todo" in events[-1].error and "items" in events[-1].error
    assert server.chat_requests() == []


async def test_the_state_is_kept_with_the_thread(kernel_of, tmp_path):
    store = SQLiteThreadStore(tmp_path / "threads.db")
    try:
        kernel = kernel_of(store=store)
        thread, _ = await kernel.threads.open("local", "todo")
        await collect(kernel, '/tool add_item {"item": "milk"}', thread=thread, state={"items": []})
        thread = await kernel.threads.get("local", "todo")
        assert thread.state == {"items": ["milk"], "owner": ""}
        events = await collect(kernel, "/tool show {}", thread=thread)
        assert json.loads(events[-1].text.removeprefix("The tool returned: ")) == {"items": ["milk"], "owner": ""}
    finally:
        await store.close()


async def test_deps_from_an_option(server, tmp_path, monkeypatch):
    (tmp_path / "pa_deps_mod.py").write_text(DEPS_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("DEPS_FAKE_URL", server.base_url)
    opts = PydanticAIOptions(agent="pa_deps_mod:build", deps="pa_deps_mod:make_deps")
    kernel = kernel_for_agent(lambda: pydantic_ai_backend(opts), "pydantic-ai")
    events, state = await run_with(kernel, "/tool where {}", state={"count": 5})
    assert events[-1].text == "The tool returned: eu-1 5"
    assert state == {"count": 6}
    with pytest.raises(ValueError, match="has no attribute"):
        PydanticAIOptions(agent="pa_deps_mod:build", deps="pa_deps_mod:nothing")


DEPS_MODULE = """
import os
from dataclasses import dataclass, field
from openai import AsyncOpenAI
from pydantic_ai import Agent, RunContext
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider


@dataclass
class Deps:
    region: str
    state: dict = field(default_factory=dict)


def make_deps():
    return Deps(region="eu-1")


def build():
    client = AsyncOpenAI(base_url=os.environ["DEPS_FAKE_URL"], api_key="k", max_retries=0)
    agent = Agent(OpenAIChatModel("fake-model", provider=OpenAIProvider(openai_client=client)), deps_type=Deps)

    @agent.tool
    def where(ctx: RunContext[Deps]) -> str:
        '''Where and how many.'''
        ctx.deps.state["count"] += 1
        return f"{ctx.deps.region} {ctx.deps.state['count'] - 1}"

    return agent
"""


@pytest.mark.parametrize(("before", "after"), [
    ({}, {"a": 1}),
    ({"a": 1, "b": {"c": [1, 2], "d": "x"}}, {"b": {"c": [1, 2, 3]}, "e/f~": None}),
    ({"n": 1}, {"n": 1.0}),
    ({"t": True}, {"t": 1}),
])
def test_diff_applies(before, after):
    ops = diff(before, after)
    assert apply_patch(before, ops) == after
    assert all(type(a) is type(b) for a, b in zip(json.loads(json.dumps(apply_patch(before, ops))).values(), after.values()))
