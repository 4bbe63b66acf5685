"""The pure translation: core events -> AG-UI events, checked by ag-ui-validate."""

from __future__ import annotations

import json

import pytest
from ag_ui.core import Event as AguiEvent
from ag_ui_validate.pytest_plugin import validate_agui
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from onedoor.events import (
    ReasoningDelta,
    RunFailed,
    RunFinished,
    RunStarted,
    TextDelta,
    ToolFinished,
    ToolStarted,
)
from onedoor_door_agui.translate import PROTOCOL_VERSION, Translator, encode_sse, translate
from pydantic import TypeAdapter

EVENT = TypeAdapter(AguiEvent)
TERMINAL = {"RUN_FINISHED", "RUN_ERROR"}


def check_valid(events: list[dict]) -> None:
    """Zero errors and zero warnings from ag-ui-validate; every event parses in ag-ui-protocol."""
    report = validate_agui(events)
    problems = [f"{d.severity}: {d.message}" for d in report.diagnostics if d.severity != "info"]
    assert report.summary.errors == 0 and report.summary.warnings == 0, problems
    for event in events:
        EVENT.validate_python(event)
    kinds = [e["type"] for e in events]
    assert kinds[0] == "RUN_STARTED" and events[0]["protocolVersion"] == PROTOCOL_VERSION
    assert kinds[-1] in TERMINAL and sum(k in TERMINAL for k in kinds) == 1


def text_of(events: list[dict]) -> str:
    return "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-1000, 1000) | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=6,
)


@st.composite
def core_runs(draw):
    """A valid core event sequence (as the kernel delivers it) and its reply text."""
    events: list = [RunStarted("run-1")]
    open_calls: list[str] = []
    reply: list[str] = []
    for index in range(draw(st.integers(0, 30))):
        kind = draw(st.sampled_from(["text", "text", "reasoning", "start", "finish"]))
        if kind == "text":
            piece = draw(st.text(max_size=6))
            events.append(TextDelta(piece))
            reply.append(piece)
        elif kind == "reasoning":
            events.append(ReasoningDelta(draw(st.text(max_size=6))))
        elif kind == "start":
            call_id = f"call-{index}"
            events.append(ToolStarted(call_id, draw(st.sampled_from(["search", "confirm"])), draw(json_values)))
            open_calls.append(call_id)
        elif open_calls:
            call_id = open_calls.pop(draw(st.integers(0, len(open_calls) - 1)))
            events.append(ToolFinished(call_id, "search", draw(json_values), draw(st.booleans())))
    end = draw(st.sampled_from(["end_turn", "max_turns", "cancelled", "pending_tools", "failed"]))
    if end != "pending_tools":
        for call_id in open_calls:
            events.append(ToolFinished(call_id, "search", "closed", True))
        open_calls = []
    if end == "failed":
        events.append(RunFailed("run-1", draw(st.text(min_size=1, max_size=20))))
    else:
        events.append(RunFinished("run-1", "".join(reply), end))
    return events, "".join(reply), end, open_calls


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(core_runs(), st.booleans())
def test_any_valid_core_run_translates_to_a_valid_agui_stream(run, record):
    events, reply, end, pending = run
    out = translate(events, "thread-1", "run-1", record=record, input_messages=[{"id": "u1", "role": "user", "content": "hi"}])
    check_valid(out)
    assert text_of(out) == reply
    last = out[-1]
    if end == "failed":
        assert last["type"] == "RUN_ERROR"
    else:
        assert last["type"] == "RUN_FINISHED" and last["threadId"] == "thread-1" and last["runId"] == "run-1"
        expected = {"type": "cancelled"} if end == "cancelled" else {"type": "success"}
        if end == "pending_tools" and pending:
            expected = {"type": "success", "pendingToolCallIds": pending}
        assert last["outcome"] == expected
    if record and end != "failed":
        snapshot = out[-2]
        assert snapshot["type"] == "MESSAGES_SNAPSHOT"
        assistant_text = "".join(m.get("content") or "" for m in snapshot["messages"] if m["role"] == "assistant")
        assert assistant_text == reply
    # the fast SSE path gives the same bytes as encoding the events one by one
    twin = Translator("thread-1", "run-1", id_prefix="x", record=record, input_messages=[{"id": "u1", "role": "user", "content": "hi"}])
    plain = Translator("thread-1", "run-1", id_prefix="x", record=record, input_messages=[{"id": "u1", "role": "user", "content": "hi"}])
    fast = b"".join(twin.feed_sse(e) for e in events) + b"".join(map(encode_sse, twin.finish()))
    slow = b"".join(encode_sse(x) for e in events for x in plain.feed(e)) + b"".join(map(encode_sse, plain.finish()))
    assert fast == slow
    # the SSE framing round-trips every event
    for event in out:
        frame = encode_sse(event)
        assert frame.startswith(b"data: ") and frame.endswith(b"\n\n") and frame.count(b"\n\n") == 1
        assert json.loads(frame[6:]) == event


