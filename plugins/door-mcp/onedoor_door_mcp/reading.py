"""Reading one run's events into a tool result: progress while it goes on, the outcome at its end.

:class:`Reading` takes the events of a run one at a time, from its stream (a call that
asks by elicitation or by policy) or from its journal (a call that asks by
multi-round-trip requests, whose events may be replayed from earlier rounds: those are
read again for the result, and ``live=False`` keeps their progress from going out twice).
"""

from __future__ import annotations

import json
from typing import Any

from onedoor import (
    STOP_CANCELLED,
    Part,
    QuestionAnswered,
    QuestionAsked,
    ReplyPart,
    RunFailed,
    RunFinished,
    TextDelta,
    ToolFinished,
    ToolStarted,
)
from onedoor.usage import usage_to_json

from .answers import AnswerLog
from .blocks import block_of
from .sdk import Outcome, Progress

META_KIND = "onedoor/event"  # key in a progress notification's _meta: text, part, tool_started, tool_finished
USAGE_META = "onedoor/usage"  # key in a result's _meta: the run's token usage


def _short(value: Any, limit: int = 200) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"


class Reading:
    """The parts, questions and answers of one run read so far, and its progress sender."""

    def __init__(self, run_id: str, progress: Progress | None, answers: AnswerLog, progress_tools: bool) -> None:
        self.run_id = run_id
        self.progress = progress
        self.sending = progress is not None
        self.answers = answers
        self.progress_tools = progress_tools
        self.parts: list[Part] = []  # the reply's and the tools' parts, in the order they came
        self.asked: list[Any] = []  # questions asked since the last ending read (open ones, at a suspension)

    async def take(self, event: Any, live: bool = True, cancelled: bool = False) -> Outcome | None:
        """Read ``event``; the outcome once it is a terminal event. ``live``: progress may go
        out for it (not for an event of an earlier round); ``cancelled``: the run is being
        cancelled (nothing more goes out)."""
        kind = type(event)
        sending = self.sending and live and not cancelled
        if kind is TextDelta:
            if sending and event.text:
                await self._send(event.text, {META_KIND: "text"})
        elif kind is ReplyPart:
            self.parts.append(event.part)
            if sending:
                await self._send(event.part.describe() + "\n", {META_KIND: "part"})
        elif kind is ToolStarted:
            if sending and self.progress_tools:
                await self._send(f"[tool {event.name} {_short(event.arguments)}]\n",
                                 {META_KIND: "tool_started", "call_id": event.call_id, "name": event.name})
        elif kind is ToolFinished:
            self.parts.extend(event.parts)
            if sending and self.progress_tools:
                mark = "failed" if event.is_error else "->"
                await self._send(
                    f"[tool {event.name} {mark} {_short(event.result)}]\n",
                    {META_KIND: "tool_finished", "call_id": event.call_id, "name": event.name, "is_error": event.is_error},
                )
        elif kind is QuestionAsked:
            self.answers.asked(event.question)
            self.asked.append(event.question)
        elif kind is QuestionAnswered:
            self.answers.answered(event.answer)
            self.asked = [q for q in self.asked if q.id != event.answer.question_id]
        elif kind is RunFinished or kind is RunFailed:
            return ending(event, tuple(block_of(p, self.run_id, i) for i, p in enumerate(self.parts)))
        return None

    async def _send(self, message: str, meta: dict[str, Any]) -> None:
        try:
            await self.progress.send(message, meta)  # type: ignore[union-attr]
        except Exception:  # noqa: BLE001 - the client's stream is gone: finish the run quietly
            self.sending = False


def ending(event: RunFinished | RunFailed, blocks: tuple[dict[str, Any], ...]) -> Outcome:
    """The outcome of a run's terminal event; its usage in ``_meta`` (and the structured
    content of a reply), its parts as blocks after the text."""
    usage = usage_to_json(event.usage)
    meta = {USAGE_META: usage} if usage else None
    if isinstance(event, RunFailed):
        return Outcome(f"The agent run failed: {event.error}", is_error=True, blocks=blocks, meta=meta)
    if event.stop_reason == STOP_CANCELLED:
        return Outcome(f"The run was cancelled. Partial reply: {event.text}", is_error=True, blocks=blocks, meta=meta)
    structured: dict[str, Any] = {"reply": event.text}
    if usage:
        structured["usage"] = usage
    return Outcome(event.text, structured=structured, blocks=blocks, meta=meta)


__all__ = ["META_KIND", "USAGE_META", "Reading", "ending"]
