"""The question gate: a backend's questions on their way to the door, and back.

The kernel puts one gate on every run. The gate keeps these promises: every event the
backend sent before a question reaches the door first; while a question is open (and
for one idle timeout after) the run's idle timeout waits for the human; a cancelled run
answers every open and later question no (``reject_once`` / ``cancel``); an
``*_always`` answer is remembered for the run, per tool name; an answer that does not fit
its question never reaches the backend. Internal to the kernel: doors choose an asker
(:mod:`onedoor.questions.askers`), backends call ``context.ask``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any, Callable

from ..events import QuestionAnswered, QuestionAsked
from ..questions import (
    APPROVAL,
    Answer,
    LiveAsker,
    PolicyAsker,
    Question,
    QuestionError,
    SuspendAsker,
    check_answer,
    clip,
    closing_answer,
    coerce_answer,
    policy_answer,
)
from ._feed import Feed
from ._runner import StopRun

log = logging.getLogger("onedoor.kernel")


class Injected:
    """An event the kernel puts into a run's feed (it skips the backend's contract)."""

    __slots__ = ("event", "suspend", "fail")

    def __init__(self, event: Any, suspend: bool = False, fail: str | None = None) -> None:
        self.event = event
        self.suspend = suspend  # the response ends after this event (a parked run's question)
        self.fail = fail  # the run fails after this event (a question under the "fail" policy)

    def fail_if_asked(self) -> None:
        """A question answered under the "fail" policy ends the run once the door has its events."""
        if self.fail:
            raise StopRun(self.fail)


class Observation:
    """An observer hook to call when the door reaches this point of the feed (so observers
    see a question after the events the backend sent before asking it)."""

    __slots__ = ("hook", "kwargs")

    def __init__(self, hook: str, kwargs: dict[str, Any]) -> None:
        self.hook = hook
        self.kwargs = kwargs


class QuestionGate:
    def __init__(
        self,
        asker: Any,
        *,
        run_id: str,
        ttl: float,
        can_park: Callable[[], bool] = lambda: True,
        on_open: Callable[[Question], None] = lambda q: None,
        on_close: Callable[[Question, Answer], None] = lambda q, a: None,
        observed: bool = False,
    ) -> None:
        self.asker = asker
        self.run_id = run_id
        self.ttl = asker.ttl if isinstance(asker, SuspendAsker) and asker.ttl else ttl
        self.can_park = can_park
        self.on_open = on_open  # a parked question was registered (the kernel indexes it for resume)
        self.on_close = on_close  # ... and got its answer
        self.observed = observed  # observers want onedoor_question_asked / _answered
        self.feed: Feed | None = None
        self.open = 0  # questions being asked now
        self.last_answered = float("-inf")  # time.monotonic() of the last answer
        self.cancelled = False
        self.cancel_how = "cancelled"
        self.failure: str | None = None  # set by PolicyAsker("fail"): the run must end RunFailed
        self.pending: dict[str, tuple[Question, asyncio.Future]] = {}  # parked questions by id
        self.always: dict[str, str] = {}  # tool name -> "allow_always" | "reject_always"
        self._door_idle: asyncio.Event | None = None  # set while the door waits for events
        self._cancel: asyncio.Event | None = None

    # -- wiring ------------------------------------------------------------------------
    def bind(self, feed: Feed) -> None:
        """Attach the run's feed; called on the run's event loop when the backend starts."""
        self.feed = feed
        self._events()

    def _events(self) -> tuple[asyncio.Event, asyncio.Event]:
        if self._door_idle is None or self._cancel is None:
            self._door_idle = asyncio.Event()
            self._cancel = asyncio.Event()
            if self.cancelled:
                self._cancel.set()
        return self._door_idle, self._cancel

    def door_waiting(self, waiting: bool) -> None:
        """The run's stream tells the gate when the door has read everything sent so far."""
        door_idle = self._door_idle
        if door_idle is not None:
            if waiting:
                door_idle.set()
            else:
                door_idle.clear()

    def holds_idle_timeout(self, idle_timeout: float) -> bool:
        """True while a human is (or was just) being asked: the idle timeout waits."""
        return bool(self.open) or time.monotonic() - self.last_answered < idle_timeout

    @property
    def emits(self) -> bool:
        return isinstance(self.asker, SuspendAsker) or bool(getattr(self.asker, "emit_events", False))

    def cancel(self, how: str = "cancelled") -> None:
        """The run was cancelled (or its questions expired): every question is answered no."""
        if not self.cancelled:
            self.cancel_how = how
        self.cancelled = True
        if self._cancel is not None:
            self._cancel.set()
        for question, future in list(self.pending.values()):
            if not future.done():
                future.set_result(closing_answer(question, self.cancel_how))

    # -- the backend's side --------------------------------------------------------------
    async def ask(self, question: Question) -> Answer:
        """The kernel's side of ``RunContext.ask``: the checked answer, never an exception."""
        suspend = isinstance(self.asker, SuspendAsker)
        question = question.stamped(self.run_id, time.time() + self.ttl if suspend else None)
        if self.cancelled:
            return closing_answer(question, self.cancel_how)
        remembered = self._remembered(question)
        if remembered is not None:
            return remembered
        door_idle, cancel = self._events()
        self.open += 1
        try:
            if isinstance(self.asker, LiveAsker):
                # a live asker asks out of band: the door must have read what came before.
                # Parked and policy questions travel in the feed, in order, so need no wait.
                await self._door_caught_up(door_idle)
            if self.cancelled:
                return closing_answer(question, self.cancel_how)
            self._observe("onedoor_question_asked", question=question)
            answer = await self._answer(question, cancel)
            self._observe("onedoor_question_answered", question=question, answer=answer)
            if self.emits:
                self._inject(QuestionAnswered(answer), fail=self.failure)
            self._remember(question, answer)
            return answer
        finally:
            self.open -= 1
            self.last_answered = time.monotonic()

    async def _answer(self, question: Question, cancel: asyncio.Event) -> Answer:
        asker = self.asker
        if isinstance(asker, SuspendAsker):
            if self.can_park():
                return await self._park(question)
            log.warning("run %s: too many runs wait for answers; question answered by policy %r", self.run_id, asker.fallback)
            return self._by_policy(question, asker.fallback)
        if self.emits:
            self._inject(QuestionAsked(question))
        if isinstance(asker, PolicyAsker):
            return self._by_policy(question, asker.policy)
        return await self._ask_live(asker, question, cancel)

    def _by_policy(self, question: Question, policy: str) -> Answer:
        if policy == "fail":
            self.failure = f"the run asked a question nobody can answer here ({question.prompt})"
            if self.feed is not None and not self.emits:
                self.feed.wake()  # no events to carry it: the stream fails at its next wait
            return closing_answer(question, "policy")
        return policy_answer(question, policy)

    async def _park(self, question: Question) -> Answer:
        future = asyncio.get_running_loop().create_future()
        self.pending[question.id] = (question, future)
        self.on_open(question)
        self._inject(QuestionAsked(question), suspend=True)
        try:
            answer: Answer = await future
        finally:  # answered, or the backend's task was cancelled while it waited
            self.pending.pop(question.id, None)
            done = future.done() and not future.cancelled()
            self.on_close(question, future.result() if done else closing_answer(question, self.cancel_how))  # idempotent
        return answer

    async def _ask_live(self, asker: LiveAsker, question: Question, cancel: asyncio.Event) -> Answer:
        ask = asyncio.ensure_future(asker.ask(question))
        stop = asyncio.ensure_future(cancel.wait())
        try:  # a live question waits as long as a parked one may: the question's ttl
            await asyncio.wait({ask, stop}, timeout=self.ttl, return_when=asyncio.FIRST_COMPLETED)
        except BaseException:  # the backend's task was cancelled while the door asked
            ask.cancel()
            raise
        finally:
            stop.cancel()
        if not ask.done():
            ask.cancel()
            return closing_answer(question, self.cancel_how if stop.done() or self.cancelled else "expired")
        try:
            return check_answer(question, coerce_answer(question, ask.result()))
        except Exception as exc:  # noqa: BLE001 - the door could not ask, or answered nonsense: the answer is no
            log.info("run %s: question %s got no usable answer (%s)", self.run_id, question.id, exc)
            return policy_answer(question, "deny")

    # -- the door's side (resume) ---------------------------------------------------------
    def answer(self, answer: Answer) -> None:
        """Give a parked question its answer; QuestionError if it does not fit."""
        entry = self.pending.get(answer.question_id)
        if entry is None or entry[1].done():
            raise QuestionError("unknown", f"no open question {clip(answer.question_id)}")
        question, future = entry
        checked = check_answer(question, answer)
        future.set_result(checked)
        self.on_close(question, checked)  # closed now, not when the backend wakes: a second resume sees "answered"

    def open_questions(self) -> list[Question]:
        return [q for q, f in self.pending.values() if not f.done()]

    # -- helpers -----------------------------------------------------------------------
    def _observe(self, hook: str, **kwargs: Any) -> None:
        if self.observed and self.feed is not None:
            self.feed.items.append(Observation(hook, kwargs))
            self.feed.wake()

    def _inject(self, event: Any, suspend: bool = False, fail: str | None = None) -> None:
        feed = self.feed
        if feed is None:
            return
        feed.items.append(Injected(event, suspend, fail))
        feed.wake()

    async def _door_caught_up(self, door_idle: asyncio.Event) -> None:
        """Wait until the door has read every event sent before the question."""
        feed = self.feed
        while feed is not None and (feed.items or not door_idle.is_set()) and not self.cancelled:
            idle = asyncio.ensure_future(door_idle.wait())
            stop = asyncio.ensure_future(self._events()[1].wait())
            await asyncio.wait({idle, stop}, timeout=0.5, return_when=asyncio.FIRST_COMPLETED)
            idle.cancel()
            stop.cancel()
            if not feed.items and door_idle.is_set():
                break

    def _remembered(self, question: Question) -> Answer | None:
        if question.kind != APPROVAL or question.tool is None:
            return None
        outcome = self.always.get(question.tool.name)
        return Answer(question.id, outcome, how="policy") if outcome else None

    def _remember(self, question: Question, answer: Answer) -> None:
        if question.tool is not None and answer.outcome in ("allow_always", "reject_always"):
            self.always[question.tool.name] = answer.outcome
