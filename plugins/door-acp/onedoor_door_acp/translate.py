"""Between onedoor and ACP: core events to ``session/update`` payloads (plain dicts,
built once per event: this is the hot path), and a turn's events to history messages
(and back, to replay a loaded session). Content blocks and parts: :mod:`.content`."""

from __future__ import annotations

import json
from typing import Any, Iterator, Sequence

from onedoor import ReasoningDelta, TextDelta, ToolFinished, ToolStarted
from onedoor.content import Part, text_of
from onedoor.events import ReplyPart
from onedoor.usage import ModelUsage, usage_to_json

from .content import blocks_of, part_block


def text_chunk(kind: str, text: str) -> dict[str, Any]:
    return {"sessionUpdate": kind, "content": {"type": "text", "text": text}}


def tool_kind(name: str) -> str:
    lowered = name.lower()
    for needle, kind in (
        ("read", "read"), ("search", "search"), ("grep", "search"), ("find", "search"),
        ("write", "edit"), ("edit", "edit"), ("delete", "delete"), ("remove", "delete"), ("move", "move"),
        ("rename", "move"), ("exec", "execute"), ("shell", "execute"), ("run", "execute"), ("fetch", "fetch"),
        ("http", "fetch"), ("think", "think"),
    ):
        if needle in lowered:
            return kind
    return "other"


def tool_title(name: str, arguments: Any) -> str:
    if isinstance(arguments, dict) and arguments:
        first = next(iter(arguments.values()))
        if isinstance(first, str) and first:
            short = first if len(first) <= 40 else first[:39] + "…"
            return f"{name}: {short}"
    return name


def result_text(result: Any) -> str:
    return result if isinstance(result, str) else json.dumps(result, ensure_ascii=False)


def tool_start(call_id: str, name: str, arguments: Any, status: str = "pending") -> dict[str, Any]:
    return {
        "sessionUpdate": "tool_call",
        "toolCallId": call_id,
        "title": tool_title(name, arguments),
        "kind": tool_kind(name),
        "status": status,
        "rawInput": arguments,
    }


def tool_status(call_id: str, status: str) -> dict[str, Any]:
    return {"sessionUpdate": "tool_call_update", "toolCallId": call_id, "status": status}


def tool_end(call_id: str, result: Any, is_error: bool, blocks: Any = ()) -> dict[str, Any]:
    """The call's end: its result as text, then ``blocks`` (content blocks of the result's parts)."""
    content = [{"type": "content", "content": {"type": "text", "text": result_text(result)}}]
    content.extend({"type": "content", "content": block} for block in blocks)
    return {
        "sessionUpdate": "tool_call_update",
        "toolCallId": call_id,
        "status": "failed" if is_error else "completed",
        "content": content,
        "rawOutput": result,
    }


def part_chunk(kind: str, part: Any) -> dict[str, Any]:
    """A reply part (:class:`~onedoor.content.Part`) as an ``agent_message_chunk`` (or ``kind``)."""
    return {"sessionUpdate": kind, "content": part_block(part)}


