"""One run's state, shared by the responses that carry it (see :mod:`onedoor.run.stream`).

A run usually has one response, its :class:`~onedoor.run.stream.RunStream`. A run that
parks for answers (``SuspendAsker``) has one more response per resume: each is a new
stream over the same core, which holds what outlives a response: the backend and its
feed, the question gate, the contract, the thread and the outcome. Internal to the kernel.
"""

from __future__ import annotations

import time
from typing import Any

from ..content import Part
from ..events import RunFailed, RunFinished
from ..messages import Message
from ..observe import notify, observed
from ..port import RunContext
from ..questions import SILENT_DENY
from ..threads import Thread, TurnRecorder
from ..usage import ModelUsage, add_usage
from ._gate import QuestionGate
from ._runner import BackendRunner
from ._state import RunState
from .contract import Contract
from .model import RunInfo


class RunCore:
    """What a run keeps across its responses. ``host`` is the kernel's
    :class:`~onedoor.run.registry.RunRegistry`: limits, backend, hooks, store, parking."""

    def __init__(
        self, host: Any, message: str, history: list[Message], context: RunContext, asker: Any = SILENT_DENY,
        thread: Thread | None = None, *, parts: tuple[Part, ...] = (), state: RunState | None = None,
        meta: dict[str, str] | None = None,
    ) -> None:
        self.host = host
        self.limits = host.limits
        self.message = message
        self.parts = parts  # the message's content when it is more than text
        self.state = state or RunState(None, host.limits.max_state_chars)
        self.usage: tuple[ModelUsage, ...] = ()  # what the backend reported so far (UsageReported)
        self.meta = meta or {}
        self.history = history
        self.context = context
        self.run_id = context.run_id
        self.principal = context.principal
        self.info: RunInfo | None = None
        self.outcome: RunFinished | RunFailed | None = None
        lot = host.lot
        self.gate = QuestionGate(
            asker,
            run_id=self.run_id,
            ttl=self.limits.question_ttl,
            can_park=host.can_park,
            on_open=lambda q: lot.question_opened(self, q),
            on_close=lambda q, a: lot.question_closed(self, q, a),
            observed=observed(host.hooks, "onedoor_question_asked") or observed(host.hooks, "onedoor_question_answered"),
        )
        context.asker = self.gate.ask
        self.contract = Contract(self._is_client_tool)
        self.thread = thread  # after the run: the thread as stored with this run's turn
        self.recorder = TurnRecorder(message, parts) if thread is not None else None
        self.turn_saved = False
        self.thread_gone = False  # the thread was deleted while the run went on: keep nothing
        self.current: Any = None  # the response carrying the run now (a RunStream)
        self.parked_at = 0.0
        self.grace = self.limits.cancel_grace
        self.deadline: float | None = None  # time.monotonic() when the run timeout strikes
        self.finished = False
        self.runner: BackendRunner | None = None

    @property
    def backend_name(self) -> str:
        return str(self.host.backend.name)

    def add_usage(self, usage: tuple[ModelUsage, ...]) -> None:
        self.usage = add_usage(self.usage, usage)

    def total_usage(self, final: tuple[ModelUsage, ...] = ()) -> tuple[ModelUsage, ...]:
        """What the run used: every UsageReported, plus the terminal event's own."""
        return add_usage(self.usage, final) if final else self.usage

    def _is_client_tool(self, name: str) -> bool:
        return self.context.client_tool(name) is not None

    # -- the backend -------------------------------------------------------------------
    def start_backend(self) -> None:
        host = self.host
        starting = None
        if observed(host.hooks, "onedoor_backend_starting"):
            def starting() -> None:
                notify(host.hooks, "onedoor_backend_starting", run=self.info)
        self.runner = BackendRunner.start(
            host.backend, self.message, self.history, self.context, self.limits.queue_size, host.worker_threads,
            starting=starting,
        )
        self.gate.bind(self.runner.feed)
        run_timeout = self.limits.run_timeout
        self.deadline = time.monotonic() + run_timeout if run_timeout else None

    def tell_backend(self) -> None:
        self.context.cancel.cancel()
        if self.runner is not None:
            self.runner.tell()

    async def stop_backend(self, tell: bool) -> None:
        if self.runner is not None:
            await self.runner.stop(tell=tell, grace=self.grace)

    def shorten_grace(self, grace: float) -> None:
        """``cancel(grace=...)``: the backend gets at most this long to stop."""
        self.grace = min(self.grace, max(0.0, grace))
        if self.runner is not None:
            self.runner.shorten(self.grace)

    def resumed(self) -> None:
        """A new response continues the parked run: time spent parked does not count
        against the run timeout."""
        if self.deadline is not None:
            self.deadline += time.monotonic() - self.parked_at

    # -- endings -----------------------------------------------------------------------
    def timeout_message(self, which: str) -> str:
        name, lim = self.backend_name, self.limits
        if which == "run":
            return f"backend {name!r} exceeded the run timeout of {lim.run_timeout:g} s"
        return f"backend {name!r} sent no event for {lim.idle_timeout:g} s (idle timeout)"


__all__ = ["RunCore"]
