"""How the next A2A message answers an ``input-required`` task's question (no server needed)."""

from __future__ import annotations

from typing import Any

import pytest
from a2a.helpers import new_data_part, new_text_part
from a2a.types import Message, Role
from onedoor.questions import Question
from onedoor_door_a2a.answers import answer_from, question_parts

APPROVAL = Question.approval("call-1", "delete_files", {"path": "/tmp/x"}).stamped("run-1", None)
FREE = Question.input("What colour?").stamped("run-1", None)
FORM = Question.input("Your details", {"type": "object", "properties": {"age": {"type": "integer"}},
                                       "required": ["age"]}).stamped("run-1", None)


def message(*parts) -> Message:
    return Message(message_id="m", role=Role.ROLE_USER, parts=list(parts))


@pytest.mark.parametrize(("text", "outcome"), [("yes", "allow_once"), ("Always", "allow_always"), ("no", "reject_once"),
                                               ("never", "reject_always"), ("reject_once", "reject_once")])
def test_approval_words(text: str, outcome: str) -> None:
    answer = answer_from(APPROVAL, message(new_text_part(text)))
    assert (answer.question_id, answer.outcome, answer.value) == (APPROVAL.id, outcome, None)


def test_text_that_answers_nothing_says_how_to_answer() -> None:
    with pytest.raises(ValueError, match="Answer yes"):
        answer_from(APPROVAL, message(new_text_part("purple")))
    with pytest.raises(ValueError, match="empty"):
        answer_from(FREE, message(new_data_part([1, 2])))
    with pytest.raises(ValueError, match="not a JSON object"):
        answer_from(FORM, message(new_text_part("forty")))


def test_free_questions_forms_and_exact_data_answers() -> None:
    assert answer_from(FREE, message(new_text_part("blue"))).value == {"answer": "blue"}
    assert answer_from(FREE, message(new_text_part("decline"))).outcome == "decline"
    assert answer_from(FORM, message(new_text_part('{"age": 40}'))).value == {"age": 40}
    from_data = answer_from(FORM, message(new_data_part({"age": 41}))).value
    assert from_data == {"age": 41} and type(from_data["age"]) is int  # a Struct's 41.0, as the form wants it
    exact = answer_from(APPROVAL, message(new_data_part({"outcome": "allow_always"})))
    assert exact.outcome == "allow_always"


def test_the_question_goes_out_as_text_and_data() -> None:
    text, data = question_parts(APPROVAL)
    assert text.text.startswith("Allow the agent to run delete_files?")
    assert data.data.struct_value.fields["question"].struct_value.fields["kind"].string_value == "approval"


class _Collected:
    """The SDK's TaskUpdater puts its events here (a list, as an event queue)."""

    def __init__(self) -> None:
        self.events: list[Any] = []

    async def enqueue_event(self, event: Any) -> None:
        self.events.append(event)


async def test_a_continuation_answered_elsewhere_goes_on_from_the_stored_reply_and_state() -> None:
    """A run another server holds, answered through this one: the reply and the state go on
    from the stored task's (the whole reply at the end keeps what came before the question)."""
    from a2a.server.tasks import TaskUpdater
    from a2a.types import Artifact, Task, TaskArtifactUpdateEvent, TaskState
    from onedoor_door_a2a.links import TaskLink

    stored = Task(id="t-1", context_id="c-1", artifacts=[
        Artifact(artifact_id="reply", name="reply", parts=[new_text_part("Let me look. ")]),
        Artifact(artifact_id="state", name="state", parts=[new_data_part({"step": 1})]),
    ])
    collected = _Collected()
    link = TaskLink(TaskUpdater(collected, "t-1", "c-1"), "alice", None)  # type: ignore[arg-type]
    link.carry_on(stored)
    await link.state_now({"step": 1})  # the state as stored: nothing to send
    await link.delta("Found it.")
    await link.end(TaskState.TASK_STATE_COMPLETED)
    updates = [e for e in collected.events if isinstance(e, TaskArtifactUpdateEvent)]
    assert all(u.artifact.artifact_id == "reply" for u in updates), updates
    assert updates[0].append, "the continuation's first piece is appended to the stored reply"
    last = updates[-1]
    assert not last.append and last.last_chunk
    assert [p.text for p in last.artifact.parts] == ["Let me look. Found it."]