class TurnRecorder:
    """Builds the history messages of one turn from its events.

    Assistant text before a tool call becomes an assistant message carrying that call;
    a tool result becomes a ``tool`` message; trailing text a final assistant message.
    Reply parts (images…) go in their message's ``parts``, in place among its text, and
    a tool result's parts in its message's (as the kernel keeps a thread). Extra keys
    (``reasoning``, ``name``, ``is_error``, ``result``) serve the replay.
    """

    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []
        self.text: list[str] = []
        self.reasoning: list[str] = []
        self.replies: list[tuple[int, Part]] = []  # reply parts, each after that many text chunks
        self._calls: dict[str, dict[str, Any]] = {}

    def add(self, event: Any) -> None:
        kind = type(event)
        if kind is TextDelta:
            self.text.append(event.text)
        elif kind is ReasoningDelta:
            self.reasoning.append(event.text)
        elif kind is ReplyPart:
            self.replies.append((len(self.text), event.part))
        elif kind is ToolStarted:
            call = {"id": event.call_id, "name": event.name, "arguments": event.arguments}
            last = self.messages[-1] if self.messages else None
            if (last is not None and last["role"] == "assistant" and last.get("tool_calls") and not self.text
                    and not self.replies and not self.reasoning and self._calls_open(last)):
                last["tool_calls"].append(call)
            else:
                self.messages.append({"role": "assistant", **self._take_content(), "tool_calls": [call], **self._take_reasoning()})
            self._calls[event.call_id] = call
        elif kind is ToolFinished:
            message = {
                "role": "tool", "content": result_text(event.result), "tool_call_id": event.call_id,
                "name": event.name, "is_error": bool(event.is_error), "result": event.result,
            }
            if event.parts:
                message["parts"] = [p.to_dict() for p in event.parts]
            self.messages.append(message)

    def add_rejected(self, call_id: str, name: str, arguments: Any, reason: str) -> None:
        """A tool call the user rejected before it ran (announced by the backend already, or not)."""
        if call_id not in self._calls:
            self.add(ToolStarted(call_id, name, arguments))
        self.add(ToolFinished(call_id, name, reason, True))

    def _calls_open(self, message: dict[str, Any]) -> bool:
        done = {m.get("tool_call_id") for m in self.messages if m["role"] == "tool"}
        return all(c["id"] not in done for c in message["tool_calls"])

    def _content(self, note: str = "") -> dict[str, Any]:
        """The text so far (and its reply parts in place) as a message's ``content`` and ``parts``."""
        if not self.replies:
            return {"content": "".join(self.text) + note}
        parts: list[Part] = []
        start = 0
        for at, part in self.replies:
            if at > start:
                parts.append(Part.of_text("".join(self.text[start:at])))
            parts.append(part)
            start = at
        rest = "".join(self.text[start:]) + note
        if rest:
            parts.append(Part.of_text(rest))
        return {"content": text_of(parts), "parts": [p.to_dict() for p in parts]}

    def _take_content(self, note: str = "") -> dict[str, Any]:
        content = self._content(note)
        self.text.clear()
        self.replies.clear()
        return content

    def _take_reasoning(self) -> dict[str, Any]:
        if not self.reasoning:
            return {}
        text = "".join(self.reasoning)
        self.reasoning.clear()
        return {"reasoning": text}

    def mark(self) -> tuple[int, ...]:
        """Changes whenever the turn has progressed (for checkpoints)."""
        return (len(self.messages), len(self.text), len(self.reasoning), len(self._calls), len(self.replies))

    def snapshot(self) -> list[dict[str, Any]]:
        """The turn so far as history messages, without ending it (a checkpoint)."""
        out = list(self.messages)
        content, reasoning = self._content(), "".join(self.reasoning)
        if content["content"] or reasoning:
            out.append({"role": "assistant", **content, **({"reasoning": reasoning} if reasoning else {})})
        done = {m.get("tool_call_id") for m in out if m["role"] == "tool"}
        for call_id, call in self._calls.items():
            if call_id not in done:
                out.append({"role": "tool", "content": "interrupted", "tool_call_id": call_id, "name": call["name"],
                            "is_error": True, "result": "interrupted"})
        return out

    def finish(self, note: str = "", usage: Sequence[ModelUsage] = ()) -> list[dict[str, Any]]:
        """The turn's messages; ``usage`` (the run's) goes on its last assistant message."""
        content = self._take_content(note)
        extra = self._take_reasoning()
        if content["content"] or extra:
            self.messages.append({"role": "assistant", **content, **extra})
        done = {m.get("tool_call_id") for m in self.messages if m["role"] == "tool"}
        for call_id, call in self._calls.items():  # close calls a cancel left open
            if call_id not in done:
                self.messages.append({
                    "role": "tool", "content": "cancelled", "tool_call_id": call_id, "name": call["name"],
                    "is_error": True, "result": "cancelled",
                })
        if usage:
            last = next((m for m in reversed(self.messages) if m["role"] == "assistant"), None)
            if last is not None:
                last["usage"] = usage_to_json(usage)
        return self.messages


def _message_blocks(message: dict[str, Any], content: str) -> list[dict[str, Any]]:
    parts = message.get("parts")
    if isinstance(parts, list) and parts:
        return blocks_of(parts)
    return [{"type": "text", "text": content}] if content else []


def replay(history: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """``session/update`` payloads that show a stored history again (session/load): the
    user's and the agent's parts (images, files) as their content blocks, not flattened."""
    for message in history:
        role = message.get("role")
        content = message.get("content") or ""
        if role == "user":
            for block in _message_blocks(message, content):
                yield {"sessionUpdate": "user_message_chunk", "content": block}
        elif role == "assistant":
            if message.get("reasoning"):
                yield text_chunk("agent_thought_chunk", message["reasoning"])
            for block in _message_blocks(message, content):
                yield {"sessionUpdate": "agent_message_chunk", "content": block}
            for call in message.get("tool_calls") or ():
                yield tool_start(call["id"], call["name"], call.get("arguments"), status="in_progress")
        elif role == "tool" and message.get("tool_call_id"):
            result = message.get("result", content)
            parts = message.get("parts")
            blocks = blocks_of(parts) if isinstance(parts, list) else ()
            yield tool_end(message["tool_call_id"], result, bool(message.get("is_error")), blocks)
