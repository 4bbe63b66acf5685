"""The backend contract, checked event by event.

Rules: RunStarted comes first and once; ToolFinished closes a ToolStarted with the same
call_id (and name); exactly one terminal event (RunFinished or RunFailed) ends the
stream and nothing follows it; at RunFinished no tool call is open, except calls to
client tools when stop_reason is ``pending_tools``; RunFinished.text equals the
concatenated TextDeltas. The kernel uses this on every run; ``onedoor.testing`` uses it
to check a backend in isolation.
"""

from __future__ import annotations

from typing import Any, Callable

from .errors import ContractViolation
from .events import (
    STOP_PENDING_TOOLS,
    ReasoningDelta,
    RunFailed,
    RunFinished,
    RunStarted,
    TextDelta,
    ToolFinished,
    ToolStarted,
)


class Contract:
    __slots__ = ("started", "ended", "open_tools", "parts", "is_client_tool")

    def __init__(self, is_client_tool: Callable[[str], bool] | None = None) -> None:
        self.started = False
        self.ended = False
        self.open_tools: dict[str, str] = {}
        self.parts: list[str] = []
        self.is_client_tool = is_client_tool or (lambda name: False)

    @property
    def text(self) -> str:
        return "".join(self.parts)

    def check(self, event: Any) -> None:
        """Raise ContractViolation if ``event`` may not come next; record it otherwise."""
        kind = type(event)
        if self.ended:
            raise ContractViolation(f"backend sent {kind.__name__} after the run had ended")
        if not self.started:
            if kind is not RunStarted:
                raise ContractViolation(f"backend sent {kind.__name__} before RunStarted")
            self.started = True
            return
        if kind is TextDelta:
            if not isinstance(event.text, str):
                raise ContractViolation("TextDelta.text must be a string")
            self.parts.append(event.text)
        elif kind is ReasoningDelta:
            if not isinstance(event.text, str):
                raise ContractViolation("ReasoningDelta.text must be a string")
        elif kind is ToolStarted:
            if not event.call_id or not isinstance(event.call_id, str):
                raise ContractViolation("ToolStarted needs a non-empty string call_id")
            if event.call_id in self.open_tools:
                raise ContractViolation(f"tool call {event.call_id!r} started twice")
            self.open_tools[event.call_id] = event.name
        elif kind is ToolFinished:
            name = self.open_tools.pop(event.call_id, None)
            if name is None:
                raise ContractViolation(f"ToolFinished for tool call {event.call_id!r}, which was not open")
        elif kind is RunFinished:
            self._check_finished(event)
            self.ended = True
        elif kind is RunFailed:
            self.ended = True
        elif kind is RunStarted:
            raise ContractViolation("backend sent RunStarted twice")
        else:
            raise ContractViolation(f"backend sent {kind.__name__!s}, which is not a core event")

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
