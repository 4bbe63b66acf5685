"""Answers to a run parked on another server, through the store that shares its journal.

A store that shares journals and has the two methods of :class:`AnswerStore` lets any
server answer a parked run (``kernel.answer``):

- the answering server checks the answers against the run's journal in the store, as the
  run's own server would (its last event is the ``suspended`` ending, each answer names
  one of its open questions, QuestionAsked with no QuestionAnswered yet, of that
  principal, and fits it), and leaves them in the store with ``journal_answer``: a
  compare-and-set that holds one batch per run, and only while the journal still ends at
  that suspension, so of two servers answering at once one wins;
- the run's server, while the run is parked, looks for answers (and a cancel) with
  ``journal_parked``, renewing the run's lease: every ``ANSWER_POLL`` seconds on a store
  without news (SQLite), every ``LEASE_RENEW`` seconds while news is heard, and at once
  when the store has news (``journal_watch`` kind ``"cancel"``: PostgreSQL notifies
  answers on the cancel channel); it resumes the run as a local answer does, into the
  same journal, whose next write clears the batch;
- the answering server waits until the continuation's QuestionAnswered events are in the
  store, then returns a :class:`RemoteAnswer`: the run's journal and where the
  continuation starts. Answers another answer beat (the run's server resumed it with
  others, or ended it) are refused, as locally: ``answered``, ``expired``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from dataclasses import dataclass
from typing import Any, Callable, Protocol, Sequence, runtime_checkable

from ..events import STOP_SUSPENDED, Event, QuestionAnswered, QuestionAsked, RunFailed, RunFinished, event_from_json
from ..questions import Answer, Question, QuestionError, check_answer, clip
from . import shared
from .news import _News
from .shared import STOPPED, RemoteJournal

log = logging.getLogger("onedoor.journal")

def taken_within() -> float:
    """The longest a live server takes to pick answers up (its lease, two renewals)."""
    return shared.LEASE_TTL + 2 * shared.LEASE_RENEW


ANSWER_POLL = 0.25  # seconds between a parked run's looks for answers on a store without news (SQLite)
TRIES = 3  # compare-and-set attempts of one answer (another batch for the same run in the way)


@runtime_checkable
class AnswerStore(Protocol):
    async def journal_answer(self, run_id: str, principal: str, at_seq: int, answers: str) -> bool:
        """Leave ``answers`` (JSON) for the run's server if the run is ``principal``'s, has not
        ended, its last number is ``at_seq`` and no answers are pending; True when left."""
        ...

    async def journal_parked(self, run_id: str, lease_until: float) -> tuple[bool, str | None]:
        """For the server of a parked run: renew its lease; (a cancel asked, the answers
        left, or None). ``journal_write`` clears the answers."""
        ...


def answer_store(store: Any) -> AnswerStore | None:
    """``store`` if it takes answers for runs parked elsewhere, else None."""
    return store if getattr(store, "shares_journals", False) and isinstance(store, AnswerStore) else None


@dataclass(frozen=True)
class RemoteAnswer:
    """Answers taken by the server holding the run: ``journal.follow(after)`` is the
    continuation (RunStarted, a QuestionAnswered per answer, the run's events, its ending),
    the same events with the same numbers as a reader on that server gets."""

    run_id: str
    journal: RemoteJournal
    after: int  # the number of the suspended ending the answers continue
    questions: tuple[Question, ...] = ()  # the questions answered (as their QuestionAsked events hold them)


class _Run:
    """What a run's journal in the store says of its questions."""

    def __init__(self, events: list[tuple[int, Event]], ended: bool, lease_until: float) -> None:
        self.asked: dict[str, Question] = {}
        self.closed: dict[str, Answer] = {}
        for _, event in events:
            if isinstance(event, QuestionAsked):
                self.asked[event.question.id] = event.question
            elif isinstance(event, QuestionAnswered):
                self.closed.setdefault(event.answer.question_id, event.answer)
        self.last_seq = events[-1][0] if events else 0
        last = events[-1][1] if events else None
        self.parked = not ended and isinstance(last, RunFinished) and last.stop_reason == STOP_SUSPENDED
        self.over = ended or isinstance(last, RunFailed) or (isinstance(last, RunFinished) and not self.parked)
        self.lease_until = lease_until

    def check(self, answers: Sequence[Answer], principal: str, run_id: str) -> list[Answer]:
        """The answers as the run's server would take them; QuestionError as it would raise."""
        if not answers:
            raise QuestionError("invalid", "a resume needs at least one answer")
        for answer in answers:
            qid = answer.question_id
            if qid in self.closed:
                raise QuestionError(_reason(self.closed[qid]), f"question {clip(qid)} is closed ({_why(self.closed[qid])})")
            if qid not in self.asked:
                raise QuestionError("unknown", f"run {clip(run_id)} has no open question {clip(qid)}")
        if self.over:  # its open questions closed with it (cancelled, expired)
            raise QuestionError("expired", f"run {run_id!r} has ended; its questions are closed")
        if not self.parked:
            raise QuestionError("unknown", f"run {run_id!r} is not waiting for answers (its response is still open)")
        if self.lease_until < time.time():
            raise QuestionError("expired", f"run {run_id!r} is gone: {STOPPED}")
        if len({a.question_id for a in answers}) != len(answers):
            raise QuestionError("invalid", "each question may be answered once per resume")
        checked = []
        for answer in answers:
            question = self.asked[answer.question_id]
            if question.expires_at is not None and question.expires_at < time.time():
                raise QuestionError("expired", f"question {clip(question.id)} has expired")
            checked.append(check_answer(question, Answer(answer.question_id, answer.outcome, answer.value,
                                                         principal, "person")))
        return checked


def _reason(closing: Answer) -> str:
    return "expired" if closing.how in ("expired", "cancelled") else "answered"


def _why(closing: Answer) -> str:
    return closing.how if closing.how in ("expired", "cancelled") else f"answered: {closing.outcome}"


async def _read_run(store: Any, run_id: str, principal: str) -> _Run | None:
    events: list[tuple[int, Event]] = []
    while True:
        page = await store.journal_read(run_id, principal, events[-1][0] if events else 0, limit=500)
        if page is None:
            return None
        events += [(seq, event_from_json(text)) for seq, text in page.events]
        if len(page.events) < 500:
            return _Run(events, page.ended, page.lease_until)


async def answer_elsewhere(store: Any, run_id: str, principal: str, answers: Sequence[Answer],
                           door: str, *, names: Sequence[str] = (), notes: dict[str, Any] | None = None) -> RemoteAnswer:
    """Leave ``answers`` for the server holding parked run ``run_id`` and wait until it takes
    them (see the module docstring); QuestionError if they are refused."""
    for _ in range(TRIES):
        run = await _read_run(store, run_id, principal)
        if run is None:
            raise QuestionError("unknown", f"run {clip(run_id)} has no open question "
                                f"{clip(answers[0].question_id) if answers else ''}".rstrip())
        checked = run.check(answers, principal, run_id)
        body = json.dumps({"answers": [a.to_dict() for a in checked], "door": door, "names": list(names),
                           "notes": notes or {}})
        if await store.journal_answer(run_id, principal, run.last_seq, body):
            await _taken(store, run_id, principal, run.last_seq, checked)
            page = await store.journal_read(run_id, principal, 0, limit=0)
            return RemoteAnswer(run_id, RemoteJournal(store, run_id, principal, page), run.last_seq,
                                tuple(run.asked[a.question_id] for a in checked))
        await _moved_on(store, run_id, principal, run.last_seq)  # another batch first: see what it did
    raise QuestionError("answered", f"run {run_id!r} is being answered by another request")


async def _pages_after(store: Any, run_id: str, principal: str, after: int) -> Any:
    """Pages of the run's events after ``after`` as they come (news, or polling), until
    ``taken_within()`` seconds pass or the run's lease runs out with nothing new."""
    news = _News(store, run_id, "events")
    deadline, pause, seq = time.monotonic() + taken_within(), 0.005, after
    try:
        while True:
            page = await store.journal_read(run_id, principal, seq, limit=500)
            if page is None:
                return
            if page.events:
                seq = page.events[-1][0]
                yield page
                continue
            if page.ended or page.lease_until < time.time() or time.monotonic() > deadline:
                return
            await news.wait(pause, poll=False)
            pause = min(pause * 2, 0.05)  # a short wait, for one server's next look
    finally:
        news.close()


async def _taken(store: Any, run_id: str, principal: str, after: int, mine: Sequence[Answer]) -> None:
    """Wait for the continuation's QuestionAnswered events; QuestionError unless they are ours."""
    wanted = {a.question_id: a for a in mine}
    async for page in _pages_after(store, run_id, principal, after):
        for _, text in page.events:
            event = event_from_json(text)
            if isinstance(event, QuestionAnswered) and event.answer.question_id in wanted:
                got, ours = event.answer, wanted.pop(event.answer.question_id)
                if (got.outcome, got.value, got.how) != (ours.outcome, ours.value, ours.how):
                    raise QuestionError(_reason(got), f"question {clip(got.question_id)} is closed ({_why(got)})")
                if not wanted:
                    return
            elif isinstance(event, (RunFinished, RunFailed)):
                raise QuestionError("expired", f"run {run_id!r} ended before it took the answers")
    raise QuestionError("expired", f"run {run_id!r} is gone: {STOPPED}")


async def _moved_on(store: Any, run_id: str, principal: str, after: int) -> None:
    """Until the run's journal goes past ``after`` to an ending (or a new suspension)."""
    async for page in _pages_after(store, run_id, principal, after):
        if isinstance(event_from_json(page.events[-1][1]), (RunFinished, RunFailed)):
            return


async def keep_parked(writer: Any, take: Callable[[str, str, str], None], cancel: Callable[[str, str], None]) -> None:
    """The parked run's server: renew its lease, take answers left for it (``take(run_id,
    principal, answers JSON)`` resumes it) and a cancel asked (``cancel(run_id, principal)``),
    until it runs again, ends or is dropped."""
    journal, store = writer.journal, writer.store
    tried: str | None = None
    while journal.writer is writer and not journal.running and not journal.done and not journal.dropped:
        try:
            cancelled, pending = await store.journal_parked(journal.run_id, time.time() + shared.LEASE_TTL)
        except Exception as exc:  # noqa: BLE001 - the store is out: try again at the next renewal
            log.debug("run %s: answers not read (%s)", journal.run_id, exc)
            cancelled, pending = False, None
        if journal.writer is not writer or journal.running or journal.done:
            return
        if cancelled:
            cancel(journal.run_id, journal.principal)
        elif pending is not None and pending != tried:
            tried = pending
            take(journal.run_id, journal.principal, pending)
        if journal.running or journal.done:
            return
        live = getattr(store, "journal_news_live", None)
        try:  # news heard: its next look is a safety net; none: it looks often (answers come at once)
            await asyncio.wait_for(writer._wake.wait(), shared.LEASE_RENEW if live is not None and live()
                                   else min(ANSWER_POLL, shared.LEASE_RENEW))
        except TimeoutError:
            pass
        writer._wake.clear()


async def came_first(store: Any, journal: Any, take: Callable[[str, str, str], None]) -> bool:
    """For a run parked here that the store shares: whether another server's answers wait in
    the store for it. They came first: taken now (as the run's own look would take them), and
    an answer given here meanwhile is refused ``answered``, as the later of two is."""
    if journal is None or journal.writer is None or journal.running or journal.done:
        return False
    try:
        _, pending = await store.journal_parked(journal.run_id, time.time() + shared.LEASE_TTL)
    except Exception:  # noqa: BLE001 - the store is out: the answer here goes ahead (its write waits for the store)
        return False
    if pending is None:
        return False
    take(journal.run_id, journal.principal, pending)
    return True


def read_answers(text: str) -> tuple[list[Answer], str, list[str], dict[str, Any]]:
    """The answers another server left, the door, and the run's names and notes that go
    with them (see :func:`answer_elsewhere`)."""
    data = json.loads(text)
    names = [str(name) for name in data.get("names") or ()]
    notes = data.get("notes") if isinstance(data.get("notes"), dict) else {}
    return [Answer.from_dict(a) for a in data["answers"]], str(data.get("door", "")), names, notes


__all__ = ["AnswerStore", "RemoteAnswer", "answer_elsewhere", "answer_store", "keep_parked", "read_answers"]
