"""One run's state, shared by the responses that carry it (see :mod:`onedoor.run.stream`).

A run usually has one response, its :class:`~onedoor.run.stream.RunStream`. A run that
parks for answers (``SuspendAsker``) has one more response per resume: each is a new
stream over the same core, which holds what outlives a response: the backend and its
feed, the question gate, the contract, the thread and the outcome. Internal to the kernel.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from ..errors import ContractViolation
from ..events import STOP_CANCELLED, ReasoningDelta, RunFailed, RunFinished, TextDelta, ToolFinished
from ..messages import Message
from ..observe import notify, observed
from ..port import RunContext
from ..questions import SILENT_DENY
from ..threads import Thread, TurnRecorder
from ..usage import ModelUsage, add_usage
from ._gate import QuestionGate
from ._runner import BackendRunner, StopRun
from ._state import RunState
from .contract import Contract
from .model import RunInfo

if TYPE_CHECKING:
    from ..content import Part

log = logging.getLogger("onedoor.kernel")


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
        self.awaiting_token = False  # observers wait for the run's first text (onedoor_first_token)
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

    # -- waiting and endings -----------------------------------------------------------------
    async def wait_for_events(self) -> None:
        """Wait for the backend; StopRun when it stays silent too long or the run takes too long."""
        core = self
        assert core.runner is not None
        lim = core.limits
        timeout = lim.idle_timeout
        if core.deadline is not None:
            left = core.deadline - time.monotonic()
            if left <= 0:
                raise StopRun(core.timeout_message("run"))
            timeout = min(timeout, left) if timeout else left
        gate = core.gate
        gate.door_waiting(True)
        got = await core.runner.feed.wait(timeout)
        gate.door_waiting(False)
        if got or gate.holds_idle_timeout(lim.idle_timeout):
            return  # events came, or a human is (or was just) being asked: the idle timeout waits
        if core.deadline is not None and time.monotonic() >= core.deadline:
            raise StopRun(core.timeout_message("run"))
        raise StopRun(core.timeout_message("idle"))

    def failure(self, exc: Exception) -> RunFailed:
        """The RunFailed of a run the kernel ends (a broken contract, a timeout, a backend that raised)."""
        core = self
        message = str(exc)
        if isinstance(exc, ContractViolation):
            message = f"backend {core.backend_name!r} broke the event contract: {message}"
        log.info("run %s failed: %s", core.run_id, message)
        return RunFailed(core.run_id, message, core.total_usage())

    def describe_error(self, exc: BaseException) -> str:
        """What the backend raised, in one line (its traceback only in the debug log)."""
        name = self.backend_name
        log.debug("backend %r raised", name, exc_info=exc)
        detail = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        text = f"{type(exc).__name__}: {detail}" if detail else type(exc).__name__
        return f"backend {name!r} failed: {text}"

    async def ending(self, terminal: Any) -> tuple[list[ToolFinished], RunFinished | RunFailed]:
        """The events that end the run: tool calls left open are closed, then the outcome
        (with the run's usage: every UsageReported and the backend's terminal event's own)."""
        core, contract = self, self.contract
        run_id = core.run_id
        if terminal is None:  # cancelled
            await core.stop_backend(tell=True)
            usage = core.total_usage()
            return contract.close_open_tools("cancelled"), RunFinished(run_id, contract.text, STOP_CANCELLED, usage)
        usage = core.total_usage(terminal.usage)
        if type(terminal) is RunFailed:
            return contract.close_open_tools("the run failed"), RunFailed(run_id, str(terminal.error), usage)
        return [], RunFinished(run_id, terminal.text, terminal.stop_reason, usage)

    def park(self, rest: list[Any], on_expiry: Any) -> bool:
        """A response ends with a question: park the run until its questions expire (the rest
        of the batch goes back to the feed for the response that continues it). False, and no
        parking, when no question is open any more (its backend stopped waiting first)."""
        assert self.runner is not None
        open_questions = self.gate.open_questions()
        if not open_questions:
            return False
        self.runner.feed.items.extendleft(reversed(rest))
        self.parked_at = time.monotonic()
        expiry = [q.expires_at for q in open_questions if q.expires_at is not None]
        expires_at = min(expiry) if expiry else time.time() + self.limits.question_ttl
        self.host.lot.park(self, expires_at, on_expiry)
        return True

    def at_first_token(self, batch: list[Any]) -> list[Any]:
        """Tell observers of the run's first text when the door reaches it: a batch with text
        after other events is cut there (the rest goes back to the feed, for the next batch)."""
        at = next((i for i, e in enumerate(batch) if type(e) is TextDelta or type(e) is ReasoningDelta), -1)
        if at == 0:
            self.awaiting_token = False
            notify(self.host.hooks, "onedoor_first_token", run=self.info)
        elif at > 0:
            assert self.runner is not None
            self.runner.feed.items.extendleft(reversed(batch[at:]))
            return batch[:at]
        return batch

    def timeout_message(self, which: str) -> str:
        name, lim = self.backend_name, self.limits
        if which == "run":
            return f"backend {name!r} exceeded the run timeout of {lim.run_timeout:g} s"
        return f"backend {name!r} sent no event for {lim.idle_timeout:g} s (idle timeout)"


__all__ = ["RunCore"]