def test_a_normal_run_in_order():
    out = translate(
        [
            RunStarted("r"),
            ReasoningDelta("hmm"),
            ToolStarted("c1", "word_count", {"text": "hi"}),
            ToolFinished("c1", "word_count", {"words": 1}),
            TextDelta("Hel"),
            TextDelta("lo"),
            RunFinished("r", "Hello"),
        ],
        "t",
        "r",
        id_prefix="m",
    )
    check_valid(out)
    assert [e["type"] for e in out] == [
        "RUN_STARTED",
        "REASONING_START",
        "REASONING_MESSAGE_START",
        "REASONING_MESSAGE_CONTENT",
        "REASONING_MESSAGE_END",
        "REASONING_END",
        "TOOL_CALL_START",
        "TOOL_CALL_ARGS",
        "TOOL_CALL_END",
        "TOOL_CALL_RESULT",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "RUN_FINISHED",
    ]
    assert out[0] == {"type": "RUN_STARTED", "threadId": "t", "runId": "r", "protocolVersion": "1.0"}
    assert out[7] == {"type": "TOOL_CALL_ARGS", "toolCallId": "c1", "delta": '{"text":"hi"}'}
    assert out[9]["content"] == '{"words":1}' and out[9]["toolCallId"] == "c1"
    # the tool call hangs off an assistant message; the reply is a new one after the result
    assert out[6]["parentMessageId"] != out[10]["messageId"]


def test_tool_call_after_text_attaches_to_that_message():
    out = translate([RunStarted("r"), TextDelta("Let me look."), ToolStarted("c", "search", {}), ToolFinished("c", "search", "x"), RunFinished("r", "Let me look.")])
    check_valid(out)
    start = next(e for e in out if e["type"] == "TEXT_MESSAGE_START")
    call = next(e for e in out if e["type"] == "TOOL_CALL_START")
    assert call["parentMessageId"] == start["messageId"]


def test_failed_tool_result_is_marked():
    out = translate([RunStarted("r"), ToolStarted("c", "x", None), ToolFinished("c", "x", "boom", True), RunFinished("r", "")])
    check_valid(out)
    result = next(e for e in out if e["type"] == "TOOL_CALL_RESULT")
    assert result["metadata"] == {"isError": True} and result["content"] == "boom"
    assert next(e for e in out if e["type"] == "TOOL_CALL_ARGS")["delta"] == "{}"


@pytest.mark.parametrize(
    "core, last",
    [
        ([RunStarted("r"), TextDelta("par")], "RUN_ERROR"),  # truncated: no terminal event
        ([], "RUN_ERROR"),
        ([RunStarted("r"), ReasoningDelta("x"), RunFailed("r", "boom")], "RUN_ERROR"),
        ([RunStarted("r"), TextDelta("a"), RunFinished("r", "a", "cancelled")], "RUN_FINISHED"),
    ],
)
def test_exactly_one_terminal_event_whatever_happens(core, last):
    out = translate(core)
    check_valid(out)
    assert out[-1]["type"] == last


def test_events_after_the_terminal_one_are_dropped_and_finish_adds_nothing():
    t = Translator("t", "r")
    out = []
    for event in [RunStarted("r"), TextDelta("a"), RunFinished("r", "a"), TextDelta("late"), RunFailed("r", "late")]:
        out += t.feed(event)
    assert t.finish("nope") == [] and t.finish() == []
    check_valid(out)
    assert text_of(out) == "a"


def test_finish_without_error_is_a_cancellation():
    t = Translator("t", "r")
    out = t.feed(RunStarted("r")) + t.feed(TextDelta("a")) + t.finish()
    check_valid(out)
    assert out[-1]["outcome"] == {"type": "cancelled"}


def test_pending_frontend_tool_outcome():
    out = translate([RunStarted("r"), ToolStarted("c1", "confirm", {"q": 1}), RunFinished("r", "", "pending_tools")])
    check_valid(out)
    assert out[-1]["outcome"] == {"type": "success", "pendingToolCallIds": ["c1"]}
