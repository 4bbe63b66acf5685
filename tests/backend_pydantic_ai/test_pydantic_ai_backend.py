"""The pydantic-ai backend through the kernel, against the fake OpenAI-compatible server."""

from __future__ import annotations

import asyncio

import pytest
from onedoor.events import (
    ReasoningDelta,
    RunFailed,
    RunFinished,
    TextDelta,
    ToolFinished,
    ToolStarted,
)
from onedoor.port import ToolSpec
from onedoor.testing import check_backend, collect, kernel_for_agent
from onedoor_backend_pydantic_ai import PydanticAIOptions, pydantic_ai_backend

ADD = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]}


def make_kernel(server, **extra):
    opts = PydanticAIOptions(model="fake-model", base_url=server.base_url, api_key="sk-test", retries=0, **extra)
    return kernel_for_agent(lambda: pydantic_ai_backend(opts), "pydantic-ai")


def texts(events, kind=TextDelta):
    return [e.text for e in events if type(e) is kind]


async def test_streamed_reply(server):
    events = await collect(make_kernel(server), "hello there")
    deltas = texts(events)
    assert len(deltas) > 3, "the reply should arrive in several deltas"
    assert isinstance(events[-1], RunFinished) and events[-1].run_id == events[0].run_id
    assert (events[-1].text, events[-1].stop_reason) == ("You said: hello there (turn 1)", "end_turn")
    [request] = server.chat_requests()
    assert request.body["stream"] is True and request.completed
    assert request.headers["authorization"] == "Bearer sk-test"


async def test_reasoning_is_streamed(server):
    events = await collect(make_kernel(server), "/think hi")
    reasoning = "".join(texts(events, ReasoningDelta))
    assert reasoning == "The user wrote 1 words; I should answer briefly."
    first_text = next(i for i, e in enumerate(events) if type(e) is TextDelta)
    assert all(i < first_text for i, e in enumerate(events) if type(e) is ReasoningDelta)
    assert events[-1].text == "You said: hi (turn 1)"


async def test_server_tool_call_and_result(server):
    calls = []

    async def add(arguments):
        calls.append(arguments)
        return {"sum": arguments["a"] + arguments["b"]}

    tool = ToolSpec("add", "add two numbers", ADD, client=False, handler=add)
    events = await collect(make_kernel(server), '/tool add {"a": 2, "b": 3}', tools=[tool])
    started = [e for e in events if isinstance(e, ToolStarted)]
    finished = [e for e in events if isinstance(e, ToolFinished)]
    assert calls == [{"a": 2, "b": 3}]
    assert [(s.name, s.arguments) for s in started] == [("add", {"a": 2, "b": 3})]
    assert [(f.call_id, f.result, f.is_error) for f in finished] == [(started[0].call_id, {"sum": 5}, False)]
    assert started[0].call_id.startswith("call_")
    assert events[-1].text == 'The tool returned: {"sum":5}'
    first, second = server.chat_requests()
    assert [t["function"]["name"] for t in first.body["tools"]] == ["add"]
    assert second.messages[-1]["role"] == "tool" and second.messages[-1]["tool_call_id"] == started[0].call_id


async def test_failing_server_tool_is_an_error_result(server):
    async def broken(arguments):
        raise RuntimeError("disk on fire")

    tool = ToolSpec("add", "add", ADD, client=False, handler=broken)
    events = await collect(make_kernel(server), '/tool add {"a": 1, "b": 1}', tools=[tool])
    assert isinstance(events[-1], (RunFinished, RunFailed))
    # either pydantic-ai reports the failure to the model, or the run fails: never a silent success
    finished = [e for e in events if isinstance(e, ToolFinished)]
    if isinstance(events[-1], RunFinished):
        assert finished and finished[0].is_error
    else:
        assert "disk on fire" in events[-1].error


