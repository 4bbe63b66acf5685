"""The core events: the vocabulary every door translates from.

Seven events come from backends. Two more come from the kernel itself and only to doors
that passed an asker to ``kernel.run`` (see :mod:`onedoor.questions.askers`): ``QuestionAsked``
(the run needs a person's answer) and ``QuestionAnswered`` (it got one, from a person,
a policy, or because it expired or was cancelled). A backend never sends those two.

Events are frozen, slotted dataclasses. Every event turns into a JSON object with a
``type`` field (``event_to_dict`` / ``event_from_dict``) and back without loss.

Stop reasons for :class:`RunFinished`:

``end_turn``       the agent finished its reply
``cancelled``      a client or the kernel stopped the run
``max_turns``      the backend hit its own step limit
``pending_tools``  the run waits for client-side (frontend) tools to return results;
                   the calls named in :class:`ToolStarted` for those tools stay open
``suspended``      this response ends with open questions (the ``QuestionAsked`` just
                   before); the run is parked in the kernel until ``kernel.resume``
                   (only with a ``SuspendAsker``)
"""

from __future__ import annotations

import json
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, Union

from .wire import encode_json_text

if TYPE_CHECKING:
    from .questions import Answer, Question

STOP_END_TURN = "end_turn"
STOP_CANCELLED = "cancelled"
STOP_MAX_TURNS = "max_turns"
STOP_PENDING_TOOLS = "pending_tools"
STOP_SUSPENDED = "suspended"


@dataclass(frozen=True)
class RunStarted:
    run_id: str


@dataclass(frozen=True)
class TextDelta:
    text: str


@dataclass(frozen=True)
class ReasoningDelta:
    text: str


@dataclass(frozen=True)
class ToolStarted:
    call_id: str
    name: str
    arguments: Any  # a JSON value, usually an object


@dataclass(frozen=True)
class ToolFinished:
    call_id: str
    name: str
    result: Any  # a JSON value; doors that need text use result_text()
    is_error: bool = False

    def result_text(self) -> str:
        if isinstance(self.result, str):
            return self.result
        return json.dumps(self.result, ensure_ascii=False)


@dataclass(frozen=True)
class RunFinished:
    run_id: str
    text: str
    stop_reason: str = STOP_END_TURN


@dataclass(frozen=True)
class RunFailed:
    run_id: str
    error: str


@dataclass(frozen=True)
class QuestionAsked:
    """The run needs an answer (from the kernel, never a backend)."""

    question: "Question"


@dataclass(frozen=True)
class QuestionAnswered:
    """A question of this run got its answer (from the kernel, never a backend)."""

    answer: "Answer"


Event = Union[
    RunStarted, TextDelta, ReasoningDelta, ToolStarted, ToolFinished, RunFinished, RunFailed, QuestionAsked, QuestionAnswered
]
TERMINAL_EVENTS = (RunFinished, RunFailed)

EVENT_TYPES: dict[str, type] = {
    "run_started": RunStarted,
    "text_delta": TextDelta,
    "reasoning_delta": ReasoningDelta,
    "tool_started": ToolStarted,
    "tool_finished": ToolFinished,
    "run_finished": RunFinished,
    "run_failed": RunFailed,
    "question_asked": QuestionAsked,
    "question_answered": QuestionAnswered,
}
TYPE_NAMES: dict[type, str] = {cls: name for name, cls in EVENT_TYPES.items()}
_FIELDS: dict[type, tuple[str, ...]] = {
    cls: tuple(f.name for f in fields(cls)) for cls in EVENT_TYPES.values()
}


def event_to_dict(event: Event) -> dict[str, Any]:
    """The JSON object of an event: ``{"type": "text_delta", "text": "…"}``."""
    cls = type(event)
    out: dict[str, Any] = {"type": TYPE_NAMES[cls]}
    for name in _FIELDS[cls]:
        value = getattr(event, name)
        out[name] = value.to_dict() if hasattr(value, "to_dict") else value
    return out


def event_from_dict(data: dict[str, Any]) -> Event:
    """Rebuild an event from :func:`event_to_dict` output; raises ValueError if malformed."""
    if not isinstance(data, dict):
        raise ValueError("an event must be a JSON object")
    kind = data.get("type")
    cls = EVENT_TYPES.get(kind)  # type: ignore[arg-type]
    if cls is None:
        raise ValueError(f"unknown event type {kind!r}")
    names = _FIELDS[cls]
    extra = set(data) - set(names) - {"type"}
    if extra:
        raise ValueError(f"unexpected fields for {kind}: {sorted(extra)}")
    values = {k: data[k] for k in names if k in data}
    if cls is QuestionAsked or cls is QuestionAnswered:
        from .questions import Answer, Question

        if not values:
            raise ValueError(f"bad {kind} event: missing field")
        key, part = ("question", Question) if cls is QuestionAsked else ("answer", Answer)
        values[key] = part.from_dict(values[key])
    try:
        return cls(**values)
    except TypeError as exc:
        raise ValueError(f"bad {kind} event: {exc}") from None


def event_to_json(event: Event) -> str:
    """Compact JSON text that always encodes to UTF-8: a lone surrogate (half of an emoji a
    backend split across two deltas) is written as a ``\\u`` escape, losslessly."""
    return encode_json_text(event_to_dict(event))


def event_from_json(text: str | bytes) -> Event:
    return event_from_dict(json.loads(text))
