"""Typed request and response models (pydantic), shown in the OpenAPI docs."""

from __future__ import annotations

from typing import Any, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class HistoryToolCall(_Strict):
    """A tool call an assistant message made in an earlier turn."""

    id: str
    name: str
    arguments: Any = None


class HistoryMessage(_Strict):
    """One message of the conversation so far; the caller keeps the history."""

    role: Literal["system", "user", "assistant", "tool"]
    content: str = ""
    tool_calls: list[HistoryToolCall] = Field(default_factory=list)
    tool_call_id: Optional[str] = None

    def to_kernel(self) -> dict[str, Any]:
        out: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            out["tool_calls"] = [c.model_dump() for c in self.tool_calls]
        if self.tool_call_id is not None:
            out["tool_call_id"] = self.tool_call_id
        return out


def chat_request_model(max_message_chars: int) -> type[BaseModel]:
    """The request body, with the kernel's message limit in its schema."""

    class ChatRequest(_Strict):
        """A message for the agent and, optionally, the conversation before it."""

        message: str = Field(min_length=1, max_length=max_message_chars, description="what the user says now")
        history: list[HistoryMessage] = Field(default_factory=list, description="earlier messages, oldest first")

    return ChatRequest


class ToolCallRecord(BaseModel):
    """A tool call the agent made during the run, with its result."""

    call_id: str
    name: str
    arguments: Any = None
    result: Any = None
    is_error: bool = False


class ChatResponse(BaseModel):
    """The agent's reply to one message."""

    run_id: str
    reply: str = Field(description="the whole reply text")
    stop_reason: str = Field(description="end_turn, max_turns, …")
    tool_calls: list[ToolCallRecord] = Field(default_factory=list)
    reasoning: str = Field(default="", description="the agent's reasoning, if the backend shares it")


class ErrorBody(BaseModel):
    """Every error: a short machine-readable code and a one-line message."""

    error: str
    detail: str