async def test_client_tool_ends_the_run_pending_then_resumes(server):
    tool = ToolSpec("pick_color", "ask the user for a colour", {"type": "object", "properties": {"q": {"type": "string"}}})
    kernel = make_kernel(server)
    events = await collect(kernel, '/tool pick_color {"q": "which?"}', tools=[tool])
    assert isinstance(events[-1], RunFinished) and events[-1].stop_reason == "pending_tools"
    [call] = [e for e in events if isinstance(e, ToolStarted)]
    assert call.name == "pick_color" and call.arguments == {"q": "which?"}
    assert not [e for e in events if isinstance(e, ToolFinished)]
    history = [
        {"role": "user", "content": '/tool pick_color {"q": "which?"}'},
        {"role": "assistant", "content": "", "tool_calls": [{"id": call.call_id, "name": "pick_color", "arguments": call.arguments}]},
        {"role": "tool", "content": "teal", "tool_call_id": call.call_id},
    ]
    events = await collect(kernel, "", history=history, tools=[tool])  # continue after the tool result
    assert events[-1].stop_reason == "end_turn" and events[-1].text == "The tool returned: teal"
    sent = server.chat_requests()[-1].messages
    assert sent[-1] == {"role": "tool", "content": "teal", "tool_call_id": call.call_id}
    events = await collect(kernel, "go on", history=history, tools=[tool])  # or with a new message
    assert events[-1].text == "You said: go on (turn 2)"


async def test_provider_error_is_run_failed_with_the_message(server):
    events = await collect(make_kernel(server), "/error 400 quota gone")
    assert isinstance(events[-1], RunFailed)
    assert "HTTP 400" in events[-1].error and "quota gone" in events[-1].error
    assert "sk-test" not in events[-1].error


async def test_server_error_after_retries(server):
    opts = PydanticAIOptions(model="fake-model", base_url=server.base_url, api_key="k", retries=1)
    kernel = kernel_for_agent(lambda: pydantic_ai_backend(opts), "pydantic-ai")
    events = await collect(kernel, "/error 503 overloaded")
    assert isinstance(events[-1], RunFailed) and "503" in events[-1].error
    assert len(server.chat_requests()) == 2  # one retry, as configured


async def test_cancel_mid_stream_closes_the_model_request(server):
    kernel = make_kernel(server)
    async with kernel.run("/hang tell me a story") as run:
        async for event in run:
            if isinstance(event, TextDelta):
                run.cancel()
    assert run.outcome == RunFinished(run.run_id, "You ", "cancelled")
    [request] = server.chat_requests()
    assert await asyncio.to_thread(server.wait_for, lambda: request.disconnected, 10)
    assert not request.completed


async def test_consumer_leaving_closes_the_model_request(server):
    kernel = make_kernel(server)
    async with kernel.run("/hang story") as run:
        async for event in run:
            if isinstance(event, TextDelta):
                break  # leaving the block cancels
    assert await asyncio.to_thread(server.wait_for, lambda: server.chat_requests()[0].disconnected, 10)


async def test_history_round_trip_over_two_turns(server):
    kernel = make_kernel(server)
    first = await collect(kernel, "hello")
    reply = first[-1].text
    assert reply == "You said: hello (turn 1)"
    history = [{"role": "user", "content": "hello"}, {"role": "assistant", "content": reply}]
    second = await collect(kernel, "again", history=history)
    assert second[-1].text == "You said: again (turn 2)"
    assert server.chat_requests()[-1].messages == [
        {"role": "user", "content": "hello"},
        {"role": "assistant", "content": reply},
        {"role": "user", "content": "again"},
    ]


async def test_system_history_and_instructions_reach_the_model(server):
    kernel = make_kernel(server, instructions="Be terse.")
    await collect(kernel, "hi", history=[{"role": "system", "content": "You are a test."}])
    sent = server.chat_requests()[-1].messages
    systems = [m["content"] for m in sent if m["role"] == "system"]
    assert "You are a test." in systems and any("Be terse." in s for s in systems)


@pytest.mark.parametrize("message", ["hello", "/think why", "/long 50 x"])
def test_contract_checker(server, message):
    opts = PydanticAIOptions(model="fake-model", base_url=server.base_url, api_key="k", retries=0)
    report = check_backend(lambda: pydantic_ai_backend(opts), message)
    assert report.ok, report.problems
    assert isinstance(report.outcome, RunFinished)


