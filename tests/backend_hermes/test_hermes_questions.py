"""hermes' consent through the kernel's questions, a real AIAgent against the fake model server.

Two ways hermes asks: before a command it flags as dangerous (its approval callback,
``allow_machine_tools=true``), and, with ``allow_machine_tools=ask``, before every call of
a machine tool. Both are approval questions, answered live (LiveAsker) or by parking the
run (SuspendAsker + kernel.resume). The canary files show what really ran.
"""

from __future__ import annotations

import json
import uuid

import pytest
from onedoor.events import (
    STOP_SUSPENDED,
    QuestionAnswered,
    QuestionAsked,
    RunFinished,
    RunStarted,
    ToolFinished,
    ToolStarted,
)
from onedoor.questions import LiveAsker, PolicyAsker, SuspendAsker
from onedoor.testing import collect, kernel_for_agent
from onedoor_backend_hermes import HermesOptions, hermes_backend


def make_kernel(server, home, **extra):
    opts = HermesOptions(model="fake-model", base_url=server.base_url, api_key="sk-test", home=home, **extra)
    return kernel_for_agent(lambda: hermes_backend(opts), "hermes")


def terminal(*commands: str) -> str:
    """One model turn calling the terminal once per command."""
    return " ".join("/tool terminal " + json.dumps({"command": c}) for c in commands)


def recorder(*outcomes):
    asked = []

    async def ask(question):
        asked.append(question)
        return outcomes[len(asked) - 1]

    return asked, LiveAsker(ask)


async def drain(run):
    async with run:
        return [event async for event in run]


def victim(tmp_path, name="victim"):
    path = tmp_path / f"{name}-{uuid.uuid4().hex[:8]}"
    path.mkdir()
    (path / "file").write_text("keep me unless approved")
    return path


def canary(tmp_path):
    return tmp_path / f"canary-{uuid.uuid4().hex[:8]}"


def tool_results(events):
    return [(e.name, json.dumps(e.result), e.is_error) for e in events if isinstance(e, ToolFinished)]


# -- dangerous commands (allow_machine_tools=true): hermes' own approval prompt -------------------
@pytest.mark.parametrize(("outcome", "runs"), [("allow_once", True), ("reject_once", False)])
async def test_a_dangerous_command_asks_a_live_asker(server, hermes_home, tmp_path, outcome, runs):
    doomed = victim(tmp_path)
    asked, asker = recorder(outcome)
    kernel = make_kernel(server, hermes_home, toolsets=["terminal"], allow_machine_tools=True)
    events = await collect(kernel, terminal(f"rm -rf {doomed}"), asker=asker)
    [question] = asked
    [started] = [e for e in events if isinstance(e, ToolStarted)]
    assert question.kind == "approval" and question.tool.id == started.call_id and question.tool.name == "terminal"
    assert question.tool.arguments["command"] == f"rm -rf {doomed}"
    assert question.tool.arguments["description"] in question.prompt, "the prompt carries hermes' description"
    kinds = [type(e).__name__ for e in events]
    assert kinds.index("ToolStarted") < kinds.index("QuestionAsked") < kinds.index("QuestionAnswered") < kinds.index("ToolFinished")
    assert doomed.exists() is not runs
    [(_, result, _)] = tool_results(events)
    assert ("BLOCKED" in result) is not runs
    assert isinstance(events[-1], RunFinished) and events[-1].stop_reason == "end_turn"


async def test_allow_always_covers_the_run_and_only_the_run(server, hermes_home, tmp_path):
    """allow_always is hermes' "session" approval, kept for this run: a later run asks again."""
    first, second, third = victim(tmp_path, "a"), victim(tmp_path, "b"), victim(tmp_path, "c")
    kernel = make_kernel(server, hermes_home, toolsets=["terminal"], allow_machine_tools=True)
    asked, asker = recorder("allow_always")
    events = await collect(kernel, terminal(f"rm -rf {first}", f"rm -rf {second}"), asker=asker)
    assert len(asked) == 1, "the second dangerous command of the run is not asked"
    assert not first.exists() and not second.exists()
    assert [e.answer.outcome for e in events if isinstance(e, QuestionAnswered)] == ["allow_always"]
    asked_later, asker_later = recorder("reject_once")
    await collect(kernel, terminal(f"rm -rf {third}"), asker=asker_later)
    assert len(asked_later) == 1, "another run's allow_always does not carry over"
    assert third.exists()
    from tools import approval

    assert not [k for k in approval._session_approved if k.startswith("onedoor-")], "each run's approvals are cleared"


