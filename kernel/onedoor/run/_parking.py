"""Parked runs: runs whose response ended with open questions (``SuspendAsker``).

A parked run keeps its backend (blocked in ``ask``) and its slot. The lot indexes its
open questions by id, so that ``kernel.resume(answers)`` finds the run from the answers
alone, checks that the caller is the run's principal (another principal's question
looks exactly like an unknown one), and remembers recently closed questions so a late or
second answer gets ``expired`` or ``answered`` instead of ``unknown``. Each parked run
has a timer for its questions' expiry. It holds runs (their :class:`~onedoor.run._core.RunCore`:
anything with ``run_id``, ``principal`` and ``thread``), never their streams. Internal to
the kernel.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from typing import Any, Callable, Iterable

from ..questions import Answer, Question, QuestionError, clip

_CLOSED_MEMORY = 10_000  # closed question ids remembered, for clear errors on late answers


class ParkingLot:
    def __init__(self) -> None:
        self.parked: dict[str, Any] = {}  # run_id -> a parked run
        self.questions: dict[str, Any] = {}  # open parked question id -> its run
        self.closed: OrderedDict[str, tuple[str, str, str]] = OrderedDict()  # question id -> (principal, why, run id)
        self.timers: dict[str, asyncio.TimerHandle] = {}
        self.drains: set[asyncio.Task] = set()  # parked runs being driven to their end with no reader

    def __len__(self) -> int:
        return len(self.parked)

    # -- questions ---------------------------------------------------------------------
    def question_opened(self, run: Any, question: Question) -> None:
        self.questions[question.id] = run

    def question_closed(self, run: Any, question: Question, answer: Answer) -> None:
        """Record a question's end (called again when its backend wakes: the first record stays)."""
        self.questions.pop(question.id, None)
        if question.id in self.closed:
            return
        why = answer.how if answer.how in ("expired", "cancelled") else f"answered: {answer.outcome}"
        self.closed[question.id] = (run.principal, why, run.run_id)
        while len(self.closed) > _CLOSED_MEMORY:
            self.closed.popitem(last=False)

    # -- runs --------------------------------------------------------------------------
    def park(self, run: Any, expires_at: float | None, on_expiry: Callable[[], None]) -> None:
        self.parked[run.run_id] = run
        if expires_at is not None:
            loop = asyncio.get_running_loop()
            delay = max(0.0, expires_at - time.time())
            self.timers[run.run_id] = loop.call_later(delay, on_expiry)

    def waiting_on(self, thread_id: str) -> list[str]:
        """Open questions of the parked runs writing ``thread_id``."""
        return [qid for qid, run in self.questions.items()
                if run.thread is not None and run.thread.id == thread_id and run.run_id in self.parked]

    def unpark(self, run: Any) -> None:
        self.parked.pop(run.run_id, None)
        timer = self.timers.pop(run.run_id, None)
        if timer is not None:
            timer.cancel()

    def status(self, question_id: str, principal: str, run_id: str | None = None) -> str:
        """``open``, ``expired``, ``answered`` or ``unknown`` (also another principal's, and
        with ``run_id`` another run's)."""
        owner = self.questions.get(question_id)
        if owner is not None:
            return "open" if owner.principal == principal and run_id in (None, owner.run_id) else "unknown"
        closed = self.closed.get(question_id)
        if closed is None or closed[0] != principal or run_id not in (None, closed[2]):
            return "unknown"
        return "answered" if closed[1].startswith("answered") else "expired"

    def locate(self, question_id: str, principal: str) -> tuple[str, Question | None] | None:
        """(run id, the question) of an open parked question of ``principal``; (run id,
        None) for one closed recently; None for any other (another principal's alike)."""
        owner = self.questions.get(question_id)
        if owner is not None:
            if owner.principal != principal:
                return None
            question = next((q for q in owner.gate.open_questions() if q.id == question_id), None)
            return owner.run_id, question
        closed = self.closed.get(question_id)
        return (closed[2], None) if closed is not None and closed[0] == principal else None

    def find(self, answers: Iterable[Answer], principal: str, run_id: str | None = None) -> Any:
        """The parked run these answers belong to; QuestionError if there is none. With
        ``run_id``, a question of any other run is ``unknown`` too."""
        found: Any = None
        for answer in answers:
            owner = self.questions.get(answer.question_id)
            if owner is None or owner.principal != principal or (run_id is not None and owner.run_id != run_id):
                closed = self.closed.get(answer.question_id)
                if closed is not None and closed[0] == principal and run_id in (None, closed[2]):
                    reason = "answered" if closed[1].startswith("answered") else "expired"  # cancelled: gone too
                    raise QuestionError(reason, f"question {clip(answer.question_id)} is closed ({closed[1]})")
                where = f"run {clip(run_id)} has" if run_id is not None else "there is"
                raise QuestionError("unknown", f"{where} no open question {clip(answer.question_id)}")
            if found is not None and owner is not found:
                raise QuestionError("invalid", "the answers belong to different runs; resume one run at a time")
            found = owner
        if found is None:
            raise QuestionError("invalid", "a resume needs at least one answer")
        if self.parked.get(found.run_id) is not found:
            raise QuestionError("unknown", f"run {found.run_id!r} is not waiting for answers (its response is still open)")
        return found

    def drain(self, task: asyncio.Task[Any]) -> None:
        self.drains.add(task)
        task.add_done_callback(self.drains.discard)
