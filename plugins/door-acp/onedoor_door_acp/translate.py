"""Between onedoor and ACP: prompt blocks to text, core events to ``session/update``
payloads (plain dicts, built once per event: this is the hot path), and a turn's events
to history messages (and back, to replay a loaded session)."""

from __future__ import annotations

import json
from typing import Any, Iterator

from onedoor import ReasoningDelta, TextDelta, ToolFinished, ToolStarted


class UnsupportedContent(ValueError):
    pass


def prompt_text(blocks: list[Any]) -> str:
    """The message text of an ACP prompt (pydantic content blocks).

    Text, resource links and embedded text resources are understood; anything else is
    refused with :class:`UnsupportedContent` rather than silently dropped.
    """
    parts: list[str] = []
    for block in blocks:
        kind = getattr(block, "type", None)
        if kind == "text":
            parts.append(block.text)
        elif kind == "resource_link":
            label = block.title or block.name
            parts.append(f"[{label}]({block.uri})")
        elif kind == "resource":
            resource = block.resource
            text = getattr(resource, "text", None)
            if text is None:
                raise UnsupportedContent(
                    f"embedded binary resource {resource.uri!r} is not supported; send text resources or a resource link"
                )
            parts.append(f'<context uri="{resource.uri}">\n{text}\n</context>')
        else:
            raise UnsupportedContent(
                f"content block type {kind!r} is not supported by this agent "
                "(it accepts text, resource_link and embedded text resources)"
            )
    return "\n\n".join(p for p in parts if p)


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


def tool_end(call_id: str, result: Any, is_error: bool) -> dict[str, Any]:
    return {
        "sessionUpdate": "tool_call_update",
        "toolCallId": call_id,
        "status": "failed" if is_error else "completed",
        "content": [{"type": "content", "content": {"type": "text", "text": result_text(result)}}],
        "rawOutput": result,
    }


class TurnRecorder:
    """Builds the history messages of one turn from its events.

    Assistant text before a tool call becomes an assistant message carrying that call;
    a tool result becomes a ``tool`` message; trailing text a final assistant message.
    Extra keys (``reasoning``, ``name``, ``is_error``, ``result``) serve the replay.
    """

    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []
        self.text: list[str] = []
        self.reasoning: list[str] = []
        self._calls: dict[str, dict[str, Any]] = {}

    def add(self, event: Any) -> None:
        kind = type(event)
        if kind is TextDelta:
            self.text.append(event.text)
        elif kind is ReasoningDelta:
            self.reasoning.append(event.text)
        elif kind is ToolStarted:
            call = {"id": event.call_id, "name": event.name, "arguments": event.arguments}
            last = self.messages[-1] if self.messages else None
            if last is not None and last["role"] == "assistant" and last.get("tool_calls") and not self.text and not self.reasoning and self._calls_open(last):
                last["tool_calls"].append(call)
            else:
                self.messages.append({"role": "assistant", "content": self._take_text(), "tool_calls": [call], **self._take_reasoning()})
            self._calls[event.call_id] = call
        elif kind is ToolFinished:
            self.messages.append({
                "role": "tool", "content": result_text(event.result), "tool_call_id": event.call_id,
                "name": event.name, "is_error": bool(event.is_error), "result": event.result,
            })

    def add_rejected(self, call_id: str, name: str, arguments: Any, reason: str) -> None:
        """A tool call the user rejected before it ran (announced by the backend already, or not)."""
        if call_id not in self._calls:
            self.add(ToolStarted(call_id, name, arguments))
        self.add(ToolFinished(call_id, name, reason, True))

    def _calls_open(self, message: dict[str, Any]) -> bool:
        done = {m.get("tool_call_id") for m in self.messages if m["role"] == "tool"}
        return all(c["id"] not in done for c in message["tool_calls"])

    def _take_text(self) -> str:
        text = "".join(self.text)
        self.text.clear()
        return text

    def _take_reasoning(self) -> dict[str, Any]:
        if not self.reasoning:
            return {}
        text = "".join(self.reasoning)
        self.reasoning.clear()
        return {"reasoning": text}

    def mark(self) -> tuple[int, ...]:
        """Changes whenever the turn has progressed (for checkpoints)."""
        return (len(self.messages), len(self.text), len(self.reasoning), len(self._calls))

    def snapshot(self) -> list[dict[str, Any]]:
        """The turn so far as history messages, without ending it (a checkpoint)."""
        out = list(self.messages)
        text, reasoning = "".join(self.text), "".join(self.reasoning)
        if text or reasoning:
            out.append({"role": "assistant", "content": text, **({"reasoning": reasoning} if reasoning else {})})
        done = {m.get("tool_call_id") for m in out if m["role"] == "tool"}
        for call_id, call in self._calls.items():
            if call_id not in done:
                out.append({"role": "tool", "content": "interrupted", "tool_call_id": call_id, "name": call["name"],
                            "is_error": True, "result": "interrupted"})
        return out

    def finish(self, note: str = "") -> list[dict[str, Any]]:
        text = self._take_text() + note
        extra = self._take_reasoning()
        if text or extra:
            self.messages.append({"role": "assistant", "content": text, **extra})
        done = {m.get("tool_call_id") for m in self.messages if m["role"] == "tool"}
        for call_id, call in self._calls.items():  # close calls a cancel left open
            if call_id not in done:
                self.messages.append({
                    "role": "tool", "content": "cancelled", "tool_call_id": call_id, "name": call["name"],
                    "is_error": True, "result": "cancelled",
                })
        return self.messages


def replay(history: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """``session/update`` payloads that show a stored history again (session/load)."""
    for message in history:
        role = message.get("role")
        content = message.get("content") or ""
        if role == "user":
            if content:
                yield text_chunk("user_message_chunk", content)
        elif role == "assistant":
            if message.get("reasoning"):
                yield text_chunk("agent_thought_chunk", message["reasoning"])
            if content:
                yield text_chunk("agent_message_chunk", content)
            for call in message.get("tool_calls") or ():
                yield tool_start(call["id"], call["name"], call.get("arguments"), status="in_progress")
        elif role == "tool" and message.get("tool_call_id"):
            result = message.get("result", content)
            yield tool_end(message["tool_call_id"], result, bool(message.get("is_error")))
