"""pydantic-ai's human in the loop through the kernel's questions, against the fake model server.

Tools that need approval become approval questions (allow/reject, once/always); a tool that
raises ``CallDeferred(kind="question")`` becomes an input question. Answered live
(LiveAsker) and by parking the run (SuspendAsker + kernel.resume).
"""

from __future__ import annotations

import importlib
import json
import sys

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
from onedoor.questions import Answer, LiveAsker, SuspendAsker
from onedoor.testing import collect, kernel_for_agent
from onedoor_backend_pydantic_ai import PydanticAIOptions, pydantic_ai_backend

AGENT = """
import os
from openai import AsyncOpenAI
from pydantic_ai import Agent, CallDeferred
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

SIZE = {"type": "object", "properties": {"size": {"type": "string", "enum": ["S", "M", "L"]},
        "count": {"type": "integer"}}, "required": ["size"]}
deleted = []
agent = Agent(OpenAIChatModel("fake-model", provider=OpenAIProvider(
    openai_client=AsyncOpenAI(base_url=os.environ["QUESTIONS_FAKE_URL"], api_key="k", max_retries=0))))

@agent.tool_plain(requires_approval=True)
def delete_file(path: str) -> str:
    '''Delete a file.'''
    deleted.append(path)
    return f"deleted {path}"

@agent.tool_plain
def ask_user(question: str) -> str:
    '''Ask the user a question; returns their answer.'''
    raise CallDeferred(metadata={"prompt": question}, kind="question")

@agent.tool_plain
def pick_size() -> dict:
    '''Ask the user for a size.'''
    raise CallDeferred(metadata={"prompt": "Which size?", "schema": SIZE}, kind="question")

@agent.tool_plain
def bad_form() -> dict:
    '''A question no door can show.'''
    raise CallDeferred(metadata={"prompt": "?", "schema": {"type": "object", "properties": {"x": {"type": "array"}}}},
                       kind="question")
"""


def _has_question_kind() -> bool:
    from pydantic_ai import CallDeferred

    try:
        CallDeferred(kind="question")
    except TypeError:
        return False
    return True


needs_questions = pytest.mark.skipif(
    not _has_question_kind(), reason="this pydantic-ai has no CallDeferred(kind='question') (added after 2.60)"
)


@pytest.fixture
def agent_module(server, tmp_path, monkeypatch):
    (tmp_path / "pa_questions_agent.py").write_text(AGENT)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("QUESTIONS_FAKE_URL", server.base_url)
    monkeypatch.delitem(sys.modules, "pa_questions_agent", raising=False)  # a fresh agent for this server
    module = importlib.import_module("pa_questions_agent")
    module.deleted.clear()
    return module


@pytest.fixture
def kernel(agent_module):
    opts = PydanticAIOptions(agent="pa_questions_agent:agent")
    return kernel_for_agent(lambda: pydantic_ai_backend(opts), "pydantic-ai")


def delete_twice(*paths: str) -> str:
    """One model turn calling delete_file once per path (parallel calls)."""
    return " ".join(f"/tool delete_file {json.dumps({'path': p})}" for p in paths)


def recorder(*outcomes):
    """A live asker answering with ``outcomes`` in turn (an Answer, or an outcome string)."""
    asked = []

    async def ask(question):
        asked.append(question)
        answer = outcomes[len(asked) - 1]
        return answer(question) if callable(answer) else answer

    return asked, LiveAsker(ask)


def tool_messages(server):
    return [m["content"] for m in server.chat_requests()[-1].messages if m["role"] == "tool"]


async def drain(run):
    async with run:
        return [event async for event in run]


@pytest.mark.parametrize("outcome", ["allow_once", "reject_once"])
async def test_a_live_approval_reaches_the_backend(server, kernel, agent_module, outcome):
    asked, asker = recorder(outcome)
    events = await collect(kernel, delete_twice("a.txt"), asker=asker)
    [started] = [e for e in events if isinstance(e, ToolStarted)]
    [question] = asked
    assert question.kind == "approval" and question.run_id == events[0].run_id
    assert (question.tool.id, question.tool.name, question.tool.arguments) == (started.call_id, "delete_file", {"path": "a.txt"})
    kinds = [type(e).__name__ for e in events]
    assert kinds.index("ToolStarted") < kinds.index("QuestionAsked") < kinds.index("QuestionAnswered") < kinds.index("ToolFinished")
    [finished] = [e for e in events if isinstance(e, ToolFinished)]
    allowed = outcome == "allow_once"
    assert agent_module.deleted == (["a.txt"] if allowed else [])
    assert finished.is_error is (not allowed)
    [told] = tool_messages(server)
    if allowed:
        assert told == "deleted a.txt"
    else:
        assert f"({outcome})" in told, "the model learns the outcome"
    assert isinstance(events[-1], RunFinished) and events[-1].stop_reason == "end_turn"


async def test_allow_always_is_remembered_for_the_run(server, kernel, agent_module):
    asked, asker = recorder("allow_always")
    events = await collect(kernel, delete_twice("a.txt", "b.txt"), asker=asker)
    assert len(asked) == 1, "the second call of the same tool is not asked"
    assert sorted(agent_module.deleted) == ["a.txt", "b.txt"], "both ran (in either order: the model called them together)"
    answers = [e.answer for e in events if isinstance(e, QuestionAnswered)]
    assert [(a.outcome, a.how) for a in answers] == [("allow_always", "person")]
    assert [e.is_error for e in events if isinstance(e, ToolFinished)] == [False, False]
    # a new run starts with a clean slate: asked again
    asked2, asker2 = recorder("allow_once")
    await collect(kernel, delete_twice("c.txt"), asker=asker2)
    assert len(asked2) == 1 and sorted(agent_module.deleted) == ["a.txt", "b.txt", "c.txt"]


