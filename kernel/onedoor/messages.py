"""Messages of a conversation: what a caller passes as history and a thread stores."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Literal

Role = Literal["system", "user", "assistant", "tool"]
ROLES = ("system", "user", "assistant", "tool")


@dataclass(frozen=True)
class ToolCall:
    """A tool call the assistant made in an earlier turn."""

    id: str
    name: str
    arguments: Any = None

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "arguments": self.arguments}


@dataclass(frozen=True)
class Message:
    """One message of the history a caller passes in.

    ``tool_calls`` belong to assistant messages; ``tool_call_id`` ties a ``tool``
    message (a tool's result) to its call.
    """

    role: Role
    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            out["tool_calls"] = [c.to_dict() for c in self.tool_calls]
        if self.tool_call_id is not None:
            out["tool_call_id"] = self.tool_call_id
        return out

    @classmethod
    def from_dict(cls, data: Any) -> "Message":
        if isinstance(data, Message):
            return data
        if not isinstance(data, dict):
            raise ValueError("a history message must be an object with role and content")
        role = data.get("role")
        if role not in ROLES:
            raise ValueError(f"unknown message role {role!r}; expected one of {', '.join(ROLES)}")
        content = data.get("content", "")
        if content is None:
            content = ""
        if not isinstance(content, str):
            raise ValueError("message content must be a string")
        calls = []
        for raw in data.get("tool_calls") or ():
            if not isinstance(raw, dict) or not isinstance(raw.get("id"), str) or not isinstance(raw.get("name"), str):
                raise ValueError("a tool call needs a string id and name")
            calls.append(ToolCall(raw["id"], raw["name"], raw.get("arguments")))
        call_id = data.get("tool_call_id")
        if call_id is not None and not isinstance(call_id, str):
            raise ValueError("tool_call_id must be a string")
        return cls(role, content, tuple(calls), call_id)


def normalize_history(history: Iterable[Any] | None) -> list[Message]:
    """Accept Message objects or plain dicts; raise ValueError on anything else."""
    if history is None:
        return []
    return [Message.from_dict(m) for m in history]
