"""The core events: the vocabulary every door translates from.

From backends: ``RunStarted``, ``TextDelta``, ``ReasoningDelta``, ``ToolStarted``,
``ToolFinished``, ``RunFinished``, ``RunFailed`` (the seven of the first port), and three
a backend may send besides: ``ReplyPart`` (a part of its reply that is not text: an
image it made, a file it wrote; :mod:`onedoor.content`), ``StateSnapshot`` and
``StateDelta`` (a change to the run's shared state: the whole JSON document, or an RFC
6902 JSON Patch; the kernel applies and checks each one, so a door only ever sees a state
that exists), and ``UsageReported`` (token usage so far; :mod:`onedoor.usage`). Two more
come from the kernel itself and only to doors that passed an asker to ``kernel.run``
(see :mod:`onedoor.questions.askers`): ``QuestionAsked`` and ``QuestionAnswered``.

A door that cannot show an event drops it: every door must, for an event it does not
know (later versions add some). ``RunFinished`` and ``RunFailed`` carry the run's
``usage`` (summed by the kernel, per model); ``ToolFinished`` may carry ``parts`` (a
tool's result that is more than text).

Events are frozen dataclasses. The classes of the four a backend may send besides are
made the first time anyone asks this module for one of them (or for ``Event``,
``EVENT_TYPES`` or ``TYPE_NAMES``, which then hold every kind), so a run that sends only
text does not pay for them at start-up; :func:`type_name` tells any event's kind.

Every event turns into a JSON object with a ``type`` field
(``event_to_dict`` / ``event_from_dict``) and back without loss; fields at their default
(no usage, no parts) are left out, and ``event_from_dict`` ignores fields it does not know,
so servers a version apart read each other's events.

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
import threading
from dataclasses import MISSING, dataclass, fields
from typing import TYPE_CHECKING, Any, Union

from .usage import ModelUsage, usage_from_json
from .wire import encode_json_text

if TYPE_CHECKING:
    from .content import Part
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
    parts: tuple[Part, ...] = ()  # a result that is more than text (an image a tool made)

    def result_text(self) -> str:
        if isinstance(self.result, str):
            return self.result
        return json.dumps(self.result, ensure_ascii=False)


@dataclass(frozen=True)
class RunFinished:
    run_id: str
    text: str
    stop_reason: str = STOP_END_TURN
    usage: tuple[ModelUsage, ...] = ()


@dataclass(frozen=True)
class RunFailed:
    run_id: str
    error: str
    usage: tuple[ModelUsage, ...] = ()


@dataclass(frozen=True)
class QuestionAsked:
    """The run needs an answer (from the kernel, never a backend)."""

    question: "Question"


@dataclass(frozen=True)
class QuestionAnswered:
    """A question of this run got its answer (from the kernel, never a backend)."""

    answer: "Answer"


TERMINAL_EVENTS = (RunFinished, RunFailed)

# kind -> class; the classes of the events only some runs send join on first use (below)
_TYPES: dict[str, type] = {
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
_NAMES: dict[type, str] = {}
_FIELDS: dict[type, tuple[str, ...]] = {}
_DEFAULTS: dict[type, dict[str, Any]] = {}


def _register(kind: str, cls: type) -> None:
    _FIELDS[cls] = tuple(f.name for f in fields(cls))
    _DEFAULTS[cls] = {f.name: f.default for f in fields(cls) if f.default is not MISSING}
    _TYPES[kind] = cls
    _NAMES[cls] = kind


for _kind, _cls in list(_TYPES.items()):
    _register(_kind, _cls)
del _kind, _cls

# The events only some runs send (onedoor._late_events), made the first time anyone asks
# for one of them, or for Event, EVENT_TYPES or TYPE_NAMES (which then hold every kind):
# a run that sends only text does not pay for their classes at start-up.
_LATE = {"ReplyPart": "reply_part", "StateSnapshot": "state_snapshot", "StateDelta": "state_delta",
         "UsageReported": "usage_reported"}
_LATE_KINDS = frozenset(_LATE.values())
_COMPLETE = ("Event", "EVENT_TYPES", "TYPE_NAMES")

if TYPE_CHECKING:
    from ._late_events import ReplyPart, StateDelta, StateSnapshot, UsageReported

    Event = Union[
        RunStarted, TextDelta, ReasoningDelta, ToolStarted, ToolFinished, RunFinished, RunFailed, QuestionAsked,
        QuestionAnswered, ReplyPart, StateSnapshot, StateDelta, UsageReported,
    ]
    EVENT_TYPES: dict[str, type]
    TYPE_NAMES: dict[type, str]


_LATE_LOCK = threading.Lock()  # a worker thread (a sync backend's set_state) may be the first to ask


def _define_late() -> None:
    """Make the late events' classes and publish them with the complete tables, once."""
    with _LATE_LOCK:
        if "ReplyPart" in globals():
            return
        from . import _late_events as late

        classes = {name: getattr(late, name) for name in _LATE}
        for name, cls in classes.items():
            _register(_LATE[name], cls)
        event = Union[(*_TYPES.values(),)]  # type: ignore[valid-type]  # the core kinds, then the late ones
        globals().update(classes, Event=event, EVENT_TYPES=_TYPES, TYPE_NAMES=_NAMES)


