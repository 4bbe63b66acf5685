"""A run's turn on its thread: the user's message kept as the run starts, the rest of the
turn before its terminal event (see ``Kernel.run``'s ``thread``). Internal to the kernel."""

from __future__ import annotations

import logging
from typing import Any

from ..events import STOP_CANCELLED, RunFailed
from ..messages import Message
from ..threads import Thread, ThreadError, append_turn, keeps_state
from ..threads.leases import UNANSWERED
from ._runner import StopRun
from ._state import RunState

log = logging.getLogger("onedoor.kernel")

INTERRUPTED_REPLY = UNANSWERED  # kept for a turn no run finished (a server stopped, or the reply could not be kept)


async def open_turn(core: Any) -> None:
    """Keep the user's message in the thread as the run starts (a server killed mid-run
    keeps it), after marking a turn an earlier server left without a reply."""
    thread, store = core.thread, core.host.store
    if thread is None or store is None or core.recorder is None:
        return
    opening = []
    if await _left_unanswered(core, thread):
        opening.append(Message("assistant", INTERRUPTED_REPLY))
        core.history = [*core.history, opening[-1]]
    if core.message or core.parts:
        opening.append(Message("user", core.message, parts=core.parts))
    if opening:
        try:
            core.thread = await append_turn(store, thread, opening)
        except Exception as exc:  # noqa: BLE001 - the store failed or refused: the run cannot go on
            core.turn_saved = True
            raise StopRun(f"thread {thread.id!r} cannot be continued: {exc}") from None
    core.recorder.message, core.recorder.parts = "", ()  # kept already: the end of the run adds only the reply
    await core.host.leases.begin(thread.owner, thread.id, core.run_id)  # other processes: this turn is answered


async def _left_unanswered(core: Any, thread: Thread) -> bool:
    """The thread ends with a user's message no run is answering: none of this kernel's,
    nor (with a store that shares journals) another server's."""
    host = core.host
    if not thread.messages or thread.messages[-1].role != "user" or host.thread_runs[thread.id] != 1:
        return False
    try:
        return not await host.live_elsewhere(thread.id, besides=core.run_id, owner=thread.owner)
    except Exception:  # noqa: BLE001 - cannot tell: leave the turn unmarked rather than mark it wrongly
        return False


async def save_turn(core: Any, outcome: Any) -> Any:
    """Append the run's turn to its thread (once); a turn that cannot be kept fails the run."""
    thread, store = core.thread, core.host.store
    if thread is None or store is None or core.recorder is None or core.turn_saved or outcome is None:
        return outcome
    core.turn_saved = True
    try:
        if core.thread_gone:  # deleted while the run went on: nothing of it is kept
            return outcome
        return await _keep_turn(core, thread, store, outcome)
    finally:
        await core.host.leases.end(core.run_id)


async def _keep_turn(core: Any, thread: Thread, store: Any, outcome: Any) -> Any:
    interrupted = "failed" if type(outcome) is RunFailed else ("cancelled" if outcome.stop_reason == STOP_CANCELLED else "")
    messages = core.recorder.messages(core.contract.parts, interrupted=interrupted, usage=outcome.usage)
    what = "the reply"
    try:
        core.thread = await append_turn(store, thread, messages)
        if core.state.changed and keeps_state(store):
            what = "the run's state changes"
            core.thread = await keep_state(store, core.thread, core.state)
    except Exception as exc:  # noqa: BLE001 - the store failed: say so in the run's ending
        log.warning("run %s: could not keep %s in thread %s: %s", core.run_id, what, thread.id, exc)
        if type(outcome) is RunFailed:
            return outcome
        return RunFailed(core.run_id, f"{what} could not be kept in thread {thread.id!r}: {exc}", outcome.usage)
    return outcome


async def keep_state(store: Any, thread: Thread, state: RunState, attempts: int = 16) -> Thread:
    """Keep what a run changed of its thread's state: compare-and-set on the version it
    started from; when another door changed the state meanwhile, the run's changes are
    applied again on top of that (ValueError, failing the run, once they no longer apply)."""
    version, value = state.base_version, state.value
    current = thread
    for _ in range(attempts):
        try:
            kept: Thread = await store.update_state(thread.owner, thread.id, value or {}, expected_version=version)
            return kept
        except ThreadError as exc:
            if exc.reason != "conflict":
                raise
        current = await store.get(thread.owner, thread.id)
        if current is None:
            raise ThreadError("not_found", f"thread {thread.id!r} was deleted")
        try:
            value = state.replayed_on(current.state)
        except ValueError as exc:
            raise ThreadError("conflict", f"its state changes no longer apply to the thread's state, which "
                              f"another client changed meanwhile ({exc})") from None
        version = current.state_version
    raise ThreadError("conflict", f"the state of thread {thread.id!r} kept changing while saving; try again")


__all__ = ["INTERRUPTED_REPLY", "keep_state", "open_turn", "save_turn"]
