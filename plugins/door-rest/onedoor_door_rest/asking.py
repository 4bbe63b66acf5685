"""Human in the loop for the REST door: suspended runs, their questions, and resuming them.

The door passes a :class:`onedoor.SuspendAsker` to every run. When a backend asks,
the response (JSON or SSE) ends with the question and ``stop_reason`` ``suspended``, and
the run waits, parked in the kernel, for ``POST <prefix>/runs/{run_id}/answers``. Two
door-side pieces make that safe:

- :class:`QuestionLedger` remembers which run each question this door handed out belongs
  to, so a resume names the run it means and answers for another run are refused (404)
  before the kernel answers anything;
- :class:`ResponseRun` is the run as one response sees it: once that response has carried
  a question, the response ending or its client going away no longer cancels the run (it
  is parked, and a later request continues it). Server shutdown still ends parked runs:
  the kernel cancels them itself.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from onedoor.questions import Question, QuestionError, clip

# (status, error code) per QuestionError reason
QUESTION_ERRORS: dict[str, tuple[int, str]] = {
    "unknown": (404, "unknown_question"),
    "expired": (410, "question_expired"),
    "answered": (409, "already_answered"),
    "invalid": (422, "invalid_answer"),
}

_LEDGER_SIZE = 10_000  # question ids remembered (open or recently closed), oldest dropped first


class QuestionLedger:
    """Question id -> the run it belongs to, for every question this door has sent out."""

    def __init__(self, size: int = _LEDGER_SIZE) -> None:
        self.size = size
        self._owner: OrderedDict[str, str] = OrderedDict()

    def note(self, question: Question) -> None:
        self._owner[question.id] = question.run_id
        self._owner.move_to_end(question.id)
        while len(self._owner) > self.size:
            self._owner.popitem(last=False)

    def owner(self, question_id: str) -> str | None:
        return self._owner.get(question_id)

    def check(self, run_id: str, question_ids: list[str], open_ids: set[str]) -> None:
        """QuestionError("unknown") unless every id names a question of ``run_id``: one it
        waits for now (``open_ids``, from the kernel: never forgotten), or one this door
        handed out for it (then the kernel says why it is closed)."""
        for question_id in question_ids:
            if question_id not in open_ids and self._owner.get(question_id) != run_id:
                raise QuestionError("unknown", f"run {clip(run_id)} has no question {clip(question_id)}")


class ResponseRun:
    """A kernel RunStream as one response hands it around (to the SSE pump, to the
    disconnect watcher): iteration is the stream's own; ``cancel`` does nothing once this
    response has carried a question (``asked``), because the run is then parked."""

    __slots__ = ("run", "asked")

    def __init__(self, run: Any) -> None:
        self.run = run
        self.asked = False

    @property
    def run_id(self) -> str:
        return str(self.run.run_id)

    @property
    def outcome(self) -> Any:
        return self.run.outcome

    def __aiter__(self) -> Any:
        return self.run.__aiter__()

    async def __aenter__(self) -> "ResponseRun":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.run.aclose()  # the kernel leaves a parked run parked

    def cancel(self, grace: float | None = None) -> None:
        if not self.asked:
            self.run.cancel(grace)


def question_error_parts(exc: QuestionError) -> tuple[int, str, str]:
    status, code = QUESTION_ERRORS.get(exc.reason, (422, "invalid_answer"))
    return status, code, str(exc)


__all__ = ["QUESTION_ERRORS", "QuestionLedger", "ResponseRun", "question_error_parts"]