def test_contract_checker_with_tools(server):
    async def add(arguments):
        return arguments["a"] + arguments["b"]

    opts = PydanticAIOptions(model="fake-model", base_url=server.base_url, api_key="k", retries=0)
    server_tool = ToolSpec("add", "add", ADD, client=False, handler=add)
    report = check_backend(lambda: pydantic_ai_backend(opts), '/tool add {"a": 1, "b": 2}', tools=[server_tool])
    assert report.ok, report.problems
    client_tool = ToolSpec("ask", "ask", {"type": "object"})
    report = check_backend(lambda: pydantic_ai_backend(opts), '/tool ask {}', tools=[client_tool])
    assert report.ok, report.problems
    assert report.outcome.stop_reason == "pending_tools"


def test_contract_checker_on_failure(server):
    opts = PydanticAIOptions(model="fake-model", base_url=server.base_url, api_key="k", retries=0)
    report = check_backend(lambda: pydantic_ai_backend(opts), "/error 500 nope")
    assert report.ok, report.problems
    assert isinstance(report.outcome, RunFailed)


async def test_two_concurrent_runs_do_not_mix(server):
    kernel = make_kernel(server)
    a, b = await asyncio.gather(collect(kernel, "/slow 0.01 alpha one"), collect(kernel, "/slow 0.01 beta two"))
    assert a[-1].text == "".join(texts(a)) == "You said: alpha one (turn 1)"
    assert b[-1].text == "".join(texts(b)) == "You said: beta two (turn 1)"


async def test_plain_model_string_uses_pydantic_ais_own_provider(server, monkeypatch):
    """`-o model=openai:NAME` without base_url: pydantic-ai builds the provider (here via OPENAI_BASE_URL)."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    opts = PydanticAIOptions(model="openai-chat:fake-model")
    kernel = kernel_for_agent(lambda: pydantic_ai_backend(opts), "pydantic-ai")
    events = await collect(kernel, "hi")
    assert events[-1].text == "You said: hi (turn 1)"
    async with kernel.run("/slow 0.05 /long 400") as run:
        async for event in run:
            if isinstance(event, TextDelta):
                run.cancel()
    assert run.outcome.stop_reason == "cancelled"
    request = server.chat_requests()[-1]
    assert await asyncio.to_thread(server.wait_for, lambda: request.disconnected, 15)
    assert request.headers["authorization"] == "Bearer sk-env"


APPROVAL_AGENT = """
import os
from openai import AsyncOpenAI
from pydantic_ai import Agent
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

deleted = []
agent = Agent(OpenAIChatModel("fake-model", provider=OpenAIProvider(
    openai_client=AsyncOpenAI(base_url=os.environ["APPROVAL_FAKE_URL"], api_key="k", max_retries=0))))

@agent.tool_plain(requires_approval=True)
def delete_file(path: str) -> str:
    '''Delete a file.'''
    deleted.append(path)
    return f"deleted {path}"
"""


@pytest.mark.parametrize("answer", [True, False, None])
async def test_tools_that_need_approval_ask_the_door(server, tmp_path, monkeypatch, answer):
    (tmp_path / "pa_approval_agent.py").write_text(APPROVAL_AGENT)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("APPROVAL_FAKE_URL", server.base_url)
    import importlib
    import sys

    monkeypatch.delitem(sys.modules, "pa_approval_agent", raising=False)  # a fresh agent for this server
    module = importlib.import_module("pa_approval_agent")
    module.deleted.clear()
    asked = []

    async def approver(call_id, name, arguments):
        asked.append((call_id, name, arguments))
        return answer

    opts = PydanticAIOptions(agent="pa_approval_agent:agent")
    kernel = kernel_for_agent(lambda: pydantic_ai_backend(opts), "pydantic-ai")
    kwargs = {"approver": approver} if answer is not None else {}
    events = await collect(kernel, '/tool delete_file {"path": "notes.txt"}', **kwargs)
    assert isinstance(events[-1], RunFinished) and events[-1].stop_reason == "end_turn"
    [started] = [e for e in events if isinstance(e, ToolStarted)]
    [finished] = [e for e in events if isinstance(e, ToolFinished)]
    assert asked == ([] if answer is None else [(started.call_id, "delete_file", {"path": "notes.txt"})])
    assert module.deleted == (["notes.txt"] if answer else [])
    assert finished.is_error is (not answer)
    assert events[-1].text.startswith("The tool returned: ")
