"""Core history messages <-> pydantic-ai ModelMessages."""

from __future__ import annotations

from typing import Any, Sequence

from onedoor import Message


def to_model_messages(history: Sequence[Message]) -> list[Any]:
    """The caller's history as pydantic-ai messages (requests and responses)."""
    from pydantic_ai.messages import (
        ModelRequest,
        ModelResponse,
        SystemPromptPart,
        TextPart,
        ToolCallPart,
        ToolReturnPart,
        UserPromptPart,
    )

    out: list[Any] = []
    names: dict[str, str] = {}
    pending: list[Any] = []  # request parts waiting to become one ModelRequest

    def flush() -> None:
        if pending:
            out.append(ModelRequest(parts=list(pending)))
            pending.clear()

    for message in history:
        if message.role == "system":
            pending.append(SystemPromptPart(content=message.content))
        elif message.role == "user":
            pending.append(UserPromptPart(content=message.content))
        elif message.role == "tool":
            call_id = message.tool_call_id or ""
            pending.append(ToolReturnPart(tool_name=names.get(call_id, "tool"), content=message.content, tool_call_id=call_id))
        else:
            flush()
            parts: list[Any] = [TextPart(content=message.content)] if message.content else []
            for call in message.tool_calls:
                names[call.id] = call.name
                parts.append(ToolCallPart(tool_name=call.name, args=call.arguments, tool_call_id=call.id))
            out.append(ModelResponse(parts=parts))
    flush()
    return out
