"""Messages of a conversation: what a caller passes as history and a thread stores."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable, Literal

from .usage import ModelUsage, usage_from_json, usage_to_json

if TYPE_CHECKING:
    from .content import Part

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

    ``content`` is its text; ``parts``, when not empty, is all of it (text, images,
    files…: :mod:`onedoor.content`), and ``content`` is then the parts' text
    (:func:`~onedoor.content.text_of`), so a reader of text sees what it always saw.
    ``tool_calls`` belong to assistant messages; ``tool_call_id`` ties a ``tool`` message
    (a tool's result) to its call. ``usage``: on the last assistant message of a turn,
    what the turn cost (:mod:`onedoor.usage`).
    """

    role: Role
    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    parts: tuple[Part, ...] = ()
    usage: tuple[ModelUsage, ...] = ()

    @property
    def size(self) -> int:
        """What the message holds: characters of text plus bytes of its other parts."""
        return len(self.content) + sum(p.byte_size for p in self.parts if p.kind != "text")

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            out["tool_calls"] = [c.to_dict() for c in self.tool_calls]
        if self.tool_call_id is not None:
            out["tool_call_id"] = self.tool_call_id
        if self.parts:  # beside the text: a reader that knows only "content" still reads it
            out["parts"] = [p.to_dict() for p in self.parts]
        if self.usage:
            out["usage"] = usage_to_json(self.usage)
        return out

    @classmethod
    def from_dict(cls, data: Any) -> "Message":
        """A message from JSON: ``content`` is text or a list of parts (``parts`` too, as
        :meth:`to_dict` writes it); ValueError for anything malformed."""
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
        raw_parts = data.get("parts")
        if not isinstance(content, str):
            if not isinstance(content, list) or raw_parts is not None:
                raise ValueError("message content must be a string or a list of parts")
            raw_parts = content
        parts: tuple[Part, ...] = ()
        if raw_parts is not None:
            from .content import ContentError, parse_content  # (only history with parts needs them)

            try:
                text, parts = parse_content(raw_parts)
            except ContentError as exc:
                raise ValueError(f"message parts: {exc}") from None
            content = content if isinstance(content, str) and content else text
        calls = []
        for raw in data.get("tool_calls") or ():
            if not isinstance(raw, dict) or not isinstance(raw.get("id"), str) or not isinstance(raw.get("name"), str):
                raise ValueError("a tool call needs a string id and name")
            calls.append(ToolCall(raw["id"], raw["name"], raw.get("arguments")))
        call_id = data.get("tool_call_id")
        if call_id is not None and not isinstance(call_id, str):
            raise ValueError("tool_call_id must be a string")
        return cls(role, content, tuple(calls), call_id, parts, usage_from_json(data.get("usage")))


def normalize_history(history: Iterable[Any] | None) -> list[Message]:
    """Accept Message objects or plain dicts; raise ValueError on anything else."""
    if history is None:
        return []
    return [Message.from_dict(m) for m in history]
