"""The hermes backend (a real hermes-agent AIAgent) through the kernel, against the fake server."""

from __future__ import annotations

import asyncio
import json
import logging

import pytest
from onedoor.events import ReasoningDelta, RunFailed, RunFinished, TextDelta, ToolFinished, ToolStarted
from onedoor.testing import check_backend, collect, kernel_for_agent
from onedoor_backend_hermes import HermesOptions, hermes_backend

TODO = '/tool todo {"todos": [{"id": "1", "content": "buy milk", "status": "pending"}]}'


def options(server, home, **extra):
    return HermesOptions(model="fake-model", base_url=server.base_url, api_key="sk-test", home=home, **extra)


def make_kernel(server, home, **extra):
    opts = options(server, home, **extra)
    return kernel_for_agent(lambda: hermes_backend(opts), "hermes")


def texts(events, kind=TextDelta):
    return [e.text for e in events if type(e) is kind]


async def test_streamed_reply(server, hermes_home):
    events = await collect(make_kernel(server, hermes_home), "hello there")
    assert len(texts(events)) > 3
    assert isinstance(events[-1], RunFinished) and events[-1].run_id == events[0].run_id
    assert (events[-1].text, events[-1].stop_reason) == ("You said: hello there (turn 1)", "end_turn")
    [request] = server.chat_requests()
    assert request.body["stream"] is True and request.body["model"] == "fake-model"
    assert request.headers["authorization"] == "Bearer sk-test"
    assert "tools" not in request.body or not request.body["tools"], "no toolsets by default"


async def test_reasoning(server, hermes_home):
    events = await collect(make_kernel(server, hermes_home), "/think hi")
    assert "".join(texts(events, ReasoningDelta)) == "The user wrote 1 words; I should answer briefly."
    assert events[-1].text == "You said: hi (turn 1)"


async def test_tool_call_with_its_result(server, hermes_home):
    events = await collect(make_kernel(server, hermes_home, toolsets=["todo"]), TODO)
    started = [e for e in events if isinstance(e, ToolStarted)]
    finished = [e for e in events if isinstance(e, ToolFinished)]
    assert [(s.name, s.arguments) for s in started] == [
        ("todo", {"todos": [{"id": "1", "content": "buy milk", "status": "pending"}]})
    ]
    assert len(finished) == 1 and finished[0].call_id == started[0].call_id and not finished[0].is_error
    assert finished[0].result["summary"]["pending"] == 1
    reply = events[-1].text
    assert reply.startswith("The tool returned: "), "no spurious leading newlines after the tool call"
    assert reply == "".join(texts(events))
    [tools] = {tuple(t["function"]["name"] for t in r.body.get("tools") or ()) for r in server.chat_requests()}
    assert tools == ("todo",), "only the allowed toolset is offered"


async def test_provider_error_is_run_failed(server, hermes_home):
    events = await collect(make_kernel(server, hermes_home), "/error 400 quota gone")
    assert isinstance(events[-1], RunFailed)
    assert "400" in events[-1].error and "quota gone" in events[-1].error
    assert "sk-test" not in events[-1].error


async def test_cancel_mid_stream_interrupts_and_closes_the_request(server, hermes_home):
    kernel = make_kernel(server, hermes_home)
    async with kernel.run("/slow 0.05 /long 400") as run:
        async for event in run:
            if isinstance(event, TextDelta):
                run.cancel()
    assert isinstance(run.outcome, RunFinished) and run.outcome.stop_reason == "cancelled"
    assert run.outcome.text.startswith("w0 ")
    [request] = server.chat_requests()
    assert await asyncio.to_thread(server.wait_for, lambda: request.disconnected, 15)
    assert not request.completed and request.chunks_sent < 400
    for thread in kernel.worker_threads():  # the worker ends once hermes has returned
        await asyncio.to_thread(thread.join, 15)
    assert not kernel.worker_threads()


async def test_history_round_trip_over_two_turns(server, hermes_home):
    kernel = make_kernel(server, hermes_home)
    first = await collect(kernel, "hello")
    reply = first[-1].text
    assert reply == "You said: hello (turn 1)"
    history = [{"role": "user", "content": "hello"}, {"role": "assistant", "content": reply}]
    second = await collect(kernel, "again", history=history)
    assert second[-1].text == "You said: again (turn 2)"
    sent = [(m["role"], m["content"]) for m in server.chat_requests()[-1].messages if m["role"] != "system"]
    assert sent == [("user", "hello"), ("assistant", reply), ("user", "again")]


