from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st
from onedoor.content import Part
from onedoor.events import (
    EVENT_TYPES,
    QuestionAnswered,
    QuestionAsked,
    ReasoningDelta,
    ReplyPart,
    RunFailed,
    RunFinished,
    RunStarted,
    StateDelta,
    StateSnapshot,
    TextDelta,
    ToolFinished,
    ToolStarted,
    UsageReported,
    event_from_dict,
    event_from_json,
    event_to_dict,
    event_to_json,
)
from onedoor.port import Message, collect_text
from onedoor.questions import Answer, Question
from onedoor.usage import ModelUsage

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)
usages = st.builds(
    ModelUsage, st.text(max_size=8), st.text(max_size=8), *(st.integers(0, 10**9) for _ in range(6)),
    st.one_of(st.none(), st.floats(0, 100, allow_nan=False)), st.sampled_from(["", "USD"]),
)
parts = st.one_of(
    st.builds(Part.media, st.just("image"), st.just("image/png"), data=st.binary(max_size=20).map(lambda b: b"\x89PNG\r\n\x1a\n" + b)),
    st.builds(Part.media, st.just("document"), st.just("application/pdf"), uri=st.just("https://example.com/a.pdf")),
    st.builds(Part.resource, st.just("file:///a.py"), text=st.text(max_size=20)),
    st.builds(Part.link, st.just("file:///b.md"), name=st.text(min_size=1, max_size=8).filter(str.isalnum)),
    st.builds(Part.of_data, json_values),
)
events = st.one_of(
    st.builds(RunStarted, st.text()),
    st.builds(TextDelta, st.text()),
    st.builds(ReasoningDelta, st.text()),
    st.builds(ToolStarted, st.text(), st.text(), json_values),
    st.builds(ToolFinished, st.text(), st.text(), json_values, st.booleans()),
    st.builds(RunFinished, st.text(), st.text(), st.sampled_from(["end_turn", "cancelled", "max_turns"])),
    st.builds(RunFailed, st.text(), st.text()),
    st.builds(RunFinished, st.text(), st.text(), st.just("end_turn"), st.tuples(usages)),
    st.builds(RunFailed, st.text(), st.text(), st.tuples(usages, usages)),
    st.builds(UsageReported, st.tuples(usages)),
    st.builds(ReplyPart, parts),
    st.builds(ToolFinished, st.text(), st.text(), json_values, st.booleans(), st.tuples(parts)),
    st.builds(StateSnapshot, st.dictionaries(st.text(max_size=5), json_values, max_size=3)),
    st.builds(StateDelta, st.tuples(st.fixed_dictionaries({"op": st.just("add"), "path": st.just("/a"), "value": json_values}))),
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


def test_every_event_type_has_its_name():
    assert set(EVENT_TYPES) == {
        "run_started", "text_delta", "reasoning_delta", "tool_started", "tool_finished", "run_finished", "run_failed",
        "question_asked", "question_answered", "reply_part", "state_snapshot", "state_delta", "usage_reported",
    }


def test_fields_a_newer_server_adds_are_ignored_and_defaults_are_left_out():
    """Servers a version apart read each other's events (a shared journal during an upgrade)."""
    assert event_from_dict({"type": "text_delta", "text": "x", "added_later": 1}) == TextDelta("x")
    assert event_to_dict(RunFinished("r", "t")) == {"type": "run_finished", "run_id": "r", "text": "t", "stop_reason": "end_turn"}
    assert event_to_dict(ToolFinished("c", "n", 1)) == {"type": "tool_finished", "call_id": "c", "name": "n", "result": 1,
                                                         "is_error": False}


@pytest.mark.parametrize(
    "bad",
    [
        [],
        {"type": "nope"},
        {"text": "no type"},
        {"type": "text_delta"},
        {"type": "run_finished", "run_id": "r", "text": "", "usage": [{"input_tokens": -1}]},
        {"type": "run_finished", "run_id": "r", "text": "", "usage": {"input_tokens": 1}},
        {"type": "reply_part", "part": {"type": "image", "media_type": "image/png", "data": "not base64!"}},
        {"type": "state_delta", "ops": {"op": "add"}},
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
