"""The backend contract, checked event by event.

Rules: RunStarted comes first and once; ToolFinished closes a ToolStarted with the same
call_id (and name); exactly one terminal event (RunFinished or RunFailed) ends the
stream and nothing follows it; at RunFinished no tool call is open, except calls to
client tools when stop_reason is ``pending_tools``; RunFinished.text equals the
concatenated TextDeltas; state changes and usage may come before RunStarted too (a backend
calling ``context.set_state`` before it yields anything); a ReplyPart holds a :class:`~onedoor.content.Part`, a
StateSnapshot a JSON object, a StateDelta a list of patch operations (whether they apply
is the kernel's check, against the run's state), usage is a tuple of
:class:`~onedoor.usage.ModelUsage`. The kernel uses this on every run; ``onedoor.testing`` uses it
to check a backend in isolation.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from ..errors import ContractViolation
from ..events import (
    STOP_PENDING_TOOLS,
    ReasoningDelta,
    RunFailed,
    RunFinished,
    RunStarted,
    TextDelta,
    ToolFinished,
    ToolStarted,
    type_name,
)
from ..usage import ModelUsage

if TYPE_CHECKING:
    from ..events import ReplyPart, StateDelta, StateSnapshot, UsageReported


class Contract:
    """One run's contract state: call :meth:`check` (or :meth:`pass_text` first) on each event."""

    __slots__ = ("started", "ended", "open_tools", "parts", "is_client_tool", "_mid_run", "_add_part")

    def __init__(self, is_client_tool: Callable[[str], bool] | None = None) -> None:
        self.started = False
        self.ended = False
        self.open_tools: dict[str, str] = {}
        self.parts: list[str] = []
        self.is_client_tool = is_client_tool or (lambda name: False)
        self._mid_run = False  # started and not ended: what the fast path needs to know
        self._add_part = self.parts.append

    @property
    def text(self) -> str:
        return "".join(self.parts)

    def pass_text(self, event: Any) -> bool:
        """The fast path for the commonest event, a TextDelta in mid-run: record it, True.

        Anything else returns False and goes through :meth:`check`, which enforces every
        rule (a TextDelta before RunStarted or after the end, a text that is no string).
        """
        if type(event) is TextDelta and self._mid_run:
            text = event.text
            if type(text) is str:
                self._add_part(text)
                return True
        return False

    def check(self, event: Any) -> None:
        """Raise ContractViolation if ``event`` may not come next; record it otherwise."""
        kind = type(event)
        if self.ended:
            raise ContractViolation(f"backend sent {kind.__name__} after the run had ended")
        if not self.started:
            if kind is RunStarted:
                self.started = self._mid_run = True
                return
            late = type_name(event)
            if late in _ANY_TIME:  # a state change or usage sent through the run context, before the first yield
                _LATE_RULES[late](self, event)
                return
            raise ContractViolation(f"backend sent {kind.__name__} before RunStarted")
        rule = _RULES.get(kind) or _late_rule(event)
        if rule is None:
            if kind is RunStarted:
                raise ContractViolation("backend sent RunStarted twice")
            raise ContractViolation(f"backend sent {kind.__name__!s}, which is not a core event")
        rule(self, event)

    # -- one rule per kind of event, after RunStarted ----------------------------------
    def _text(self, event: TextDelta) -> None:
        if not isinstance(event.text, str):
            raise ContractViolation("TextDelta.text must be a string")
        self.parts.append(event.text)

    def _reasoning(self, event: ReasoningDelta) -> None:
        if not isinstance(event.text, str):
            raise ContractViolation("ReasoningDelta.text must be a string")

    def _tool_started(self, event: ToolStarted) -> None:
        if not event.call_id or not isinstance(event.call_id, str):
            raise ContractViolation("ToolStarted needs a non-empty string call_id")
        if event.call_id in self.open_tools:
            raise ContractViolation(f"tool call {event.call_id!r} started twice")
        self.open_tools[event.call_id] = event.name

    def _tool_finished(self, event: ToolFinished) -> None:
        if self.open_tools.pop(event.call_id, None) is None:
            raise ContractViolation(f"ToolFinished for tool call {event.call_id!r}, which was not open")
        if event.parts:
            from ..content import Part  # (loaded already by whoever made the parts)

            if not all(isinstance(p, Part) for p in event.parts):
                raise ContractViolation("ToolFinished.parts must hold onedoor.content.Part objects")

    def _run_finished(self, event: RunFinished) -> None:
        self._check_finished(event)
        _check_usage(event.usage)
        self.ended, self._mid_run = True, False

    def _run_failed(self, event: RunFailed) -> None:
        _check_usage(event.usage)
        self.ended, self._mid_run = True, False

    def _reply_part(self, event: ReplyPart) -> None:
        from ..content import Part

        if not isinstance(event.part, Part) or event.part.kind == "text":
            raise ContractViolation("ReplyPart needs a Part that is not text (text goes in TextDelta)")

    def _state_snapshot(self, event: StateSnapshot) -> None:
        if not isinstance(event.state, dict):
            raise ContractViolation("StateSnapshot.state must be a JSON object")

    def _state_delta(self, event: StateDelta) -> None:
        if not isinstance(event.ops, (list, tuple)) or not all(isinstance(op, dict) for op in event.ops):
            raise ContractViolation("StateDelta.ops must be a list of JSON Patch operations (objects)")

    def _usage(self, event: UsageReported) -> None:
        _check_usage(event.usage)

    def _check_finished(self, event: RunFinished) -> None:
        if self.open_tools:
            if event.stop_reason != STOP_PENDING_TOOLS or not all(
                self.is_client_tool(name) for name in self.open_tools.values()
            ):
                ids = ", ".join(sorted(self.open_tools))
                raise ContractViolation(f"backend finished the run with tool call(s) still open: {ids}")
        if not isinstance(event.text, str) or event.text != self.text:
            raise ContractViolation("RunFinished.text is not the concatenation of the TextDeltas")

    def close_open_tools(self, reason: str) -> list[ToolFinished]:
        """ToolFinished events (errors) for every open call, in start order."""
        closing = [ToolFinished(cid, name, reason, True) for cid, name in self.open_tools.items()]
        self.open_tools.clear()
        return closing


_ANY_TIME = ("state_snapshot", "state_delta", "usage_reported")  # kinds that may come before RunStarted


def _check_usage(usage: Any) -> None:
    if not isinstance(usage, tuple) or not all(isinstance(u, ModelUsage) for u in usage):
        raise ContractViolation("usage must be a tuple of onedoor.usage.ModelUsage")


_RULES: dict[type, Callable[[Contract, Any], None]] = {
    TextDelta: Contract._text,
    ReasoningDelta: Contract._reasoning,
    ToolStarted: Contract._tool_started,
    ToolFinished: Contract._tool_finished,
    RunFinished: Contract._run_finished,
    RunFailed: Contract._run_failed,
}

# The events only some runs send, by kind: their classes are made on first use
# (onedoor.events), and join the table above the first time one comes.
_LATE_RULES: dict[str | None, Callable[[Contract, Any], None]] = {
    "reply_part": Contract._reply_part,
    "state_snapshot": Contract._state_snapshot,
    "state_delta": Contract._state_delta,
    "usage_reported": Contract._usage,
}


def _late_rule(event: Any) -> Callable[[Contract, Any], None] | None:
    rule = _LATE_RULES.get(type_name(event))
    if rule is not None:
        _RULES[type(event)] = rule
    return rule
