"""The pure parts of questions over AG-UI: questions -> Interrupt objects, resume entries ->
answers, and the translation of a parked and a resumed run (ag-ui-validate, ag_ui models)."""

from __future__ import annotations

import time
from datetime import datetime

import pytest
from ag_ui.core import Event as AguiEvent
from ag_ui.core import Interrupt, RunAgentInput
from ag_ui_validate.pytest_plugin import validate_agui
from onedoor.events import (
    QuestionAnswered,
    QuestionAsked,
    RunFinished,
    RunStarted,
    TextDelta,
    ToolFinished,
    ToolStarted,
)
from onedoor.questions import Answer, Question, QuestionError, check_answer
from onedoor_door_agui.convert import InputError, build_resume, is_resume
from onedoor_door_agui.interrupts import answer_for, iso_time, question_to_interrupt
from onedoor_door_agui.translate import Translator
from pydantic import TypeAdapter

EVENT = TypeAdapter(AguiEvent)
APPROVAL = Question.approval("c1", "deploy", {"env": "prod"}).stamped("run-1", 1_800_000_000.25)
INPUT = Question.input("Colour?", {"type": "object", "properties": {"c": {"type": "string", "enum": ["red"]}}}, why="x")
INPUT = INPUT.stamped("run-1", None)


def check(events):
    report = validate_agui(events)
    assert report.summary.errors == 0 and report.summary.warnings == 0, [d.message for d in report.diagnostics]
    for event in events:
        EVENT.validate_python(event)
    return events


def test_interrupt_objects_are_valid_ag_ui():
    approval = question_to_interrupt(APPROVAL)
    Interrupt.model_validate(approval)
    assert approval["toolCallId"] == "c1" and approval["reason"] == "tool_approval"
    assert approval["expiresAt"] == "2027-01-15T08:00:00.250Z"
    assert datetime.fromisoformat(approval["expiresAt"].replace("Z", "+00:00")).timestamp() == 1_800_000_000.25
    assert approval["metadata"]["arguments"] == {"env": "prod"} and approval["metadata"]["toolName"] == "deploy"
    question = question_to_interrupt(INPUT)
    Interrupt.model_validate(question)
    assert question["reason"] == "input_required" and "toolCallId" not in question and "expiresAt" not in question
    assert question["responseSchema"] == INPUT.schema and question["metadata"]["details"] == {"why": "x"}
    assert iso_time(time.time()).endswith("Z")


ANSWERS = [
    (APPROVAL, "resolved", {"approved": True}, "allow_once"),
    (APPROVAL, "resolved", {"approved": True, "always": True}, "allow_always"),
    (APPROVAL, "resolved", {"approved": False}, "reject_once"),
    (APPROVAL, "resolved", {"approved": False, "always": True}, "reject_always"),
    (APPROVAL, "resolved", {"outcome": "reject_always"}, "reject_always"),
    (APPROVAL, "resolved", True, "allow_once"),
    (APPROVAL, "resolved", False, "reject_once"),
    (APPROVAL, "cancelled", {"approved": True}, "reject_once"),
    (INPUT, "resolved", {"c": "red"}, "accept"),
    (INPUT, "resolved", None, "decline"),
    (INPUT, "cancelled", {"c": "red"}, "cancel"),
]


@pytest.mark.parametrize("question, status, payload, outcome", ANSWERS)
def test_resume_entries_become_answers(question, status, payload, outcome):
    answer = answer_for(question, status, payload)
    assert answer.outcome == outcome and answer.question_id == question.id
    check_answer(question, answer)  # and the kernel takes it


@pytest.mark.parametrize(
    "payload",
    [None, "yes", 1, [], {}, {"approved": 1}, {"approved": True, "always": "yes"}, {"outcome": 5}, {"outcome": "x", "y": 1},
     {"approved": True, "outcome": "allow_once"}],
)
def test_approval_payloads_this_door_does_not_understand(payload):
    with pytest.raises(QuestionError) as refused:
        check_answer(APPROVAL, answer_for(APPROVAL, "resolved", payload))
    assert refused.value.reason == "invalid"