async def test_reject_always_is_remembered_for_the_run(server, kernel, agent_module):
    asked, asker = recorder("reject_always")
    events = await collect(kernel, delete_twice("a.txt", "b.txt"), asker=asker)
    assert len(asked) == 1
    assert agent_module.deleted == []
    assert [e.is_error for e in events if isinstance(e, ToolFinished)] == [True, True]
    assert all("(reject_always)" in m for m in tool_messages(server))
    assert isinstance(events[-1], RunFinished) and events[-1].stop_reason == "end_turn"


@pytest.mark.parametrize("outcome", ["allow_once", "reject_once"])
async def test_a_parked_approval_resumes_the_run(server, kernel, agent_module, outcome):
    first = await drain(kernel.run(delete_twice("a.txt"), asker=SuspendAsker()))
    assert type(first[-2]) is QuestionAsked and first[-1].stop_reason == STOP_SUSPENDED
    question = first[-2].question
    assert question.tool.name == "delete_file" and question.expires_at is not None
    assert agent_module.deleted == [], "nothing runs while the question waits"
    second = await drain(kernel.resume([{"question_id": question.id, "outcome": outcome}]))
    assert second[0] == RunStarted(question.run_id)
    [answered] = [e.answer for e in second if isinstance(e, QuestionAnswered)]
    assert answered.outcome == outcome and answered.how == "person"
    assert agent_module.deleted == (["a.txt"] if outcome == "allow_once" else [])
    [finished] = [e for e in second if isinstance(e, ToolFinished)]
    assert finished.is_error is (outcome != "allow_once")
    assert second[-1].stop_reason == "end_turn" and second[-1].text.startswith("The tool returned: ")


async def test_without_an_asker_approvals_are_no(server, kernel, agent_module):
    events = await collect(kernel, delete_twice("a.txt"))
    assert not [e for e in events if isinstance(e, (QuestionAsked, QuestionAnswered))]
    assert agent_module.deleted == []
    assert "(reject_once)" in tool_messages(server)[0]


async def test_request_approval_still_works(server, kernel, agent_module):
    """The older approver (kernel.run(approver=...)) still answers approvals."""
    seen = []

    async def approver(call_id, name, arguments):
        seen.append((name, arguments))
        return True

    await collect(kernel, delete_twice("a.txt"), approver=approver)
    assert seen == [("delete_file", {"path": "a.txt"})] and agent_module.deleted == ["a.txt"]


# -- input questions -----------------------------------------------------------------------
@needs_questions
async def test_a_free_text_question_is_answered_live(server, kernel):
    asked, asker = recorder(lambda q: Answer(q.id, "accept", {"answer": "teal"}))
    events = await collect(kernel, '/tool ask_user {"question": "Which colour?"}', asker=asker)
    [question] = asked
    assert question.kind == "input" and question.prompt == "Which colour?"
    assert list(question.schema["properties"]) == ["answer"]
    [started] = [e for e in events if isinstance(e, ToolStarted)]
    assert question.metadata == {"tool_call_id": started.call_id, "tool_name": "ask_user"}
    [finished] = [e for e in events if isinstance(e, ToolFinished)]
    assert (finished.result, finished.is_error) == ("teal", False)
    assert tool_messages(server) == ["teal"]
    assert events[-1].text == "The tool returned: teal"


@needs_questions
@pytest.mark.parametrize("outcome", ["decline", "cancel"])
async def test_an_unanswered_question_is_a_failed_tool_result(server, kernel, outcome):
    asked, asker = recorder(outcome)
    events = await collect(kernel, '/tool ask_user {"question": "Which colour?"}', asker=asker)
    [finished] = [e for e in events if isinstance(e, ToolFinished)]
    assert finished.is_error
    assert f"({outcome})" in tool_messages(server)[0]
    assert isinstance(events[-1], RunFinished) and events[-1].stop_reason == "end_turn"


@needs_questions
async def test_a_form_question_parks_and_resumes(server, kernel):
    first = await drain(kernel.run("/tool pick_size {}", asker=SuspendAsker()))
    assert first[-1].stop_reason == STOP_SUSPENDED
    question = first[-2].question
    assert question.kind == "input" and question.prompt == "Which size?"
    assert question.schema["properties"]["size"]["enum"] == ["S", "M", "L"]
    value = {"size": "M", "count": 2}
    second = await drain(kernel.resume([Answer(question.id, "accept", value)]))
    [finished] = [e for e in second if isinstance(e, ToolFinished)]
    assert finished.result == value and not finished.is_error
    assert json.loads(tool_messages(server)[0]) == value
    assert second[-1].stop_reason == "end_turn"


@needs_questions
async def test_a_question_no_door_can_show_fails_the_tool_not_the_run(server, kernel):
    asked, asker = recorder()
    events = await collect(kernel, "/tool bad_form {}", asker=asker)
    assert asked == []
    [finished] = [e for e in events if isinstance(e, ToolFinished)]
    assert finished.is_error and "cannot be asked" in tool_messages(server)[0]
    assert isinstance(events[-1], RunFinished)
