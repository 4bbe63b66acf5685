"""How the next A2A message answers an ``input-required`` task's question (no server needed)."""

from __future__ import annotations

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