def __getattr__(name: str) -> Any:
    if name in _LATE or name in _COMPLETE:
        _define_late()
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LATE) | set(_COMPLETE))


def type_name(event: Any) -> str | None:
    """The kind of ``event`` as its JSON ``type`` says it (``"text_delta"``), or None for
    an object that is not an event. A door can tell the late kinds apart by it without
    asking for their classes."""
    return _NAMES.get(type(event))


def _json_value(value: Any) -> Any:
    if hasattr(value, "to_dict"):
        return value.to_dict()
    if isinstance(value, tuple):
        return [_json_value(item) for item in value]
    return value


def event_to_dict(event: Event) -> dict[str, Any]:
    """The JSON object of an event: ``{"type": "text_delta", "text": "…"}`` (fields left at
    their default of an empty usage or parts are left out)."""
    cls = type(event)
    out: dict[str, Any] = {"type": _NAMES[cls]}
    defaults = _DEFAULTS[cls]
    for name in _FIELDS[cls]:
        value = getattr(event, name)
        if value == () and defaults.get(name) == ():
            continue
        out[name] = _json_value(value)
    return out


def event_from_dict(data: dict[str, Any]) -> Event:
    """Rebuild an event from :func:`event_to_dict` output; raises ValueError if malformed.
    Fields it does not know are ignored (a newer server's additions)."""
    if not isinstance(data, dict):
        raise ValueError("an event must be a JSON object")
    kind = data.get("type")
    cls = _TYPES.get(kind)  # type: ignore[arg-type]
    if cls is None and kind in _LATE_KINDS:
        _define_late()
        cls = _TYPES[kind]  # type: ignore[index]
    if cls is None:
        raise ValueError(f"unknown event type {kind!r}")
    values = {k: data[k] for k in _FIELDS[cls] if k in data}
    try:
        _rebuild_fields(cls, values)
        return cls(**values)
    except TypeError as exc:
        raise ValueError(f"bad {kind} event: {exc}") from None


def _rebuild_fields(cls: type, values: dict[str, Any]) -> None:
    """The JSON forms of an event's structured fields turned back into objects."""
    if cls is QuestionAsked or cls is QuestionAnswered:
        from .questions import Answer, Question

        key, part = ("question", Question) if cls is QuestionAsked else ("answer", Answer)
        if key not in values:
            raise ValueError(f"bad {_NAMES[cls]} event: missing field")
        values[key] = part.from_dict(values[key])
    if "usage" in values:
        values["usage"] = usage_from_json(values["usage"])
    kind = _NAMES[cls]
    if "parts" in values or kind == "reply_part":
        from .content import part_from_dict  # (events with parts only)
    if "parts" in values:
        values["parts"] = tuple(part_from_dict(p) for p in values["parts"] or ())
    if kind == "reply_part" and "part" in values:
        values["part"] = part_from_dict(values["part"])
    if kind == "state_delta" and "ops" in values:
        if not isinstance(values["ops"], list):
            raise ValueError("bad state_delta event: ops must be a list")
        values["ops"] = tuple(values["ops"])


def event_to_json(event: Event) -> str:
    """Compact JSON text that always encodes to UTF-8: a lone surrogate (half of an emoji a
    backend split across two deltas) is written as a ``\\u`` escape, losslessly."""
    return encode_json_text(event_to_dict(event))


def event_from_json(text: str | bytes) -> Event:
    return event_from_dict(json.loads(text))