async def test_reject_always_covers_the_run(server, hermes_home, tmp_path):
    first, second = victim(tmp_path, "a"), victim(tmp_path, "b")
    kernel = make_kernel(server, hermes_home, toolsets=["terminal"], allow_machine_tools=True)
    asked, asker = recorder("reject_always")
    events = await collect(kernel, terminal(f"rm -rf {first}", f"rm -rf {second}"), asker=asker)
    assert len(asked) == 1
    assert first.exists() and second.exists()
    assert [("BLOCKED" in result) for _, result, _ in tool_results(events)] == [True, True]


@pytest.mark.parametrize(("outcome", "runs"), [("allow_once", True), ("reject_once", False)])
async def test_a_parked_dangerous_command_resumes(server, hermes_home, tmp_path, outcome, runs):
    doomed = victim(tmp_path)
    kernel = make_kernel(server, hermes_home, toolsets=["terminal"], allow_machine_tools=True)
    first = await drain(kernel.run(terminal(f"rm -rf {doomed}"), asker=SuspendAsker()))
    assert type(first[-2]) is QuestionAsked and first[-1].stop_reason == STOP_SUSPENDED
    question = first[-2].question
    assert question.tool.name == "terminal" and doomed.exists()
    second = await drain(kernel.resume([{"question_id": question.id, "outcome": outcome}]))
    assert second[0] == RunStarted(question.run_id)
    assert doomed.exists() is not runs
    assert isinstance(second[-1], RunFinished) and second[-1].stop_reason == "end_turn"


# -- allow_machine_tools=ask: every machine tool call asks -------------------------------------
@pytest.mark.parametrize(("outcome", "runs"), [("allow_once", True), ("reject_once", False), ("reject_always", False)])
async def test_ask_mode_asks_before_every_terminal_call(server, hermes_home, tmp_path, outcome, runs):
    created = canary(tmp_path)
    asked, asker = recorder(outcome)
    kernel = make_kernel(server, hermes_home, toolsets=["terminal", "todo"], allow_machine_tools="ask")
    events = await collect(kernel, terminal(f"touch {created}"), asker=asker)
    [question] = asked
    assert (question.tool.name, question.tool.arguments) == ("terminal", {"command": f"touch {created}"})
    [started] = [e for e in events if isinstance(e, ToolStarted)]
    assert started.call_id == question.tool.id
    kinds = [type(e).__name__ for e in events]
    assert kinds.index("ToolStarted") < kinds.index("QuestionAsked") < kinds.index("QuestionAnswered") < kinds.index("ToolFinished")
    assert created.exists() is runs
    [(name, result, is_error)] = tool_results(events)
    assert name == "terminal" and is_error is not runs
    if not runs:
        assert "BLOCKED" in result and f"({outcome})" in result
        told = [m["content"] for m in server.chat_requests()[-1].messages if m["role"] == "tool"]
        assert f"({outcome})" in told[0], "the model learns the call was refused"
    assert isinstance(events[-1], RunFinished) and events[-1].stop_reason == "end_turn"


async def test_ask_mode_without_anyone_to_ask_refuses(server, hermes_home, tmp_path):
    kernel = make_kernel(server, hermes_home, toolsets=["terminal"], allow_machine_tools="ask")
    for kwargs in ({}, {"asker": PolicyAsker("deny")}):
        created = canary(tmp_path)
        events = await collect(kernel, terminal(f"touch {created}"), **kwargs)
        assert not created.exists()
        [(_, result, is_error)] = tool_results(events)
        assert is_error and "BLOCKED" in result
        assert isinstance(events[-1], RunFinished)


async def test_ask_mode_allow_always_is_asked_once_per_run(server, hermes_home, tmp_path):
    one, two = canary(tmp_path), canary(tmp_path)
    asked, asker = recorder("allow_always")
    kernel = make_kernel(server, hermes_home, toolsets=["terminal"], allow_machine_tools="ask")
    events = await collect(kernel, terminal(f"touch {one}", f"touch {two}"), asker=asker)
    assert len(asked) == 1 and one.exists() and two.exists()
    assert [is_error for _, _, is_error in tool_results(events)] == [False, False]


