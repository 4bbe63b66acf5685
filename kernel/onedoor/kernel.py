"""The run lifecycle: ``Kernel.run`` is the only way a door starts a run.

Every run gets a fresh agent from the backend's factory. A sync agent runs on its own
worker thread, an async one in its own task; either way its events reach the door
through a bounded feed, in batches, as one async stream. The kernel enforces the
contract (see :mod:`onedoor.contract`), turns exceptions, broken streams and silence
past the idle timeout into a :class:`RunFailed`, and cancels for real: the backend is
told (cancel token, task cancellation, its ``cancel()``/``interrupt()``), its worker
ends, and the run closes with stop_reason ``cancelled``.

A door uses it like this, and only like this: ``kernel.run`` takes one of the kernel's
``max_concurrent_runs`` slots, and only iterating the stream to its end, ``aclose()``,
or leaving ``async with`` gives the slot back::

    async with kernel.run(message, history=history, door="rest") as run:
        async for event in run:
            ...            # call run.cancel() at any time; leaving the block cancels too

Where the parts live: :mod:`onedoor.feed` (the bounded hand-over between backend and
door), :mod:`onedoor.backend_runner` (the worker thread, the task, telling a backend to
stop), :mod:`onedoor.question_gate` (a backend's questions to the door),
:mod:`onedoor.parking` (runs waiting for answers between two requests),
:mod:`onedoor.observers` (the lifecycle hooks) and :mod:`onedoor.contract`.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import threading
import time
import weakref
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, AsyncGenerator, AsyncIterator, Callable, Iterable, Sequence

from .askers import SILENT_DENY, Asker, from_approver
from .backend_runner import BackendRunner, StopRun
from .contract import Contract
from .errors import ContractViolation, RunRefused
from .events import STOP_CANCELLED, STOP_SUSPENDED, Event, RunFailed, RunFinished, RunStarted, ToolFinished
from .journal import Journals
from .observers import notify
from .parking import ParkingLot
from .port import CancelToken, Message, RunContext, ToolSpec, normalize_history
from .question_gate import Injected, QuestionGate
from .questions import Answer, Question, QuestionError, clip
from .shared_journal import shared_store
from .threads import Thread, ThreadStore, TurnRecorder, append_turn

Approver = Callable[[str, str, Any], Any]  # before questions: async (call_id, name, arguments) -> bool

log = logging.getLogger("onedoor.kernel")


@dataclass
class Limits:
    """Limits a kernel enforces; every door inherits them."""

    max_concurrent_runs: int = 64  # a backend that ignores cancel holds its slot until it really ends
    max_message_chars: int = 100_000
    max_input_chars: int = 1_000_000  # message plus history
    idle_timeout: float = 120.0  # seconds a backend may stay silent
    run_timeout: float | None = 3600.0
    cancel_grace: float = 5.0  # seconds a cancelled backend gets to stop before the door gets its ending anyway
    queue_size: int = 1024  # events buffered between backend and door (backpressure)
    retry_after: float = 1.0  # advice given with a "busy" refusal
    max_parked_runs: int = 32  # runs waiting for answers between requests; they hold run slots too, so keep it
    # well below max_concurrent_runs: past it, questions get the door's fallback answer
    question_ttl: float = 600.0  # seconds a parked run waits for its answers before it ends cancelled
    journal_retention: float = 300.0  # seconds a run's journal is kept after it ends (reconnects, reattach)
    max_journal_events: int = 100_000  # events one run's journal holds; older ones go first
    max_kept_journal_events: int = 1_000_000  # events all ended runs' journals hold together; oldest runs go first


@dataclass
class Backend:
    """A loaded backend: its name and a factory that builds a fresh agent per run."""

    name: str
    factory: Callable[[], Any]
    capabilities: frozenset[str] = field(default_factory=frozenset)


@dataclass(frozen=True)
class RunInfo:
    """What lifecycle hooks learn about a run."""

    run_id: str
    backend: str
    door: str
    message: str
    history_length: int
    started_at: float


class Kernel:
    """One backend, its limits and its observers; doors start runs with :meth:`run`."""

    def __init__(
        self, backend: Backend, *, limits: Limits | None = None, hooks: Any = None, store: ThreadStore | None = None
    ) -> None:
        self.backend = backend
        self.limits = limits or Limits()
        self.hooks = hooks  # a pluggy PluginManager's .hook relay, or None
        self.store = store  # where threads live (see kernel.run's ``thread``), or None
        self._journals: Journals | None = None
        self._thread_runs: Counter[str] = Counter()  # thread id -> runs of this kernel writing it
        self._active = 0
        self._slot_lock = threading.Lock()  # a stuck worker frees its slot from its own thread
        self._threads: set[threading.Thread] = set()
        self._runs: "weakref.WeakSet[RunStream]" = weakref.WeakSet()
        self._lot = ParkingLot()
        self._live_ids: set[str] = set()  # run ids of runs not yet finished (parked ones included)

    @property
    def active_runs(self) -> int:
        """Runs holding a slot: started and not yet ended, or ended with a backend still running."""
        return self._active

    @property
    def parked_runs(self) -> int:
        """Runs waiting for answers between two requests (see :mod:`onedoor.askers`)."""
        return len(self._lot)

    @property
    def journals(self) -> Journals:
        """Runs driven by the kernel and journaled, for resumable streams (:mod:`onedoor.journal`)."""
        if self._journals is None:
            self._journals = Journals(self)
        return self._journals

    def open_questions(self, run_id: str, *, principal: str = "local") -> list[Question]:
        """The questions a parked run of ``principal`` waits for (empty for any other run)."""
        stream = self._lot.parked.get(run_id)
        if stream is None or stream.principal != principal:
            return []
        return stream._gate.open_questions()

    def question_status(self, question_id: str, *, principal: str = "local") -> str:
        """Where a parked run's question stands for ``principal``: ``open``, ``expired``,
        ``answered`` or ``unknown`` (another principal's question is ``unknown``)."""
        return self._lot.status(question_id, principal)

    def check_question(self, question_id: str, *, principal: str = "local") -> None:
        """Raise the QuestionError a resume answering ``question_id`` would meet (unknown,
        expired, answered: naming the answer); return None while it is open and parked."""
        self._lot.find([Answer(question_id, "")], principal)

    def resume(self, answers: Iterable[Answer | dict], *, principal: str = "local", door: str = "") -> "RunStream":
        """Answer a parked run's questions and get a new stream that continues it.

        Raises :class:`onedoor.questions.QuestionError` before anything is answered if an
        answer is malformed, does not fit its question, or names a question that is
        unknown (or another principal's), expired or already answered. The new stream
        starts with ``RunStarted`` (same ``run_id``) and goes on as the first did: it may
        itself end ``suspended`` again, for questions still open or asked later.
        """
        try:
            parsed = [a if isinstance(a, Answer) else Answer.from_dict(a) for a in answers]
        except ValueError as exc:
            raise QuestionError("invalid", str(exc)) from None
        if len({a.question_id for a in parsed}) != len(parsed):
            raise QuestionError("invalid", "each question may be answered once per resume")
        stream = self._lot.find(parsed, principal)
        gate = stream._gate
        pending = {q.id: q for q in gate.open_questions()}
        from .questions import check_answer

        checked = [check_answer(pending[a.question_id], Answer(a.question_id, a.outcome, a.value, principal, "person"))
                   for a in parsed]
        successor = stream._successor(door)
        self._lot.unpark(stream)
        for answer in checked:
            gate.answer(answer)
        return successor

    def cancel_all(self, grace: float | None = None) -> int:
        """Cancel every run in flight; returns how many were told.

        ``grace`` (capped by ``limits.cancel_grace``) is how long each backend gets to
        stop before its door gets the cancelled ending anyway.
        """
        runs = [r for r in list(self._runs) if r.outcome is None]
        for run in runs:
            run.cancel(grace=grace)
        return len(runs)

    async def shutdown(self, grace: float) -> int:
        """Graceful shutdown: cancel every run and wait, at most ``grace`` seconds, until
        each stream being read has sent its ending. Backends get half of ``grace`` (at
        most ``cancel_grace``) to stop; the rest is the doors' time to write the endings.
        Returns how many runs were cancelled."""
        runs = [r for r in list(self._runs) if r.outcome is None]
        for run in runs:
            run.cancel(grace=grace / 2)
        waits = [asyncio.ensure_future(r._ended.wait()) for r in runs if r._started]
        waits += list(self._lot.drains)
        if waits:
            _, late = await asyncio.wait(waits, timeout=grace)
            for wait in late:
                wait.cancel()
        return len(runs)

    def worker_threads(self) -> list[threading.Thread]:
        """Worker threads of sync runs that are still alive (for tests and metrics)."""
        return [t for t in list(self._threads) if t.is_alive()]

    def run(
        self,
        message: str,
        *,
        history: Iterable[Any] | None = None,
        tools: Sequence[ToolSpec] = (),
        door: str = "",
        run_id: str | None = None,
        extras: dict[str, Any] | None = None,
        approver: Approver | None = None,
        asker: Asker | None = None,
        principal: str = "local",
        thread: Thread | None = None,
    ) -> "RunStream":
        """Start a run; raise :class:`RunRefused` (before any event) if it cannot start.

        ``message`` may be empty only when the history ends with tool results: the run
        then continues after the client answered frontend tools. ``asker`` says how the
        door answers the backend's questions (:mod:`onedoor.askers`); without one, every
        question is answered no and the stream carries no question events. ``approver``
        (``async (call_id, name, arguments) -> bool``) is the older form of a live asker
        for approvals only. ``principal`` is who is calling: only they can resume the
        run. ``thread`` (a :class:`onedoor.threads.Thread` the door read from
        ``kernel.store`` for this principal) is the conversation so far, instead of
        ``history``: the message is kept in it as the run starts (a killed server keeps
        it), the rest of the turn (tool calls and results, the reply, a reply cut short
        marked so) before the stream's terminal event, so a client that sees the end can
        read the thread. A thread whose run waits for answers refuses a new message
        (``RunRefused("pending_questions")``). To make a stream resumable, hand it to
        ``kernel.journals.start`` (:mod:`onedoor.journal`). Use the stream
        as ``async with`` (or iterate it to its end, or ``aclose()`` it): that is what frees
        the run's slot.
        """
        if thread is not None:
            if history is not None:
                raise RunRefused("invalid", "send either a thread or a history, not both")
            if self.store is None:
                raise RunRefused("invalid", "this server keeps no threads")
            if thread.owner != principal:
                raise RunRefused("not_found", f"no thread {thread.id!r}")
            waiting = self._lot.waiting_on(thread.id)
            if waiting:  # a new message is never taken as an answer
                raise RunRefused("pending_questions", f"thread {thread.id!r} has a run waiting for answers to "
                                 f"{', '.join(clip(q) for q in waiting)}: answer them (or cancel the run) first")
            history = thread.messages
        past = self._check_input(message, history)
        if run_id is not None:
            self._check_run_id(run_id)
        self._take_slot()
        context = RunContext(
            run_id=run_id or os.urandom(16).hex(),
            cancel=CancelToken(),
            tools=tuple(tools),
            door=door,
            extras=dict(extras or {}),
            principal=principal,
        )
        if asker is None:
            asker = from_approver(approver) if approver is not None else SILENT_DENY
        stream = RunStream(self, message, past, context, asker, thread)
        if thread is not None:
            self._thread_runs[thread.id] += 1
        self._runs.add(stream)
        self._live_ids.add(context.run_id)
        return stream

    def _check_run_id(self, run_id: Any) -> None:
        """A run id a door passes on from its client: usable in a journal cursor, and not
        in use nor used recently (a journal still kept), by anyone: a run never continues
        another's events."""
        if not isinstance(run_id, str) or not RUN_ID.fullmatch(run_id):
            raise RunRefused("invalid", f"a run id is 1-128 letters, digits or -_. (got {clip(repr(run_id))})")
        if run_id in self._live_ids:
            raise RunRefused("invalid", f"run id {clip(run_id)} is in use (running or waiting for answers)")
        if self._journals is not None and self._journals.kept(run_id):
            raise RunRefused("invalid", f"run id {clip(run_id)} was used recently; choose a new one")

    def forget_thread(self, thread_id: str, principal: str) -> int:
        """After a thread's deletion: cancel the runs still writing it (waiting for answers
        too) and drop its runs' journals, which hold its text. Returns how many runs were
        cancelled. Doors call it when they delete a thread."""
        runs = [r for r in list(self._runs) if r.thread is not None and r.thread.id == thread_id
                and r.principal == principal and r.outcome is None]
        for run in runs:
            run.cancel()
        if self._journals is not None:
            self._journals.forget_thread(thread_id, principal)
        return len(runs)

    def _check_input(self, message: Any, history: Iterable[Any] | None) -> list[Message]:
        """The normalized history; RunRefused for a message or history the kernel will not run."""
        lim = self.limits
        if not isinstance(message, str):
            raise RunRefused("invalid", "the message must be a string")
        if len(message) > lim.max_message_chars:
            raise RunRefused(
                "too_large", f"the message has {len(message)} characters; the limit is {lim.max_message_chars}"
            )
        try:
            past = normalize_history(history)
        except ValueError as exc:
            raise RunRefused("invalid", f"bad history: {exc}") from None
        if not message.strip() and not (past and past[-1].role == "tool"):
            # An empty message is a continuation only after tool results (a client
            # answering frontend tools); otherwise there is nothing to answer.
            raise RunRefused("invalid", "the message is empty")
        total = len(message) + sum(len(m.content) for m in past)
        if total > lim.max_input_chars:
            raise RunRefused(
                "too_large", f"message and history have {total} characters; the limit is {lim.max_input_chars}"
            )
        return past

    def _take_slot(self) -> None:
        limit = self.limits.max_concurrent_runs
        with self._slot_lock:
            if self._active >= limit:
                raise RunRefused(
                    "busy",
                    f"the server is running {self._active} runs, its limit; try again shortly",
                    retry_after=self.limits.retry_after,
                )
            self._active += 1

    def _release_slot(self) -> None:
        """Give a run's slot back; may be called from a worker thread."""
        with self._slot_lock:
            self._active -= 1


_TERMINAL = (RunFinished, RunFailed)
INTERRUPTED_REPLY = "[reply interrupted: the server stopped]"
RUN_ID = re.compile(r"[A-Za-z0-9_.-]{1,128}")  # what a door may pass as run_id (journal cursors carry it)  # kept for a turn no server finished


def _fail_if_asked(injected: Injected) -> None:
    """A question answered under the "fail" policy ends the run once the door has its events."""
    if injected.fail:
        raise StopRun(injected.fail)


async def _drain(stream: "RunStream") -> None:
    """Drive a run nobody reads to its end (a parked run that expired or was cancelled)."""
    async with stream:
        async for _ in stream:
            pass


class RunStream:
    """One run's event stream. Iterate it, or use it as an async context manager.

    ``cancel()`` asks the run to stop: the backend is told, and within ``cancel_grace``
    the stream ends with the events already produced, ToolFinished errors for open tool
    calls, and RunFinished(stop_reason="cancelled"). ``aclose()`` (or leaving
    ``async with``) also cancels, for a consumer that went away and wants no more
    events; it is also what frees the slot of a run that was never iterated.
    """

    def __init__(
        self,
        kernel: Kernel,
        message: str,
        history: list[Message],
        context: RunContext,
        asker: Any = SILENT_DENY,
        thread: Thread | None = None,
    ) -> None:
        self.kernel = kernel
        self.message = message
        self.history = history
        self.context = context
        self.run_id = context.run_id
        self.principal = context.principal
        self.info: RunInfo | None = None
        self.outcome: RunFinished | RunFailed | None = None
        lot = kernel._lot
        self._gate = QuestionGate(
            asker,
            run_id=self.run_id,
            ttl=kernel.limits.question_ttl,
            can_park=lambda: len(lot) < kernel.limits.max_parked_runs,
            on_open=lambda q: lot.question_opened(self, q),
            on_close=lambda q, a: lot.question_closed(self, q, a),
        )
        context.asker = self._gate.ask
        self._contract = Contract(self._is_client_tool)
        self.thread = thread  # after the run: the thread as stored with this run's turn
        self._recorder = TurnRecorder(message) if thread is not None else None
        self._turn_saved = False
        self._retired = False  # this stream's response ended "suspended": the run is parked
        self._next: RunStream | None = None  # the stream that continues the run after a resume
        self._parked_at = 0.0
        self._grace = kernel.limits.cancel_grace
        self._deadline: float | None = None  # time.monotonic() when the run timeout strikes
        self._cancel_requested = False
        self._started = False
        self._finished = False
        self._ended = asyncio.Event()  # set once the stream has ended (see Kernel.shutdown)
        self._runner: BackendRunner | None = None
        self._gen = self._drive()

    # -- public API --------------------------------------------------------------------
    def __aiter__(self) -> AsyncIterator[Event]:
        return self._gen

    async def __aenter__(self) -> "RunStream":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()

    @property
    def cancelled(self) -> bool:
        return self._cancel_requested

    @property
    def suspended(self) -> bool:
        """This response ended with questions and the run is parked (or already resumed
        in another stream): the response's end, or its client going away, must not cancel
        it; ``cancel()`` still does, on purpose."""
        return self._retired

    def cancel(self, grace: float | None = None) -> None:
        """Ask the run to stop; safe to call more than once and after the end.

        ``grace`` shortens how long the backend gets to stop (never beyond ``cancel_grace``).
        """
        if grace is not None:
            self._grace = min(self._grace, max(0.0, grace))
            if self._runner is not None:
                self._runner.shorten(self._grace)
        if self._retired:  # the run went on in another stream, or is parked
            if self._next is not None:
                self._next.cancel(grace)
            else:
                self._cancel_parked("cancelled")
            return
        if self._cancel_requested or self.outcome is not None:
            return
        self._cancel_requested = True
        self._gate.cancel()
        self._tell_backend()
        if self._runner is not None:
            self._runner.feed.wake()

    async def aclose(self) -> None:
        """Stop the run (cancelled, if it had not ended) and free its slot."""
        started = self._started
        if not started and self._runner is not None and not self._retired:
            # a resumed run nobody read: its backend is running, so stop it the usual way
            self.cancel()
            async for _ in self._gen:
                pass
            return
        await self._gen.aclose()
        if not started:  # never iterated: no backend ran and no observer saw it
            self._finish(RunFinished(self.run_id, "", STOP_CANCELLED), observed=False)

    # -- the drive loop ----------------------------------------------------------------
    async def _drive(self, resumed: bool = False) -> AsyncGenerator[Event, None]:
        """The stream itself: RunStarted, the backend's events as the contract allows
        them (and the kernel's question events), then exactly one terminal event; or,
        with a SuspendAsker, ``RunFinished(stop_reason="suspended")`` after a question,
        leaving the run parked (``resumed``: a later stream of a parked run)."""
        self._begin(resumed)
        run_id = self.run_id
        contract = self._contract
        outcome: RunFinished | RunFailed | None = None
        parked = False
        try:
            yield RunStarted(run_id)
            terminal: Any = None
            try:
                await self._start_run(resumed)
                pass_text = contract.pass_text  # the fast path: most events are text in mid-run
                while terminal is None and not self._cancel_requested:
                    batch = await self._next_batch()
                    for index, event in enumerate(batch):
                        if self._cancel_requested:
                            break
                        if pass_text(event):
                            yield event
                            continue
                        if type(event) is Injected:  # the kernel's own question events
                            if not event.suspend:
                                yield event.event
                                _fail_if_asked(event)
                            elif self._park(batch[index + 1:]):  # (False: the backend stopped waiting)
                                parked = True
                                yield event.event
                                yield RunFinished(run_id, contract.text, STOP_SUSPENDED)
                                return
                            continue
                        contract.check(event)
                        if type(event) in _TERMINAL:
                            terminal = event
                            break
                        if type(event) is not RunStarted:  # the kernel sent its own
                            self._note_tool(event)
                            yield event
                closing, outcome = await self._ending(contract, terminal)
            except (ContractViolation, StopRun) as exc:
                self._gate.cancel()  # a question still open (a timeout while asked) is answered no
                await self._stop_backend(tell=True)
                closing, outcome = contract.close_open_tools("the run failed"), self._failure(exc)
            for event in closing:
                self._note_tool(event)
                yield event
            outcome = await self._save_turn(outcome)
            self.outcome = outcome
            yield outcome
            await self._stop_backend(tell=False)
        except BaseException:
            if not parked:  # else the consumer left after the suspended ending: the run stays parked
                outcome = await self._consumer_left()
            raise
        finally:
            if not parked:
                self._finish(outcome or RunFinished(run_id, contract.text, STOP_CANCELLED))

    def _begin(self, resumed: bool) -> None:
        self._started = True
        if not resumed:
            self.info = RunInfo(
                self.run_id, self.kernel.backend.name, self.context.door, self.message, len(self.history), time.time()
            )
            notify(self.kernel.hooks, "onedoor_run_started", run=self.info)

    async def _consumer_left(self) -> RunFinished | RunFailed | None:
        """The consumer went away (aclose / task cancelled): stop the backend, no more events."""
        cut_short = self.outcome is None
        if cut_short:
            self.outcome = RunFinished(self.run_id, self._contract.text, STOP_CANCELLED)
            self._cancel_requested = True
            self._gate.cancel()
        await self._stop_backend(tell=cut_short)
        await self._save_turn(self.outcome)
        return self.outcome

    async def _next_batch(self) -> list[Any]:
        """The backend's next events; empty once the run is cancelled.

        Raises StopRun when the backend raised, stayed silent past the idle timeout or
        ran past the run timeout, and ContractViolation when its stream just stopped.
        """
        assert self._runner is not None
        feed = self._runner.feed
        while True:
            batch = feed.take()
            if batch is not None:
                return batch
            if self._gate.failure is not None and not self._gate.emits:
                raise StopRun(self._gate.failure)
            if self._cancel_requested:
                return []
            if feed.done:
                batch = feed.take()  # what it sent just before it ended
                if batch is not None:
                    return batch
                if feed.error is not None:
                    raise StopRun(self._describe_error(feed.error))
                raise ContractViolation("backend's stream ended without RunFinished or RunFailed")
            await self._wait_for_events()

    async def _wait_for_events(self) -> None:
        """Wait for the backend; StopRun when it stays silent too long or the run takes too long."""
        assert self._runner is not None
        lim = self.kernel.limits
        timeout = lim.idle_timeout
        if self._deadline is not None:
            left = self._deadline - time.monotonic()
            if left <= 0:
                raise StopRun(self._timeout_message("run"))
            timeout = min(timeout, left) if timeout else left
        gate = self._gate
        gate.door_waiting(True)
        got = await self._runner.feed.wait(timeout)
        gate.door_waiting(False)
        if got or gate.holds_idle_timeout(lim.idle_timeout):
            return  # events came, or a human is (or was just) being asked: the idle timeout waits
        if self._deadline is not None and time.monotonic() >= self._deadline:
            raise StopRun(self._timeout_message("run"))
        raise StopRun(self._timeout_message("idle"))

    async def _ending(self, contract: Contract, terminal: Any) -> tuple[list[ToolFinished], RunFinished | RunFailed]:
        """The events that end the run: tool calls left open are closed, then the outcome."""
        if terminal is None:  # cancelled
            await self._stop_backend(tell=True)
            return contract.close_open_tools("cancelled"), RunFinished(self.run_id, contract.text, STOP_CANCELLED)
        if type(terminal) is RunFailed:
            return contract.close_open_tools("the run failed"), RunFailed(self.run_id, str(terminal.error))
        return [], RunFinished(self.run_id, terminal.text, terminal.stop_reason)

    # -- the backend -------------------------------------------------------------------
    def _start_backend_once(self, resumed: bool) -> None:
        """A run's first stream starts its backend (unless cancelled first); a resumed one has it."""
        if not resumed and not self._cancel_requested:
            self._start_backend()

    def _start_backend(self) -> None:
        kernel = self.kernel
        self._runner = BackendRunner.start(
            kernel.backend, self.message, self.history, self.context, kernel.limits.queue_size, kernel._threads
        )
        self._gate.bind(self._runner.feed)
        run_timeout = kernel.limits.run_timeout
        self._deadline = time.monotonic() + run_timeout if run_timeout else None

    def _tell_backend(self) -> None:
        self.context.cancel.cancel()
        if self._runner is not None:
            self._runner.tell()

    async def _stop_backend(self, tell: bool) -> None:
        if self._runner is not None:
            await self._runner.stop(tell=tell, grace=self._grace)

    def _is_client_tool(self, name: str) -> bool:
        return self.context.client_tool(name) is not None

    # -- the thread ----------------------------------------------------------------------
    def _note_tool(self, event: Any) -> None:
        if self._recorder is not None:
            self._recorder.note(event, self._contract.parts)

    async def _start_run(self, resumed: bool) -> None:
        if not resumed:
            await self._open_turn()
        self._start_backend_once(resumed)

    async def _open_turn(self) -> None:
        """Keep the user's message in the thread as the run starts (a server killed mid-run
        keeps it), after marking a turn an earlier server left without a reply."""
        thread, store = self.thread, self.kernel.store
        if thread is None or store is None or self._recorder is None:
            return
        opening = []
        if await self._left_unanswered(thread):
            opening.append(Message("assistant", INTERRUPTED_REPLY))
            self.history = [*self.history, opening[-1]]
        if self.message:
            opening.append(Message("user", self.message))
        if opening:
            try:
                self.thread = await append_turn(store, thread, opening)
            except Exception as exc:  # noqa: BLE001 - the store failed or refused: the run cannot go on
                self._turn_saved = True
                raise StopRun(f"thread {thread.id!r} cannot be continued: {exc}") from None
        self._recorder.message = ""  # kept already: the end of the run adds only the reply

    async def _left_unanswered(self, thread: Thread) -> bool:
        """The thread ends with a user's message no run is answering: none of this kernel's,
        nor (with a store that shares journals) another server's."""
        if not thread.messages or thread.messages[-1].role != "user" or self.kernel._thread_runs[thread.id] != 1:
            return False
        shared = shared_store(self.kernel.store)
        try:
            return shared is None or not await shared.journal_live_on(thread.id, besides=self.run_id)
        except Exception:  # noqa: BLE001 - cannot tell: leave the turn unmarked rather than mark it wrongly
            return False

    async def _save_turn(self, outcome: Any) -> Any:
        """Append this run's turn to its thread (once); a turn that cannot be kept fails the run."""
        thread, store = self.thread, self.kernel.store
        if thread is None or store is None or self._recorder is None or self._turn_saved or outcome is None:
            return outcome
        self._turn_saved = True
        interrupted = "failed" if type(outcome) is RunFailed else ("cancelled" if outcome.stop_reason == STOP_CANCELLED else "")
        messages = self._recorder.messages(self._contract.parts, interrupted=interrupted)
        try:
            self.thread = await append_turn(store, thread, messages)
        except Exception as exc:  # noqa: BLE001 - the store failed: say so in the run's ending
            log.warning("run %s: could not keep its turn in thread %s: %s", self.run_id, thread.id, exc)
            if type(outcome) is RunFailed:
                return outcome
            return RunFailed(self.run_id, f"the reply could not be kept in thread {thread.id!r}: {exc}")
        return outcome

    # -- parking (SuspendAsker) -----------------------------------------------------------
    def _park(self, rest: list[Any]) -> bool:
        """This response ends with a question: park the run (the rest of the batch goes
        back to the feed for the stream that continues it). False, and no parking, when
        the question is no longer open (its backend stopped waiting before the door saw it)."""
        assert self._runner is not None
        open_questions = self._gate.open_questions()
        if not open_questions:
            return False
        self._runner.feed.items.extendleft(reversed(rest))
        self._retired = True
        self._parked_at = time.monotonic()
        self._ended.set()
        expiry = [q.expires_at for q in open_questions if q.expires_at is not None]
        self.kernel._lot.park(self, min(expiry) if expiry else time.time() + self.kernel.limits.question_ttl)
        return True

    def _successor(self, door: str = "") -> "RunStream":
        """A new stream for the rest of this parked run (a new response, same run)."""
        nxt = object.__new__(RunStream)
        nxt.__dict__.update(self.__dict__)
        nxt._retired = False
        nxt._next = None
        nxt._started = False
        nxt._ended = asyncio.Event()
        if door:
            nxt.context.door = door
        if self._deadline is not None:  # time spent parked does not count against the run timeout
            nxt._deadline = self._deadline + (time.monotonic() - self._parked_at)
        nxt._gen = nxt._drive(resumed=True)
        self._next = nxt
        self.kernel._runs.add(nxt)
        return nxt

    def _expire(self) -> None:
        """The parked run's questions expired: they are answered so, and the run ends cancelled."""
        self._cancel_parked("expired")

    def _cancel_parked(self, how: str) -> None:
        lot = self.kernel._lot
        if lot.parked.get(self.run_id) is not self:
            return
        lot.unpark(self)
        successor = self._successor()
        successor._cancel_requested = True
        successor._gate.cancel(how)
        successor._tell_backend()
        lot.drain(asyncio.ensure_future(_drain(successor)))

    # -- endings -----------------------------------------------------------------------
    def _failure(self, exc: Exception) -> RunFailed:
        message = str(exc)
        if isinstance(exc, ContractViolation):
            message = f"backend {self.kernel.backend.name!r} broke the event contract: {message}"
        log.info("run %s failed: %s", self.run_id, message)
        return RunFailed(self.run_id, message)

    def _timeout_message(self, which: str) -> str:
        name, lim = self.kernel.backend.name, self.kernel.limits
        if which == "run":
            return f"backend {name!r} exceeded the run timeout of {lim.run_timeout:g} s"
        return f"backend {name!r} sent no event for {lim.idle_timeout:g} s (idle timeout)"

    def _describe_error(self, exc: BaseException) -> str:
        log.debug("backend %r raised", self.kernel.backend.name, exc_info=exc)
        detail = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        text = f"{type(exc).__name__}: {detail}" if detail else type(exc).__name__
        return f"backend {self.kernel.backend.name!r} failed: {text}"

    def _finish(self, outcome: RunFinished | RunFailed, observed: bool = True) -> None:
        """Once per run: record the outcome, free the slot (once the backend has really
        ended too) and tell the observers."""
        if self._finished:
            return
        self._finished = True
        self.kernel._live_ids.discard(self.run_id)
        if self.thread is not None:
            self.kernel._thread_runs[self.thread.id] -= 1
        if self.outcome is None:
            self.outcome = outcome
        self._ended.set()
        if self._runner is None:
            self.kernel._release_slot()
        else:
            self._runner.on_exit(self.kernel._release_slot)
        if observed:
            notify(self.kernel.hooks, "onedoor_run_finished", run=self.info, outcome=self.outcome)


__all__ = ["Backend", "Kernel", "Limits", "RunInfo", "RunStream", "ToolFinished"]
