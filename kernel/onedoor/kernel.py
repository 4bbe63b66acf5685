"""The run lifecycle: ``Kernel.run`` is the only way a door starts a run.

Every run gets a fresh agent from the backend's factory. A sync agent runs on its own
worker thread, an async one in its own task; either way its events reach the door
through a bounded feed, in batches, as one async stream. The kernel enforces the
contract (see :mod:`onedoor.run.contract`), turns exceptions, broken streams and silence
past the idle timeout into a :class:`RunFailed`, and cancels for real: the backend is
told (cancel token, task cancellation, its ``cancel()``/``interrupt()``), its worker
ends, and the run closes with stop_reason ``cancelled``.

A door uses it like this, and only like this: ``kernel.run`` takes one of the kernel's
``max_concurrent_runs`` slots, and only iterating the stream to its end, ``aclose()``,
or leaving ``async with`` gives the slot back::

    async with kernel.run(message, history=history, door="rest") as run:
        async for event in run:
            ...            # call run.cancel() at any time; leaving the block cancels too

This module is the kernel's face; the machinery is in :mod:`onedoor.run` (stream, registry,
parking), :mod:`onedoor.journal` (numbered events for readers that come back) and
:mod:`onedoor.threads` (stored conversations; :class:`ThreadDesk`, doors' thread calls).
"""

from __future__ import annotations

import asyncio
import logging
import threading
from typing import TYPE_CHECKING, Any, Callable, Iterable, Sequence

from .errors import RunRefused
from .events import RunFailed, RunFinished, RunStarted  # noqa: F401 - re-exported (older imports)
from .limits import Limits
from .observe import notify
from .port import ToolSpec
from .principals import LOCAL
from .questions import Answer, Asker, Question, QuestionError, from_approver
from .run import INTERRUPTED_REPLY, Backend, RunInfo, RunRegistry, RunStream, check_content, check_run_id
from .threads.leases import turn_leases
from .threads.model import Thread, ThreadStore

if TYPE_CHECKING:  # imported when a door first uses them (onedoor run never does)
    from .journal import Journals, RemoteAnswer
    from .threads.desk import ThreadDesk

log = logging.getLogger("onedoor.kernel")

Approver = Callable[[str, str, Any], Any]  # the older form of a live asker: async (call_id, name, arguments) -> bool


