"""Core history messages <-> pydantic-ai ModelMessages.

A user message with parts (images, files…) becomes a user prompt of pydantic-ai content
(:func:`.content.user_content`); assistant and tool messages go as their text, which names
any part they had (Chat Completions has no place for an assistant's image).
"""

from __future__ import annotations

from typing import Any, Iterable, Sequence

from onedoor import Message

from .content import SENDABLE, user_content


def to_model_messages(history: Sequence[Message], accepts: Iterable[str] = SENDABLE) -> list[Any]:
    """The caller's history as pydantic-ai messages (requests and responses); parts of kinds
    not in ``accepts`` go as text."""
    from pydantic_ai.messages import (
        ModelRequest,
        ModelResponse,
        SystemPromptPart,
        TextPart,
        ToolCallPart,
        ToolReturnPart,
        UserPromptPart,
    )

    accepts = frozenset(accepts)
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
            pending.append(UserPromptPart(content=user_content(message.parts, accepts) if message.parts else message.content))
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
