"""Typed models of the thread calls (``/threads``…), shown in the OpenAPI docs."""

# No `from __future__ import annotations`: pydantic builds the field types when a model is made.
from typing import Any, Optional

from pydantic import BaseModel, ConfigDict, Field

from .content_models import PartOut, UsageOut
from .models import STATE_HELP, message_type

THREAD_ID_PATTERN = r"^[A-Za-z0-9_.:-]{1,128}$"  # onedoor.threads.check_thread_id, as a schema
MAX_TITLE_CHARS = 200
MAX_PAGE = 200  # threads in one page of GET /threads
# "has a character that is not whitespace", the same in Python (str.isspace, which the kernel's
# empty-message check uses) and in pydantic's Rust regex (whose \s lacks \x1c-\x1f)
NOT_BLANK = r"[^\s\x1c-\x1f]"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ThreadCreate(_Strict):
    """A new thread: both fields optional (the title defaults to its first message)."""

    title: str = Field(default="", max_length=MAX_TITLE_CHARS, description="a name to show; empty: the first message")
    settings: dict[str, Any] = Field(
        default_factory=dict, description="per-thread settings (backend, options), kept with the thread"
    )


def thread_chat_model(max_message_chars: int) -> type[BaseModel]:
    """The body of a turn on a thread: the message only (the thread holds the history)."""

    Message = message_type(max_message_chars, NOT_BLANK)

    class ThreadChatRequest(_Strict):
        """A message for the agent; the conversation so far is the thread's, and so is the
        shared state unless the client sends its own."""

        message: Message  # type: ignore[valid-type]
        state: Optional[dict[str, Any]] = Field(
            default=None, description=STATE_HELP + "; kept with the thread (absent: the thread's stored state)"
        )
        state_version: Optional[int] = Field(
            default=None, ge=0, description="the thread's state version `state` is based on: 409 state_conflict "
            "when the thread's state has changed since"
        )

    return ThreadChatRequest


class ThreadSummaryOut(BaseModel):
    """A thread as a listing shows it: no messages, only how many."""

    id: str = Field(description="the thread's id: use it in /threads/{thread_id}")
    title: str
    message_count: int
    created_at: float = Field(description="epoch seconds")
    updated_at: float = Field(description="epoch seconds of its last change")


class ThreadList(BaseModel):
    """One page of the caller's threads, most recently changed first."""

    threads: list[ThreadSummaryOut]
    next_before: Optional[str] = Field(
        default=None, description="pass as `before` for the next page (absent on the last page)"
    )


class ToolCallOut(BaseModel):
    """A tool call an assistant message made."""

    id: str
    name: str
    arguments: Any = None


class MessageOut(BaseModel):
    """One message of a thread: a user's message, an assistant's reply (with the tool calls
    it made), or a tool's result (``tool_call_id`` names its call)."""

    role: str = Field(description="system, user, assistant or tool")
    content: str = Field(description="its text (parts that are not text are named in it)")
    tool_calls: list[ToolCallOut] = Field(default_factory=list)
    tool_call_id: Optional[str] = None
    parts: list[PartOut] = Field(
        default_factory=list, description="all of it as parts, in order, when it holds more than text (an image "
        "sent or made); absent otherwise"
    )
    usage: list[UsageOut] = Field(
        default_factory=list, description="the last assistant message of a turn: what the turn cost, per model"
    )


class ThreadOut(ThreadSummaryOut):
    """A thread with its messages, oldest first."""

    settings: dict[str, Any] = Field(default_factory=dict)
    version: int = Field(description="grows by one with every change")
    messages: list[MessageOut]


def summary_dict(summary: Any) -> dict[str, Any]:
    """A store's Thread or ThreadSummary as :class:`ThreadSummaryOut` JSON."""
    count = summary.message_count if hasattr(summary, "message_count") else len(summary.messages)
    return {
        "id": summary.id,
        "title": summary.title,
        "message_count": count,
        "created_at": summary.created_at,
        "updated_at": summary.updated_at,
    }


def message_dict(message: Any) -> dict[str, Any]:
    out = {
        "role": message.role,
        "content": message.content,
        "tool_calls": [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in message.tool_calls],
        "tool_call_id": message.tool_call_id,
    }
    if message.parts:
        out["parts"] = [p.to_dict() for p in message.parts]
    if message.usage:
        out["usage"] = [u.to_dict() for u in message.usage]
    return out


def thread_dict(thread: Any) -> dict[str, Any]:
    """A store's Thread as :class:`ThreadOut` JSON."""
    return {
        **summary_dict(thread),
        "settings": thread.settings,
        "version": thread.version,
        "messages": [message_dict(m) for m in thread.messages],
    }
