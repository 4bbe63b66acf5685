"""RunAgentInput -> the kernel's prompt, history and client tools."""

from __future__ import annotations

import pytest
from onedoor.port import Message, ToolCall
from onedoor_door_agui.convert import CONTINUE_PROMPT, InputError, build_request


def request(messages, **extra):
    return build_request({"threadId": "t", "runId": "r", "messages": messages, **extra})


def test_last_user_message_is_the_prompt_and_the_rest_history():
    req = request(
        [
            {"id": "1", "role": "system", "content": "sys"},
            {"id": "2", "role": "developer", "content": "dev"},
            {"id": "3", "role": "user", "content": "q1"},
            {"id": "4", "role": "reasoning", "content": "hidden"},
            {"id": "5", "role": "assistant", "content": "a1", "toolCalls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"x": 1}'}}]},
            {"id": "6", "role": "tool", "toolCallId": "c1", "content": "res"},
            {"id": "7", "role": "assistant", "content": "a2"},
            {"id": "8", "role": "user", "content": [{"type": "text", "text": "q2"}, {"type": "text", "text": "more"}]},
        ],
        tools=[{"name": "confirm", "description": "Ask", "parameters": {"type": "object", "properties": {}}}],
    )
    assert req.prompt == "q2more" and req.parts == ()  # text parts joined as @ag-ui/core's contentToText joins them
    assert req.history == [
        Message("system", "sys"),
        Message("system", "dev"),
        Message("user", "q1"),
        Message("assistant", "a1", (ToolCall("c1", "f", {"x": 1}),)),
        Message("tool", "res", tool_call_id="c1"),
        Message("assistant", "a2"),
    ]
    assert [t.name for t in req.tools] == ["confirm"] and req.tools[0].client is True
    assert req.tools[0].parameters == {"type": "object", "properties": {}}
    assert len(req.messages) == 8 and req.messages[0] == {"id": "1", "role": "system", "content": "sys"}


def test_tool_results_after_the_last_user_message_are_a_continuation():
    req = request(
        [
            {"id": "1", "role": "user", "content": "/call confirm {}"},
            {"id": "2", "role": "assistant", "toolCalls": [{"id": "c1", "type": "function", "function": {"name": "confirm", "arguments": "not json"}}]},
            {"id": "3", "role": "tool", "toolCallId": "c1", "content": "", "error": "denied"},
        ]
    )
    assert req.prompt == CONTINUE_PROMPT
    assert req.history[-1] == Message("tool", "denied", tool_call_id="c1")
    assert req.history[1].tool_calls == (ToolCall("c1", "confirm", "not json"),)


def test_snapshot_request_flag():
    assert request([{"id": "1", "role": "user", "content": "x"}], forwardedProps={"messagesSnapshot": True}).wants_snapshot
    assert not request([{"id": "1", "role": "user", "content": "x"}], forwardedProps={}).wants_snapshot


@pytest.mark.parametrize(
    "messages, needle",
    [
        ([{"id": "1", "role": "wizard", "content": "x"}], "unknown role 'wizard'"),
        ([{"id": "1", "role": "assistant", "content": "x"}], "no user message"),
        ([{"id": "1", "role": "user", "content": []}], "no text and no parts"),
        ([{"id": "1", "role": "user", "content": [{"type": "binary", "data": "AAAA"}]}], "needs a mimeType"),
        ([{"id": "1", "role": "user", "content": [{"type": "image", "source": {"type": "data", "value": "AA"}}]}], "invalid RunAgentInput"),
        (["nope"], "must be an object"),
        ([{"role": "user", "content": "no id"}], "invalid RunAgentInput"),
    ],
)
def test_bad_messages(messages, needle):
    with pytest.raises(InputError, match=needle.replace("(", r"\(")):
        request(messages)