def test_resume_input_is_validated():
    entry = {"interruptId": "q-1", "status": "resolved", "payload": {"approved": True}}
    base = {"threadId": "t", "runId": "r", "messages": []}
    assert not is_resume(base) and not is_resume({**base, "resume": []}) and is_resume({**base, "resume": [entry]})
    request = build_resume({**base, "resume": [entry]})
    assert request.entries == [("q-1", "resolved", {"approved": True})]
    RunAgentInput.model_validate({**base, "resume": [entry]})
    for bad in ({**entry, "status": "maybe"}, {"status": "resolved"}, "q-1"):
        with pytest.raises(InputError):
            build_resume({**base, "resume": [bad]})
    with pytest.raises(InputError, match="at most 64"):
        build_resume({**base, "resume": [entry] * 65})


def test_parked_and_resumed_runs_translate_to_two_valid_ag_ui_runs():
    first = Translator("t", "run-1")
    events = []
    for event in (RunStarted("k"), TextDelta("Let me deploy."), ToolStarted("c1", "deploy", {"env": "prod"}),
                  QuestionAsked(APPROVAL), RunFinished("k", "Let me deploy.", "suspended")):
        events += first.feed(event)
    check(events)
    assert events[-1]["outcome"]["interrupts"] == [question_to_interrupt(APPROVAL)]
    carried = first.open_calls()
    parent = events[[e["type"] for e in events].index("TOOL_CALL_START")]["parentMessageId"]
    assert carried == {"c1": ("deploy", parent)}
    second = Translator("t", "run-2", parent_run_id="run-1", carried=carried)
    resumed = []
    for event in (RunStarted("k"), QuestionAnswered(Answer(APPROVAL.id, "allow_once")), ToolFinished("c1", "deploy", {"ran": True}),
                  TextDelta("Done."), RunFinished("k", "Let me deploy.Done.")):
        resumed += second.feed(event)
    check(resumed)
    check(events + resumed)  # and as one stream of two runs
    assert resumed[0]["parentRunId"] == "run-1" and resumed[1]["type"] == "CUSTOM"
    assert [e["type"] for e in resumed[2:5]] == ["TOOL_CALL_START", "TOOL_CALL_END", "TOOL_CALL_RESULT"]
    assert resumed[2]["parentMessageId"] == parent and resumed[-1]["outcome"] == {"type": "success"}
    assert second.open_calls() == {}


def test_a_suspended_ending_without_its_question_is_a_run_error():
    translator = Translator("t", "r")
    events = translator.feed(RunStarted("k")) + translator.feed(RunFinished("k", "", "suspended"))
    check(events)
    assert events[-1]["type"] == "RUN_ERROR" and events[-1]["code"] == "no_interrupt"


async def test_what_the_door_knows_of_a_run_goes_with_its_journal():
    """The door keeps no registry of its own: an interrupted run's segment (what a resume
    and a reader that comes back need) lives in the kernel's journal and goes with it."""
    import httpx
    from onedoor.kernel import Limits
    from onedoor.testing import scripted_kernel
    from onedoor_door_agui import AguiOptions, segments
    from onedoor_door_agui.app import AguiApp
    from onedoor_test_support import await_for

    kernel = scripted_kernel(Limits(question_ttl=0.3, journal_retention=0.2), mode="async")
    app = AguiApp(kernel, AguiOptions(keepalive=0))
    body = {"threadId": "t", "runId": "r-parked", "messages": [{"id": "u1", "role": "user", "content": "/ask rm {}"}]}
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1") as http:
        parked = await http.post("/", json=body)
        assert '"type":"interrupt"' in parked.text
        assert await segments.find(kernel.journals, "r-parked", "local") is not None
        assert (await http.get("/runs/r-parked/events")).status_code == 200
        await await_for(lambda: kernel.parked_runs == 0 and len(kernel.journals) == 0, "the run expired, its journal went")
        assert await segments.find(kernel.journals, "r-parked", "local") is None
        gone = await http.get("/runs/r-parked/events")
        assert gone.status_code == 404 and gone.json()["error"] == "unknown_run"
    grown = [name for name, value in vars(app).items() if isinstance(value, (dict, list, set)) and value]
    assert grown == [], f"the door kept state of its own: {grown}"
