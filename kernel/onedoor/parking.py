"""Parked runs: runs whose response ended with open questions (``SuspendAsker``).

A parked run keeps its backend (blocked in ``ask``) and its slot. The lot indexes its
open questions by id, so that ``kernel.resume(answers)`` finds the run from the answers
alone, checks that the caller is the run's principal (another principal's question
looks exactly like an unknown one), and remembers recently closed questions so a late or
second answer gets ``expired`` or ``answered`` instead of ``unknown``. Each parked run
has a timer for its questions' expiry. Internal to the kernel.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from typing import TYPE_CHECKING, Any, Iterable

from .questions import Answer, Question, QuestionError, clip

if TYPE_CHECKING:
    from .kernel import RunStream

_CLOSED_MEMORY = 10_000  # closed question ids remembered, for clear errors on late answers


class ParkingLot:
    def __init__(self) -> None:
        self.parked: dict[str, "RunStream"] = {}  # run_id -> the retired stream of a parked run
        self.questions: dict[str, "RunStream"] = {}  # open parked question id -> its run's stream
        self.closed: OrderedDict[str, tuple[str, str]] = OrderedDict()  # question id -> (principal, why)
        self.timers: dict[str, asyncio.TimerHandle] = {}
        self.drains: set[asyncio.Task] = set()  # parked runs being driven to their end with no reader

    def __len__(self) -> int:
        return len(self.parked)

    # -- questions ---------------------------------------------------------------------
    def question_opened(self, stream: "RunStream", question: Question) -> None:
        self.questions[question.id] = stream

    def question_closed(self, stream: "RunStream", question: Question, answer: Answer) -> None:
        """Record a question's end (called again when its backend wakes: the first record stays)."""
        self.questions.pop(question.id, None)
        if question.id in self.closed:
            return
        why = answer.how if answer.how in ("expired", "cancelled") else f"answered: {answer.outcome}"
        self.closed[question.id] = (stream.principal, why)
        while len(self.closed) > _CLOSED_MEMORY:
            self.closed.popitem(last=False)

    # -- runs --------------------------------------------------------------------------
    def park(self, stream: "RunStream", expires_at: float | None) -> None:
        self.parked[stream.run_id] = stream
        if expires_at is not None:
            loop = asyncio.get_running_loop()
            delay = max(0.0, expires_at - time.time())
            self.timers[stream.run_id] = loop.call_later(delay, stream._expire)

    def waiting_on(self, thread_id: str) -> list[str]:
        """Open questions of the parked runs writing ``thread_id``."""
        return [qid for qid, stream in self.questions.items()
                if stream.thread is not None and stream.thread.id == thread_id and stream.run_id in self.parked]

    def unpark(self, stream: "RunStream") -> None:
        self.parked.pop(stream.run_id, None)
        timer = self.timers.pop(stream.run_id, None)
        if timer is not None:
            timer.cancel()

    def status(self, question_id: str, principal: str) -> str:
        """``open``, ``expired``, ``answered`` or ``unknown`` (also another principal's)."""
        owner = self.questions.get(question_id)
        if owner is not None:
            return "open" if owner.principal == principal else "unknown"
        closed = self.closed.get(question_id)
        if closed is None or closed[0] != principal:
            return "unknown"
        return "answered" if closed[1].startswith("answered") else "expired"

    def find(self, answers: Iterable[Answer], principal: str) -> "RunStream":
        """The parked run these answers belong to; QuestionError if there is none."""
        stream: "RunStream | None" = None
        for answer in answers:
            owner = self.questions.get(answer.question_id)
            if owner is None or owner.principal != principal:
                closed = self.closed.get(answer.question_id)
                if closed is not None and closed[0] == principal:
                    reason = "answered" if closed[1].startswith("answered") else "expired"  # cancelled: gone too
                    raise QuestionError(reason, f"question {clip(answer.question_id)} is closed ({closed[1]})")
                raise QuestionError("unknown", f"no open question {clip(answer.question_id)}")
            if stream is not None and owner is not stream:
                raise QuestionError("invalid", "the answers belong to different runs; resume one run at a time")
            stream = owner
        if stream is None:
            raise QuestionError("invalid", "a resume needs at least one answer")
        current = self.parked.get(stream.run_id)
        if current is None:
            raise QuestionError("unknown", f"run {stream.run_id!r} is not waiting for answers (its response is still open)")
        return current

    def drain(self, task: asyncio.Task[Any]) -> None:
        self.drains.add(task)
        task.add_done_callback(self.drains.discard)
