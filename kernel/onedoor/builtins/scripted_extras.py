"""What the scripted backend does with content, state and usage: it describes the parts it
received, changes the state as its ``/state`` directives say, makes an image for
``/image`` and ``/draw``, and counts what it can (words in, deltas out)."""

from __future__ import annotations

import base64
import json
from typing import TYPE_CHECKING, Any, Sequence

from .. import events as _events  # the state events' classes are made on first use
from ..messages import Message
from ..state import apply_patch
from ..usage import ModelUsage

if TYPE_CHECKING:
    from ..content import Part
    from ..events import Event

# a 1x1 transparent PNG: what /image and /draw send
DOT_PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)

def json_prefix(text: str) -> tuple[Any, str]:
    """The JSON value at the start of ``text`` and what follows it (None when there is none)."""
    text = text.lstrip()
    try:
        value, end = json.JSONDecoder().raw_decode(text)
    except json.JSONDecodeError:
        return None, text
    return value, text[end:]


def state_change(value: Any) -> Event:
    if isinstance(value, dict):
        return _events.StateSnapshot(value)
    return _events.StateDelta(tuple(value) if isinstance(value, list) else (value,))  # the kernel refuses a bad one


def changed(state: Any, event: Event) -> Any:
    """The state after a change (what the kernel will hold; a change it refuses ends the run)."""
    if isinstance(event, _events.StateSnapshot):
        return event.state
    try:
        return apply_patch(state or {}, list(event.ops))  # type: ignore[union-attr]
    except ValueError:
        return state


def describe_parts(parts: Sequence[Part]) -> str:
    """What arrived, in one line: "1 image (image/png, 1,234 bytes, cat.png); 1 resource (…)"."""
    counts: dict[str, list[str]] = {}
    for part in parts:
        if part.kind == "text":
            continue
        what = [part.media_type or ""]
        if part.data is not None or part.text is not None:
            what.append(f"{part.byte_size:,} bytes")
        if part.uri:
            what.append(part.uri + (f" lines {part.lines[0]}-{part.lines[1]}" if part.lines else ""))
        if part.name:
            what.append(part.name)
        counts.setdefault(part.kind, []).append(", ".join(w for w in what if w))
    return "; ".join(f"{len(items)} {kind} ({'; '.join(items)})" for kind, items in counts.items())


class Usage:
    """What a scripted run can count: words in (message and history), deltas out."""

    def __init__(self, message: str, history: Sequence[Message]) -> None:
        self.input = len(message.split()) + sum(len(m.content.split()) for m in history)

    def of(self, deltas: int) -> tuple[ModelUsage, ...]:
        return (ModelUsage("scripted", "onedoor", self.input, deltas, requests=1),)


__all__ = ["DOT_PNG", "Usage", "changed", "describe_parts", "json_prefix", "state_change"]