async def test_ask_mode_asks_a_dangerous_command_once(server, hermes_home, tmp_path):
    """The person allowed this very call: hermes' own dangerous-command prompt is not asked again."""
    doomed = victim(tmp_path)
    asked, asker = recorder("allow_once")
    kernel = make_kernel(server, hermes_home, toolsets=["terminal"], allow_machine_tools="ask")
    await collect(kernel, terminal(f"rm -rf {doomed}"), asker=asker)
    assert len(asked) == 1 and not doomed.exists()


async def test_ask_mode_leaves_other_tools_alone(server, hermes_home):
    asked, asker = recorder()
    kernel = make_kernel(server, hermes_home, toolsets=["terminal", "todo"], allow_machine_tools="ask")
    events = await collect(kernel, '/tool todo {"todos": []}', asker=asker)
    assert asked == [] and [is_error for _, _, is_error in tool_results(events)] == [False]


@pytest.mark.parametrize(("outcome", "runs"), [("allow_once", True), ("reject_once", False)])
async def test_ask_mode_parks_and_resumes(server, hermes_home, tmp_path, outcome, runs):
    created = canary(tmp_path)
    kernel = make_kernel(server, hermes_home, toolsets=["terminal"], allow_machine_tools="ask")
    first = await drain(kernel.run(terminal(f"touch {created}"), asker=SuspendAsker()))
    assert [type(e).__name__ for e in first][-3:] == ["ToolStarted", "QuestionAsked", "RunFinished"]
    assert first[-1].stop_reason == STOP_SUSPENDED and not created.exists()
    question = first[-2].question
    second = await drain(kernel.resume([{"question_id": question.id, "outcome": outcome}]))
    assert second[0] == RunStarted(question.run_id)
    assert created.exists() is runs
    [(_, _, is_error)] = tool_results(second)
    assert is_error is not runs
    assert isinstance(second[-1], RunFinished) and second[-1].stop_reason == "end_turn"


async def test_true_mode_does_not_ask_plain_commands(server, hermes_home, tmp_path):
    created = canary(tmp_path)
    asked, asker = recorder()
    kernel = make_kernel(server, hermes_home, toolsets=["terminal"], allow_machine_tools=True)
    await collect(kernel, terminal(f"touch {created}"), asker=asker)
    assert asked == [] and created.exists()


def test_a_call_from_outside_the_run_is_refused_while_an_ask_run_is_in_flight(hermes_home, monkeypatch):
    """A delegate_task subagent runs on a pool thread without the run's context: its machine
    tool calls cannot be routed to a person, so they are refused instead of run unasked."""
    import contextvars

    from onedoor_backend_hermes import consent

    monkeypatch.setenv("HERMES_HOME", hermes_home)  # hermes' modules load with an isolated home
    asked = []

    def gate(call_id, name, arguments):
        asked.append((call_id, name, arguments))
        return None

    run_context = contextvars.Context()  # stands for the run's hermes thread
    run_context.run(consent.open_gate, gate, frozenset({"terminal"}))
    try:
        assert run_context.run(consent.pre_tool_call, tool_name="terminal", args={"command": "ls"}, tool_call_id="c1") is None
        assert asked == [("c1", "terminal", {"command": "ls"})]
        outside = consent.pre_tool_call(tool_name="terminal", args={"command": "ls"}, tool_call_id="c2")
        assert outside["action"] == "block" and "subagent" in outside["message"]
        assert consent.pre_tool_call(tool_name="todo", args={}, tool_call_id="c3") is None
    finally:
        run_context.run(consent.close_gate, gate, frozenset({"terminal"}))
    assert consent.pre_tool_call(tool_name="terminal", args={}, tool_call_id="c4") is None, "no ask run in flight"
    assert len(asked) == 1


def test_a_failing_gate_blocks_the_call(hermes_home, monkeypatch):
    import contextvars

    from onedoor_backend_hermes import consent

    monkeypatch.setenv("HERMES_HOME", hermes_home)

    def gate(call_id, name, arguments):
        raise RuntimeError("door gone")

    run_context = contextvars.Context()
    run_context.run(consent.open_gate, gate, frozenset({"terminal"}))
    try:
        blocked = run_context.run(consent.pre_tool_call, tool_name="terminal", args={}, tool_call_id="c1")
        assert blocked["action"] == "block" and "BLOCKED" in blocked["message"]
    finally:
        run_context.run(consent.close_gate, gate, frozenset({"terminal"}))