class Kernel:
    """One backend, its limits and its observers; doors start runs with :meth:`run`."""

    def __init__(
        self, backend: Backend, *, limits: Limits | None = None, hooks: Any = None, store: ThreadStore | None = None
    ) -> None:
        self._journals: Journals | None = None
        self._desk: ThreadDesk | None = None
        self._runs = RunRegistry(
            backend, limits or Limits(), hooks=hooks, store=store, live_elsewhere=self._live_elsewhere, kept=self._kept,
            drive=self._drive_journaled,
        )

    # -- what the kernel holds -----------------------------------------------------------
    @property
    def backend(self) -> Backend:
        return self._runs.backend

    @backend.setter
    def backend(self, backend: Backend) -> None:
        self._runs.backend = backend

    @property
    def limits(self) -> Limits:
        return self._runs.limits

    @property
    def hooks(self) -> Any:
        """A pluggy ``PluginManager.hook`` relay (or a stand-in with the hook names), or None."""
        return self._runs.hooks

    @hooks.setter
    def hooks(self, hooks: Any) -> None:
        self._runs.hooks = hooks

    @property
    def store(self) -> ThreadStore | None:
        """Where threads live (see :meth:`run`'s ``thread``), or None."""
        return self._runs.store  # type: ignore[no-any-return]

    @store.setter
    def store(self, store: ThreadStore | None) -> None:
        self._runs.store = store
        if self._journals is not None:
            self._journals.store = store
        self._desk = None

    @property
    def active_runs(self) -> int:
        """Runs holding a slot: started and not yet ended, or ended with a backend still running."""
        return self._runs.active

    @property
    def parked_runs(self) -> int:
        """Runs waiting for answers between two requests (see :mod:`onedoor.questions.askers`)."""
        return len(self._runs.lot)

    @property
    def journals(self) -> Journals:
        """Runs driven by the kernel and journaled, for resumable streams (:mod:`onedoor.journal`)."""
        if self._journals is None:
            from .journal.index import Journals
            self._journals = Journals(self.limits, self.store)
            self._journals.parked_hooks = (self._take_answers, self._cancel_parked)
        return self._journals

    @property
    def threads(self) -> ThreadDesk:
        """The thread calls doors make (open-or-create, pages, delete with its runs)."""
        if self._desk is None:
            from .threads.desk import ThreadDesk
            self._desk = ThreadDesk(self.store, forget=self.forget_thread, answering=self._answering,
                                    max_state_chars=self.limits.max_state_chars)
        return self._desk

    def worker_threads(self) -> list[threading.Thread]:
        """Worker threads of sync runs that are still alive (for tests and metrics)."""
        return [t for t in list(self._runs.worker_threads) if t.is_alive()]

    # -- runs ------------------------------------------------------------------------------
    def run(
        self,
        message: str | Sequence[Any],
        *,
        history: Iterable[Any] | None = None,
        tools: Sequence[ToolSpec] = (),
        door: str = "",
        run_id: str | None = None,
        extras: dict[str, Any] | None = None,
        approver: Approver | None = None,
        asker: Asker | None = None,
        principal: str = LOCAL,
        thread: Thread | None = None,
        state: dict[str, Any] | None = None,
        state_version: int | None = None,
        meta: dict[str, str] | None = None,
    ) -> RunStream:
        """Start a run; raise :class:`~onedoor.errors.RunRefused` (before any event) if it cannot.

        ``message`` may be empty only when the history ends with tool results: the run
        then continues after the client answered frontend tools. ``asker`` says how the
        door answers the backend's questions (:mod:`onedoor.questions.askers`); without one,
        every question is answered no and the stream carries no question events.
        ``approver`` (``async (call_id, name, arguments) -> bool``) is the older form of a
        live asker for approvals only. ``principal`` is who is calling: only they can
        resume the run. ``run_id`` (a client's choice) must be cursor-safe and not in use
        nor used recently (``RunRefused("in_use")``). ``thread`` (a
        :class:`~onedoor.threads.Thread` of this principal, from ``kernel.threads``) is the
        conversation so far, instead of ``history``: the message is kept in it as the run
        starts (a killed server keeps it), the rest of the turn (tool calls and results,
        the reply, a reply cut short marked so) before the stream's terminal event, so a
        client that sees the end can read the thread. A thread whose run waits for answers
        refuses a new message (``RunRefused("pending_questions")``). To make a stream
        resumable, hand it to ``kernel.journals.start`` (:mod:`onedoor.journal`). Use the
        stream as ``async with`` (or iterate it to its end, or ``aclose()`` it): that is
        what frees the run's slot.

        ``message`` is text, or a list of parts (:mod:`onedoor.content`: JSON objects or
        :class:`~onedoor.content.Part`): checked under the content limits, and refused
        (``unsupported_content``) when the backend does not take a kind it holds.
        ``state`` is the run's shared state (a JSON object; :mod:`onedoor.state`): what the
        client holds. With a ``thread``, the thread's state is used when ``state`` is None;
        a ``state`` sent is kept with the thread (as the run's first change), and
        ``state_version``, when given, must be the thread's state version it was based on
        (``RunRefused("state_conflict")`` when another client changed it since). A stream
        with a state starts, after RunStarted, with a StateSnapshot of it. ``meta``: strings
        the door passes on from its request for observers (W3C ``traceparent``,
        ``tracestate``), on :class:`RunInfo`.
        """
        if asker is None and approver is not None:
            asker = from_approver(approver)
        try:
            return self._runs.start(
                message, history=history, tools=tools, door=door, run_id=run_id, extras=extras, asker=asker,
                principal=principal, thread=thread, state=state, state_version=state_version, meta=meta,
            )
        except RunRefused as exc:
            notify(self.hooks, "onedoor_run_refused", door=door, reason=exc.reason, principal=principal)
            raise

    def check_content(self, message: Any) -> tuple[str, tuple[Any, ...]]:
        """The ``(text, parts)`` :meth:`run` would take ``message`` as, or the RunRefused it
        would raise (``invalid``, ``too_large``, ``unsupported_content``): for a door that
        must refuse content before it makes anything (a thread, a task)."""
        return check_content(self.limits, message, self.backend.accepts, self.backend.name)

    def check_run_id(self, run_id: Any) -> None:
        """RunRefused unless ``run_id`` could name a new run now: cursor-safe (``invalid``)
        and not running, waiting for answers, nor used recently (``in_use``). For a door
        that names a response itself (AG-UI's runId of a resume) before it commits to it."""
        check_run_id(run_id, self._runs.live.__contains__, self._kept)

    def find_run(self, run_id: str, *, principal: str = LOCAL) -> RunStream | None:
        """The stream carrying run ``run_id`` of ``principal`` now, while it runs or waits for
        answers (another principal's run is None, as an unknown one)."""
        return self._runs.find(run_id, principal)

    async def cancel_run(self, run_id: str, *, principal: str = LOCAL) -> bool:
        """Cancel a run of ``principal`` running or waiting for answers here, else (a store
        that shares journals) one another server runs. False: no such run going on."""
        stream = self._runs.find(run_id, principal)
        if stream is not None:
            stream.cancel()
            return True
        from .journal.shared import shared_store
        if shared_store(self.store) is None:
            return False
        journal = await self.journals.find(run_id, principal)
        if journal is None or journal.done:
            return False
        journal.cancel()
        return True

    def cancel_all(self, grace: float | None = None) -> int:
        """Cancel every run in flight; returns how many were told.

        ``grace`` (capped by ``limits.cancel_grace``) is how long each backend gets to
        stop before its door gets the cancelled ending anyway.
        """
        runs = self._runs.in_flight()
        for run in runs:
            run.cancel(grace=grace)
        return len(runs)

    async def shutdown(self, grace: float) -> int:
        """Graceful shutdown: cancel every run and wait, at most ``grace`` seconds, until
        each stream being read has sent its ending. Backends get half of ``grace`` (at
        most ``cancel_grace``) to stop; the rest is the doors' time to write the endings.
        Returns how many runs were cancelled."""
        return await self._runs.shutdown(grace)

    def drain(self) -> None:
        """Start no new run from now on (``RunRefused("draining")``); runs going on, parked
        ones included, go on, and their answers are still taken. For a server that is
        stopping behind a load balancer: :meth:`drained`, then :meth:`shutdown`."""
        self._runs.draining = True

    @property
    def draining(self) -> bool:
        return self._runs.draining

    async def drained(self, timeout: float) -> bool:
        """Wait, at most ``timeout`` seconds, until no run holds a slot (True) or not (False)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while self._runs.active > 0:
            left = deadline - loop.time()
            if left <= 0:
                return False
            await asyncio.sleep(min(0.05, left))
        return True

    def forget_thread(self, thread_id: str, principal: str) -> int:
        """After a thread's deletion: cancel the runs still writing it (waiting for answers
        too) and drop its runs' journals, which hold its text. Returns how many runs were
        cancelled. ``kernel.threads.delete`` calls it."""
        cancelled = self._runs.forget_thread(thread_id, principal)
        if self._journals is not None:
            self._journals.forget_thread(thread_id, principal)
        return cancelled

    # -- questions of parked runs ------------------------------------------------------------
    def open_questions(self, run_id: str, *, principal: str = LOCAL) -> list[Question]:
        """The questions a parked run of ``principal`` waits for (empty for any other run)."""
        return self._runs.open_questions(run_id, principal)

    def question_status(self, question_id: str, *, principal: str = LOCAL, run_id: str | None = None) -> str:
        """Where a parked run's question stands for ``principal``: ``open``, ``expired``,
        ``answered`` or ``unknown`` (another principal's question, and with ``run_id``
        another run's, is ``unknown``)."""
        return self._runs.lot.status(question_id, principal, run_id)

    def question(self, question_id: str, *, principal: str = LOCAL) -> tuple[str, Question | None] | None:
        """Which run a question of ``principal`` belongs to: ``(run id, question)`` while it
        is open and parked, ``(run id, None)`` once closed (answered, expired, cancelled;
        remembered for a while), None for an unknown one (and another principal's)."""
        return self._runs.lot.locate(question_id, principal)

    def check_question(self, question_id: str, *, principal: str = LOCAL, run_id: str | None = None) -> None:
        """Raise the QuestionError a resume answering ``question_id`` would meet (unknown,
        expired, answered: naming the answer); return None while it is open and parked."""
        self._runs.lot.find([Answer(question_id, "")], principal, run_id)

    def resume(
        self, answers: Iterable[Answer | dict], *, principal: str = LOCAL, door: str = "", run_id: str | None = None
    ) -> RunStream:
        """Answer a parked run's questions and get a new stream that continues it.

        Raises :class:`onedoor.questions.QuestionError` before anything is answered if an
        answer is malformed, does not fit its question, or names a question that is
        unknown (or another principal's, or with ``run_id`` another run's), expired or
        already answered. The new stream starts with ``RunStarted`` (same ``run_id``) and
        goes on as the first did: it may itself end ``suspended`` again, for questions
        still open or asked later.
        """
        try:
            parsed = [a if isinstance(a, Answer) else Answer.from_dict(a) for a in answers]
        except ValueError as exc:
            raise QuestionError("invalid", str(exc)) from None
        return self._runs.resume(parsed, principal, door, run_id)

    async def answer(
        self, answers: Iterable[Answer | dict], *, principal: str = LOCAL, door: str = "", run_id: str,
        names: Sequence[str] = (), notes: dict[str, Any] | None = None,
    ) -> RunStream | RemoteAnswer:
        """Answer a parked run's questions wherever it is parked.

        A run parked here: what :meth:`resume` returns (a new stream that continues it). A run
        parked on another server sharing the store (its journal in the store ends suspended):
        the answers are checked against its journal as :meth:`resume` checks them, left in
        the store for its server, and, once that server has taken them, a
        :class:`~onedoor.journal.RemoteAnswer`: ``journal.follow(after)`` is the
        continuation, the same events a reader on that server gets
        (:mod:`onedoor.journal.answers`). QuestionError with :meth:`resume`'s reasons when
        the answers are refused (``answered`` for the loser of two answering at once,
        ``expired`` when the run ended meanwhile or its server stopped).

        ``names``/``notes`` (JSON) go with answers to another server: it gives them the run
        (``journals.name``/``note``) before the continuation's first event.
        """
        try:
            parsed = [a if isinstance(a, Answer) else Answer.from_dict(a) for a in answers]
        except ValueError as exc:
            raise QuestionError("invalid", str(exc)) from None
        from .journal.answers import answer_elsewhere, answer_store, came_first
        store = answer_store(self.store)
        if store is None or self._runs.find(run_id, principal) is not None or self._local_question(parsed, principal):
            if store is not None and await came_first(store, self.journals.get(run_id, principal), self._take_answers):
                raise QuestionError("answered", "another server's answer to this question came first")
            return self._runs.resume(parsed, principal, door, run_id)
        return await answer_elsewhere(store, run_id, principal, parsed, door, names=names, notes=notes)

    def _local_question(self, answers: list[Answer], principal: str) -> bool:
        """Whether this server knows (or recently closed) a question these answers name."""
        return any(self._runs.lot.status(a.question_id, principal) != "unknown" for a in answers)

    # -- for the journals --------------------------------------------------------------------
    def _take_answers(self, run_id: str, principal: str, text: str) -> None:
        """Answers another server left for a run parked here: resumed as a local answer is,
        into its journal."""
        from .journal.answers import read_answers
        try:
            answers, door, names, notes = read_answers(text)
            stream = self._runs.resume(answers, principal, door, run_id)
        except (QuestionError, ValueError, KeyError, TypeError) as exc:
            log.info("run %s: answers from another server not taken (%s)", run_id, exc)
            return
        self.journals.adopt(self.journals.start(stream, on_disconnect="finish"), names, notes)

    def _cancel_parked(self, run_id: str, principal: str) -> None:
        stream = self._runs.find(run_id, principal)
        if stream is not None:
            stream.cancel()

    # -- for the registry ------------------------------------------------------------------
    async def _live_elsewhere(self, thread_id: str, besides: str, owner: str = "") -> bool:
        """Whether a run of another process answers a thread: its turn lease (a store that
        keeps them), else its shared journal's lease."""
        leases = turn_leases(self.store)
        if leases is not None and owner:
            return await leases.turn_live(owner, thread_id, besides=besides)
        from .journal.shared import shared_store
        shared = shared_store(self.store)
        return shared is not None and await shared.journal_live_on(thread_id, besides=besides)

    async def _answering(self, thread: Thread) -> bool:
        """Whether a run (here, or in another process) is answering ``thread`` now."""
        if self._runs.thread_runs[thread.id] > 0:
            return True
        try:
            return await self._live_elsewhere(thread.id, "", thread.owner)
        except Exception:  # noqa: BLE001 - cannot tell: say nothing rather than something false
            return True

    def _kept(self, run_id: str) -> bool:
        return self._journals is not None and self._journals.kept(run_id)

    def _drive_journaled(self, stream: RunStream) -> Any:
        """A journaled run's ending nobody reads (its questions expired) goes through its
        journal, so a reader there, here or on another server, sees it end."""
        journal = self._journals.get(stream.run_id, stream.principal) if self._journals is not None else None
        if journal is None or journal.running:
            return None
        return self._journals.start(stream, on_disconnect="finish").task  # type: ignore[union-attr]


__all__ = ["INTERRUPTED_REPLY", "Approver", "Backend", "Kernel", "Limits", "RunInfo", "RunStream"]
