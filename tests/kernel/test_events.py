from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st
from onedoor.events import (
    EVENT_TYPES,
    QuestionAnswered,
    QuestionAsked,
    ReasoningDelta,
    RunFailed,
    RunFinished,
    RunStarted,
    TextDelta,
    ToolFinished,
    ToolStarted,
    event_from_dict,
    event_from_json,
    event_to_dict,
    event_to_json,
)
from onedoor.port import Message, collect_text
from onedoor.questions import Answer, Question

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)
events = st.one_of(
    st.builds(RunStarted, st.text()),
    st.builds(TextDelta, st.text()),
    st.builds(ReasoningDelta, st.text()),
    st.builds(ToolStarted, st.text(), st.text(), json_values),
    st.builds(ToolFinished, st.text(), st.text(), json_values, st.booleans()),
    st.builds(RunFinished, st.text(), st.text(), st.sampled_from(["end_turn", "cancelled", "max_turns"])),
    st.builds(RunFailed, st.text(), st.text()),
    st.builds(
        QuestionAsked,
        st.one_of(
            st.builds(Question.approval, st.text(), st.text(), json_values),
            st.builds(Question.input, st.text()),
        ).map(lambda q: q.stamped("run", 12.5)),
    ),
    st.builds(
        QuestionAnswered,
        st.builds(Answer, st.text(min_size=1), st.sampled_from(["allow_once", "accept"]), json_values, st.text(),
                  st.sampled_from(["person", "policy", "expired", "cancelled"])),
    ),
)


@given(events)
def test_every_event_survives_a_json_round_trip(event):
    text = event_to_json(event)
    assert json.loads(text)["type"] in EVENT_TYPES
    assert event_from_json(text) == event
    assert event_from_dict(event_to_dict(event)) == event


def test_all_nine_event_types_have_names():
    assert set(EVENT_TYPES) == {
        "run_started", "text_delta", "reasoning_delta", "tool_started", "tool_finished", "run_finished", "run_failed",
        "question_asked", "question_answered",
    }


@pytest.mark.parametrize(
    "bad",
    [
        [],
        {"type": "nope"},
        {"text": "no type"},
        {"type": "text_delta"},
        {"type": "text_delta", "text": "x", "extra": 1},
        {"type": "run_finished", "run_id": "r"},
        {"type": "question_asked"},
        {"type": "question_asked", "question": {"kind": "poll"}},
        {"type": "question_answered", "answer": {"question_id": 3, "outcome": "accept"}},
    ],
)
def test_malformed_event_dicts_are_rejected(bad):
    with pytest.raises(ValueError):
        event_from_dict(bad)


def test_tool_result_text_renders_json():
    assert ToolFinished("c", "t", {"a": 1}).result_text() == '{"a": 1}'
    assert ToolFinished("c", "t", "plain").result_text() == "plain"


def test_history_messages_from_dicts():
    msg = Message.from_dict({"role": "assistant", "content": "hi", "tool_calls": [{"id": "1", "name": "t", "arguments": {}}]})
    assert msg.tool_calls[0].name == "t"
    assert Message.from_dict(msg.to_dict()) == msg
    for bad in ({"role": "wizard", "content": ""}, {"role": "user", "content": 3}, "text", {"role": "user", "tool_calls": [{}]}):
        with pytest.raises(ValueError):
            Message.from_dict(bad)


async def test_collect_text_drains_to_the_final_text():
    seq = [RunStarted("r"), TextDelta("a"), TextDelta("b"), RunFinished("r", "ab")]
    assert await collect_text(seq) == "ab"
    with pytest.raises(RuntimeError, match="boom"):
        await collect_text([RunStarted("r"), RunFailed("r", "boom")])
