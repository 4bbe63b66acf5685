"""The kernel's runs: their slots, their worker threads, the runs in flight and the
parked ones. :class:`RunRegistry` is what a run's machinery sees of its kernel (limits,
backend, hooks, store), so runs never reach into the kernel itself.
"""

from __future__ import annotations

import asyncio
import os
import threading
import weakref
from collections import Counter
from typing import Any, Awaitable, Callable, Iterable

from ..errors import RunRefused
from ..limits import Limits
from ..messages import Message
from ..port import CancelToken, RunContext, ToolSpec
from ..questions import SILENT_DENY, Answer, Asker, Question, QuestionError, check_answer, clip
from ..state import checked_state, copy_state
from ..threads import Thread, keeps_state
from ._core import RunCore
from ._leases import LeaseKeeper
from ._parking import ParkingLot
from ._state import RunState
from .admission import check_content, check_input, check_run_id
from .model import Backend
from .stream import RunStream, continue_parked, drain

LiveElsewhere = Callable[[str, str, str], Awaitable[bool]]


async def _nowhere(thread_id: str, besides: str, owner: str = "") -> bool:
    return False


class RunRegistry:
    """Every run of one kernel. ``live_elsewhere(thread_id, besides)`` tells whether
    another server is writing a thread (a store that shares journals); ``kept(run_id)``
    whether a run id's journal is still kept (such an id is not reused)."""

    def __init__(
        self, backend: Backend, limits: Limits, *, hooks: Any = None, store: Any = None,
        live_elsewhere: LiveElsewhere = _nowhere, kept: Callable[[str], bool] = lambda run_id: False,
        drive: Callable[[RunStream], asyncio.Future[Any] | None] = lambda stream: None,
    ) -> None:
        self.backend = backend
        self.limits = limits
        self.hooks = hooks
        self.store = store
        self._live_elsewhere = live_elsewhere
        self._kept = kept
        self._drive = drive
        self.lot = ParkingLot()
        self.leases = LeaseKeeper(self)
        self.runs: weakref.WeakSet[RunStream] = weakref.WeakSet()  # every response not yet collected
        self.worker_threads: set[threading.Thread] = set()
        self.thread_runs: Counter[str] = Counter()  # thread id -> runs of this kernel writing it
        self.live: dict[str, RunCore] = {}  # runs not yet finished (parked ones included), by run id
        self.active = 0
        self.draining = False  # the server is shutting down: no new run starts (resumes go on)
        self._slot_lock = threading.Lock()  # a stuck worker frees its slot from its own thread

    # -- starting runs -------------------------------------------------------------------
    def start(
        self, message: Any, *, history: Iterable[Any] | None, tools: Iterable[ToolSpec], door: str, run_id: str | None,
        extras: dict[str, Any] | None, asker: Asker | None, principal: str, thread: Thread | None,
        state: Any = None, state_version: int | None = None, meta: dict[str, str] | None = None,
    ) -> RunStream:
        """Check the run can start (RunRefused if not), take a slot, make its stream."""
        if thread is not None:
            history = self._thread_history(thread, history, principal)
        text, parts = check_content(self.limits, message, self.backend.accepts, self.backend.name)
        past = check_input(self.limits, text, history)
        if thread is not None:
            self._check_room(thread, text, parts)
        run_state = self._run_state(thread, state, state_version)
        if run_id is not None:
            check_run_id(run_id, self.live.__contains__, self._kept)
        self._take_slot()
        context = RunContext(
            run_id=run_id or os.urandom(16).hex(), cancel=CancelToken(), tools=tuple(tools), door=door,
            extras=dict(extras or {}), principal=principal, content=parts, state=run_state.copy(),
        )
        core = RunCore(self, text, past, context, asker or SILENT_DENY, thread, parts=parts, state=run_state,
                       meta=_checked_meta(meta))
        stream = RunStream(core)
        if thread is not None:
            self.thread_runs[thread.id] += 1
        self.runs.add(stream)
        self.live[context.run_id] = core
        return stream

    def _thread_history(self, thread: Thread, history: Any, principal: str) -> Any:
        if history is not None:
            raise RunRefused("invalid", "send either a thread or a history, not both")
        if self.store is None:
            raise RunRefused("invalid", "this server keeps no threads")
        if thread.owner != principal:
            raise RunRefused("not_found", f"no thread {thread.id!r}")
        waiting = self.lot.waiting_on(thread.id)
        if waiting:  # a new message is never taken as an answer
            raise RunRefused("pending_questions", f"thread {thread.id!r} has a run waiting for answers to "
                             f"{', '.join(clip(q) for q in waiting)}: answer them (or cancel the run) first")
        return thread.messages

    def _check_room(self, thread: Thread, text: str, parts: tuple[Any, ...]) -> None:
        """A message that would take its thread past the store's size limit is refused
        before the run starts (else the run would start and fail keeping it)."""
        limit = getattr(self.store, "max_thread_chars", None)
        if not isinstance(limit, int):
            return
        held = sum(m.size for m in thread.messages)
        adding = Message("user", text, parts=parts).size
        if held + adding > limit:
            raise RunRefused("too_large", f"thread {thread.id!r} holds {held} characters and this message {adding} "
                             f"(a part's bytes count as characters); the limit is {limit}: start a new thread")

    def _run_state(self, thread: Thread | None, state: Any, version: int | None) -> RunState:
        """The run's state at its start: the thread's, or what the client sent (kept with the
        thread as the run's first change). ``version``: the thread's state version the client's
        state is based on (``state_conflict`` when the thread's has moved on since)."""
        limit = self.limits.max_state_chars
        stored = thread is not None and keeps_state(self.store)
        base = thread.state_version if stored and thread is not None else 0
        if state is None:
            if not stored or thread is None:
                return RunState(None, limit)
            return RunState(copy_state(thread.state), limit, base, shown=bool(thread.state))
        try:
            value = checked_state(state, limit)
        except ValueError as exc:
            reason = "too_large" if "limit" in str(exc) else "invalid"
            raise RunRefused(reason, f"bad state: {exc}") from None
        if stored and version is not None and version != base:
            raise RunRefused("state_conflict", f"the state sent is based on version {version} of thread "
                             f"{thread.id!r}'s state, which is now at version {base}: read it again")  # type: ignore[union-attr]
        run_state = RunState(value, limit, base, shown=True)
        if stored and thread is not None and value != thread.state:
            run_state.changes.append(("snapshot", value))
        return run_state

    def _take_slot(self) -> None:
        if self.draining:
            raise RunRefused("draining", "this server is shutting down and starts no new runs; try another server",
                             retry_after=1)
        limit = self.limits.max_concurrent_runs
        with self._slot_lock:
            if self.active >= limit:
                raise RunRefused(
                    "busy", f"the server is running {self.active} runs, its limit; try again shortly",
                    retry_after=self.limits.retry_after,
                )
            self.active += 1

    def _release_slot(self) -> None:
        """Give a run's slot back; may be called from a worker thread."""
        with self._slot_lock:
            self.active -= 1

    # -- what runs ask of their kernel ---------------------------------------------------
    def can_park(self) -> bool:
        return len(self.lot) < self.limits.max_parked_runs

    async def live_elsewhere(self, thread_id: str, *, besides: str, owner: str = "") -> bool:
        return await self._live_elsewhere(thread_id, besides, owner)

    def drain(self, stream: RunStream) -> asyncio.Future[Any]:
        """Drive a response nobody reads to its end (a parked run that expired or was
        cancelled): through its journal when it has one, so its readers see the ending."""
        return self._drive(stream) or asyncio.ensure_future(drain(stream))

    def run_ended(self, core: RunCore) -> None:
        """A run has ended for good: its id is free (once no journal keeps it), its thread
        no longer written, and its slot given back once its backend has really ended."""
        if self.live.get(core.run_id) is core:
            del self.live[core.run_id]
        if core.thread is not None:
            self.thread_runs[core.thread.id] -= 1
        if core.runner is None:
            self._release_slot()
        else:
            core.runner.on_exit(self._release_slot)

    # -- parked runs ---------------------------------------------------------------------
    def open_questions(self, run_id: str, principal: str) -> list[Question]:
        core = self.lot.parked.get(run_id)
        if core is None or core.principal != principal:
            return []
        return core.gate.open_questions()

    def resume(self, answers: list[Answer], principal: str, door: str, run_id: str | None) -> RunStream:
        """Answer a parked run's questions and return the stream that continues it."""
        core = self.lot.find(answers, principal, run_id)  # unknown (or closed) questions first
        if len({a.question_id for a in answers}) != len(answers):
            raise QuestionError("invalid", "each question may be answered once per resume")
        gate = core.gate
        pending = {q.id: q for q in gate.open_questions()}
        checked = [check_answer(pending[a.question_id], Answer(a.question_id, a.outcome, a.value, principal, "person"))
                   for a in answers]
        successor = continue_parked(core, door)
        self.lot.unpark(core)
        for answer in checked:
            gate.answer(answer)
        return successor

    # -- every run -----------------------------------------------------------------------
    def in_flight(self) -> list[RunStream]:
        return [stream for stream in list(self.runs) if stream.outcome is None]

    def of_thread(self, thread_id: str, principal: str) -> list[RunStream]:
        return [r for r in self.in_flight() if r.thread is not None and r.thread.id == thread_id
                and r.principal == principal]

    def forget_thread(self, thread_id: str, principal: str) -> int:
        """A thread was deleted: its runs (waiting for answers too) are cancelled and keep
        nothing of their turn."""
        runs = self.of_thread(thread_id, principal)
        for core in list(self.live.values()):
            if core.thread is not None and core.thread.id == thread_id and core.principal == principal:
                core.thread_gone = True
        for run in runs:
            run.cancel()
        return len(runs)

    def find(self, run_id: str, principal: str) -> RunStream | None:
        """The stream carrying run ``run_id`` of ``principal`` now (running or parked), or None."""
        core = self.live.get(run_id) if isinstance(run_id, str) else None
        return core.current if core is not None and core.principal == principal else None

    async def shutdown(self, grace: float) -> int:
        """Cancel every run and wait, at most ``grace`` seconds, until each stream being read
        has sent its ending (see ``Kernel.shutdown``)."""
        runs = self.in_flight()
        for run in runs:
            run.cancel(grace=grace / 2)
        waits = [asyncio.ensure_future(r.ended.wait()) for r in runs if r.started]
        waits += list(self.lot.drains)
        if waits:
            _, late = await asyncio.wait(waits, timeout=grace)
            for wait in late:
                wait.cancel()
        self.leases.stop()
        return len(runs)


def _checked_meta(meta: Any) -> dict[str, str]:
    """What a door passed on from its request for observers (W3C ``traceparent``…): short strings only."""
    if not meta:
        return {}
    if not isinstance(meta, dict):
        raise RunRefused("invalid", "meta must be a mapping of strings")
    return {str(k)[:64]: v[:1024] for k, v in list(meta.items())[:16] if isinstance(v, str)}


__all__ = ["RunRegistry"]
