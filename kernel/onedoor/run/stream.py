"""One response of a run: the async stream of events a door reads (see ``Kernel.run``).

A stream yields ``RunStarted``, the backend's events as the contract allows them (and
the kernel's question events, for a door that passed an asker), then exactly one terminal
event. With a ``SuspendAsker``, a question ends the response with
``RunFinished(stop_reason="suspended")`` and parks the run; ``kernel.resume`` returns a
new stream over the same run (its :class:`~onedoor.run._core.RunCore`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING, Any, AsyncGenerator, AsyncIterator

from .. import events as _events  # the state and usage events' classes are made on first use
from ..errors import ContractViolation
from ..events import (
    STOP_CANCELLED,
    STOP_SUSPENDED,
    TERMINAL_EVENTS,
    RunFailed,
    RunFinished,
    RunStarted,
    ToolFinished,
    ToolStarted,
    type_name,
)
from ..observe import notify, observed
from ._core import RunCore
from ._gate import Injected, Observation
from ._runner import StopRun
from ._turn import open_turn, save_turn
from .model import RunInfo

if TYPE_CHECKING:
    from ..events import Event

log = logging.getLogger("onedoor.kernel")


class RunStream:
    """One run's event stream. Iterate it, or use it as an async context manager.

    ``cancel()`` asks the run to stop: the backend is told, and within ``cancel_grace``
    the stream ends with the events already produced, ToolFinished errors for open tool
    calls, and RunFinished(stop_reason="cancelled"). ``aclose()`` (or leaving
    ``async with``) also cancels, for a consumer that went away and wants no more
    events; it is also what frees the slot of a run that was never iterated.
    """

    def __init__(self, core: RunCore, *, resumed: bool = False) -> None:
        self._core = core
        core.current = self
        self._retired = False  # this response ended "suspended": the run is parked (or went on in another)
        self._cancel_requested = False
        self._started = False
        self._ended = asyncio.Event()  # set once this response has ended (see Kernel.shutdown)
        self._resumed = resumed
        self._gen = self._drive()

    # -- what doors read ---------------------------------------------------------------
    @property
    def run_id(self) -> str:
        return self._core.run_id

    @property
    def principal(self) -> str:
        return self._core.principal

    @property
    def message(self) -> str:
        return self._core.message

    @property
    def history(self) -> list[Any]:
        return self._core.history

    @property
    def context(self) -> Any:
        return self._core.context

    @property
    def parts(self) -> tuple[Any, ...]:
        """The message's content when it is more than text (:mod:`onedoor.content`), else empty."""
        return self._core.parts

    @property
    def state(self) -> dict[str, Any] | None:
        """The run's shared state now (every change the backend made so far applied), or
        None for a run without one. Read it, do not change it."""
        return self._core.state.value

    @property
    def state_version(self) -> int:
        """The thread's state version the run started from (0 without a thread)."""
        return self._core.state.base_version

    @property
    def usage(self) -> tuple[Any, ...]:
        """Usage the backend reported so far (the terminal event carries the total)."""
        return self._core.usage

    @property
    def thread(self) -> Any:
        """The run's thread (after the run: as stored with its turn), or None."""
        return self._core.thread

    @property
    def info(self) -> RunInfo | None:
        return self._core.info

    @property
    def outcome(self) -> RunFinished | RunFailed | None:
        """The run's terminal event once it has ended (None while it runs or waits)."""
        return self._core.outcome

    @property
    def ended(self) -> asyncio.Event:
        """Set once this response has ended (its terminal event, or its suspension)."""
        return self._ended

    @property
    def started(self) -> bool:
        """Iteration of this response has begun."""
        return self._started

    @property
    def cancelled(self) -> bool:
        return self._cancel_requested

    @property
    def suspended(self) -> bool:
        """This response ended with questions and the run is parked (or already resumed
        in another stream): the response's end, or its client going away, must not cancel
        it; ``cancel()`` still does, on purpose."""
        return self._retired

    # -- public API --------------------------------------------------------------------
    def __aiter__(self) -> AsyncIterator[Event]:
        return self._gen

    async def __aenter__(self) -> "RunStream":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()

    def cancel(self, grace: float | None = None) -> None:
        """Ask the run to stop; safe to call more than once and after the end.

        ``grace`` shortens how long the backend gets to stop (never beyond ``cancel_grace``).
        """
        core = self._core
        if grace is not None:
            core.shorten_grace(grace)
        if self._retired:  # the run went on in another stream, or is parked
            if core.current is not self:
                core.current.cancel(grace)
            else:
                cancel_parked(core, "cancelled")
            return
        if self._cancel_requested or core.outcome is not None:
            return
        self._cancel_requested = True
        core.gate.cancel()
        core.tell_backend()
        if core.runner is not None:
            core.runner.feed.wake()

    async def aclose(self) -> None:
        """Stop the run (cancelled, if it had not ended) and free its slot."""
        started = self._started
        if not started and self._core.runner is not None and not self._retired:
            # a resumed run nobody read: its backend is running, so stop it the usual way
            self.cancel()
            async for _ in self._gen:
                pass
            return
        await self._gen.aclose()
        if not started:  # never iterated: no backend ran and no observer saw it
            self._finish(RunFinished(self.run_id, "", STOP_CANCELLED), observed=False)

    # -- the drive loop ----------------------------------------------------------------
    async def _drive(self) -> AsyncGenerator[Event, None]:  # noqa: C901 - the hot loop, kept in one frame
        """The stream itself (see the module docstring)."""
        core = self._core
        self._begin()
        run_id = core.run_id
        contract = core.contract
        outcome: RunFinished | RunFailed | None = None
        parked = False
        try:
            yield RunStarted(run_id)
            if not self._resumed and core.state.shown_at_start:
                yield _events.StateSnapshot(core.state.value or {})  # shared: a state is never changed in place
            terminal: Any = None
            try:
                await self._start_run()
                pass_text = contract.pass_text  # the fast path: most events are text in mid-run
                core.awaiting_token = not self._resumed and observed(core.host.hooks, "onedoor_first_token")
                while terminal is None and not self._cancel_requested:
                    batch = await self._next_batch()
                    for index, event in enumerate(batch):
                        if self._cancel_requested:
                            break
                        if pass_text(event):
                            yield event
                            continue
                        if type(event) is Observation:  # an observer hook, in its place among the events
                            notify(core.host.hooks, event.hook, run=core.info, **event.kwargs)
                            continue
                        if type(event) is Injected:  # the kernel's own question events
                            if not event.suspend:
                                yield event.event
                                event.fail_if_asked()
                            elif self._park(batch[index + 1:]):  # (False: the backend stopped waiting)
                                parked = True
                                yield event.event
                                yield RunFinished(run_id, contract.text, STOP_SUSPENDED)
                                return
                            continue
                        contract.check(event)
                        if type(event) in TERMINAL_EVENTS:
                            terminal = event
                            break
                        event = self._passing(event)
                        if event is not None:
                            yield event
                closing, outcome = await core.ending(terminal)
            except (ContractViolation, StopRun) as exc:
                core.gate.cancel()  # a question still open (a timeout while asked) is answered no
                await core.stop_backend(tell=True)
                closing, outcome = contract.close_open_tools("the run failed"), self._core.failure(exc)
            for event in closing:
                self._note_tool(event)
                yield event
            outcome = await save_turn(core, outcome)
            core.outcome = outcome
            yield outcome
            await core.stop_backend(tell=False)
        except BaseException:
            if not parked:  # else the consumer left after the suspended ending: the run stays parked
                outcome = await self._consumer_left()
            raise
        finally:
            if not parked:
                self._finish(outcome or RunFinished(run_id, contract.text, STOP_CANCELLED, core.usage))

    def _begin(self) -> None:
        self._started = True
        core = self._core
        if not self._resumed:
            core.info = RunInfo(
                core.run_id, core.backend_name, core.context.door, core.message, len(core.history), time.time(),
                core.thread.id if core.thread is not None else None, core.principal, core.meta,
            )
            notify(core.host.hooks, "onedoor_run_started", run=core.info)

    async def _start_run(self) -> None:
        """A run's first response keeps the user's message and starts the backend (unless
        cancelled first); a resumed one has both."""
        if self._resumed:
            return
        await open_turn(self._core)
        if not self._cancel_requested:
            self._core.start_backend()

    async def _consumer_left(self) -> RunFinished | RunFailed | None:
        """The consumer went away (aclose / task cancelled): stop the backend, no more events."""
        core = self._core
        cut_short = core.outcome is None
        if cut_short:
            core.outcome = RunFinished(core.run_id, core.contract.text, STOP_CANCELLED, core.total_usage())
            self._cancel_requested = True
            core.gate.cancel()
        await core.stop_backend(tell=cut_short)
        await save_turn(core, core.outcome)
        return core.outcome

    async def _next_batch(self) -> list[Any]:
        """The backend's next events; empty once the run is cancelled.

        Raises StopRun when the backend raised, stayed silent past the idle timeout or
        ran past the run timeout, and ContractViolation when its stream just stopped.
        """
        core = self._core
        assert core.runner is not None
        feed = core.runner.feed
        while True:
            batch = feed.take()
            if batch is not None:
                return core.at_first_token(batch) if core.awaiting_token else batch
            if core.gate.failure is not None and not core.gate.emits:
                raise StopRun(core.gate.failure)
            if self._cancel_requested:
                return []
            if feed.done:
                batch = feed.take()  # what it sent just before it ended
                if batch is not None:
                    return batch
                if feed.error is not None:
                    raise StopRun(core.describe_error(feed.error))
                raise ContractViolation("backend's stream ended without RunFinished or RunFailed")
            await self._core.wait_for_events()

    def _passing(self, event: Any) -> Any:
        """A backend's event (not text, not terminal) on its way to the door: a state change
        applied (one that does not apply fails the run), usage added up; None for the
        backend's RunStarted (the kernel sent its own)."""
        core = self._core
        kind = type(event)
        if kind is RunStarted:
            return None
        late = type_name(event) if kind is not ToolStarted and kind is not ToolFinished else None
        if late == "state_snapshot" or late == "state_delta":
            event = core.state.apply(event)
        elif late == "usage_reported":
            core.add_usage(event.usage)
            notify(core.host.hooks, "onedoor_usage", run=core.info, usage=event.usage)
        self._note_tool(event)
        return event

    def _note_tool(self, event: Any) -> None:
        """A tool event (or another that is not text) on its way to the door: kept for the
        thread's turn, told to the observers."""
        core = self._core
        if core.recorder is not None:
            core.recorder.note(event, core.contract.parts)
        kind = type(event)
        if kind is ToolStarted:
            notify(core.host.hooks, "onedoor_tool_started", run=core.info, call=event)
        elif kind is ToolFinished:
            notify(core.host.hooks, "onedoor_tool_finished", run=core.info, result=event)

    # -- parking (SuspendAsker) -----------------------------------------------------------
    def _park(self, rest: list[Any]) -> bool:
        """This response ends with a question: park the run (see ``RunCore.park``)."""
        if not self._core.park(rest, lambda: cancel_parked(self._core, "expired")):
            return False
        self._retired = True
        self._ended.set()
        return True

    # -- endings -----------------------------------------------------------------------
    def _finish(self, outcome: RunFinished | RunFailed, observed: bool = True) -> None:
        """Once per run: record the outcome, free the slot (once the backend has really
        ended too) and tell the observers."""
        core = self._core
        if core.finished:
            return
        core.finished = True
        if core.outcome is None:
            core.outcome = outcome
        self._ended.set()
        core.host.run_ended(core)
        if observed:
            notify(core.host.hooks, "onedoor_run_finished", run=core.info, outcome=core.outcome)


def continue_parked(core: RunCore, door: str = "") -> RunStream:
    """A new response for the rest of a parked run (a resume)."""
    if door:
        core.context.door = door
    core.resumed()
    stream = RunStream(core, resumed=True)
    core.host.runs.add(stream)
    return stream


def cancel_parked(core: RunCore, how: str) -> None:
    """End a parked run with no reader (its questions expired, or it was cancelled): its
    questions are answered so, and it is driven to its cancelled ending."""
    lot = core.host.lot
    if lot.parked.get(core.run_id) is not core:
        return
    lot.unpark(core)
    successor = continue_parked(core)
    successor._cancel_requested = True
    core.gate.cancel(how)
    core.tell_backend()
    lot.drain(core.host.drain(successor))


async def drain(stream: RunStream) -> None:
    """Drive a run nobody reads to its end (a parked run that expired or was cancelled)."""
    async with stream:
        async for _ in stream:
            pass


__all__ = ["RunStream", "cancel_parked", "continue_parked", "drain"]