async def test_history_with_tool_calls_is_passed_on(server, hermes_home):
    history = [
        {"role": "user", "content": "list"},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "call_hist_1", "name": "todo", "arguments": {}}]},
        {"role": "tool", "content": "[]", "tool_call_id": "call_hist_1"},
        {"role": "assistant", "content": "Nothing to do."},
    ]
    events = await collect(make_kernel(server, hermes_home), "thanks", history=history)
    assert events[-1].text == "You said: thanks (turn 2)"
    sent = server.chat_requests()[-1].messages
    calls = [m for m in sent if m.get("tool_calls")]
    assert calls and calls[0]["tool_calls"][0]["id"] == "call_hist_1"
    assert any(m["role"] == "tool" and m.get("tool_call_id") == "call_hist_1" for m in sent)


async def test_two_concurrent_runs_do_not_mix(server, hermes_home):
    kernel = make_kernel(server, hermes_home)
    a, b = await asyncio.gather(collect(kernel, "/slow 0.01 alpha one"), collect(kernel, "/slow 0.01 beta two"))
    assert a[-1].text == "".join(texts(a)) == "You said: alpha one (turn 1)"
    assert b[-1].text == "".join(texts(b)) == "You said: beta two (turn 1)"


async def test_root_logger_level_is_unchanged(server, hermes_home):
    root = logging.getLogger()
    before_level, before_handlers = root.level, list(root.handlers)
    httpx_level = logging.getLogger("httpx").level
    await collect(make_kernel(server, hermes_home), "hi")
    assert root.level == before_level
    assert list(root.handlers) == before_handlers
    assert logging.getLogger("httpx").level == httpx_level


@pytest.mark.parametrize("message", ["hello", "/think why", "/error 400 x"])
def test_contract_checker(server, hermes_home, message):
    opts = options(server, hermes_home)
    report = check_backend(lambda: hermes_backend(opts), message)
    assert report.ok, report.problems


def test_contract_checker_with_a_tool(server, hermes_home):
    opts = options(server, hermes_home, toolsets=["todo"])
    report = check_backend(lambda: hermes_backend(opts), TODO)
    assert report.ok, report.problems
    assert any(isinstance(e, ToolFinished) for e in report.events)


async def test_max_iterations_is_max_turns(server, hermes_home):
    events = await collect(make_kernel(server, hermes_home, toolsets=["todo"], max_iterations=1), '/tool todo {"todos": []}')
    assert isinstance(events[-1], RunFinished) and events[-1].stop_reason == "max_turns"
    assert [type(e).__name__ for e in events if isinstance(e, (ToolStarted, ToolFinished))] == ["ToolStarted", "ToolFinished"]


def _rm_message(victim) -> str:
    return "/tool terminal " + json.dumps({"command": f"rm -rf {victim}"})


@pytest.mark.parametrize("answer", [True, False, None])
async def test_dangerous_command_asks_the_door(server, hermes_home, tmp_path, answer):
    """hermes' approval prompt goes to the door (kernel approver); no approver means no."""
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "file").write_text("keep me unless approved")
    asked = []

    async def approver(call_id, name, arguments):
        asked.append((call_id, name, arguments))
        return answer

    kernel = make_kernel(server, hermes_home, toolsets=["terminal"], allow_machine_tools=True)
    kwargs = {"approver": approver} if answer is not None else {}
    events = await collect(kernel, _rm_message(victim), **kwargs)
    assert isinstance(events[-1], RunFinished)
    [started] = [e for e in events if isinstance(e, ToolStarted)]
    [finished] = [e for e in events if isinstance(e, ToolFinished)]
    if answer is None:
        assert asked == []
    else:
        assert asked == [(started.call_id, "terminal", {"command": f"rm -rf {victim}", "description": asked[0][2]["description"]})]
    assert victim.exists() is (answer is not True)
    assert ("BLOCKED" in json.dumps(finished.result)) is (answer is not True)
