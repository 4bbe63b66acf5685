"""A run's turn on its thread: the user's message kept as the run starts, the rest of the
turn before its terminal event (see ``Kernel.run``'s ``thread``). Internal to the kernel."""

from __future__ import annotations

import logging
from typing import Any

from ..events import STOP_CANCELLED, RunFailed
from ..messages import Message
from ..threads import Thread, append_turn
from ..threads.leases import UNANSWERED
from ._runner import StopRun

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
    if core.message:
        opening.append(Message("user", core.message))
    if opening:
        try:
            core.thread = await append_turn(store, thread, opening)
        except Exception as exc:  # noqa: BLE001 - the store failed or refused: the run cannot go on
            core.turn_saved = True
            raise StopRun(f"thread {thread.id!r} cannot be continued: {exc}") from None
    core.recorder.message = ""  # kept already: the end of the run adds only the reply
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
        return await _keep_turn(core, thread, store, outcome)
    finally:
        await core.host.leases.end(core.run_id)


async def _keep_turn(core: Any, thread: Thread, store: Any, outcome: Any) -> Any:
    interrupted = "failed" if type(outcome) is RunFailed else ("cancelled" if outcome.stop_reason == STOP_CANCELLED else "")
    messages = core.recorder.messages(core.contract.parts, interrupted=interrupted)
    try:
        core.thread = await append_turn(store, thread, messages)
    except Exception as exc:  # noqa: BLE001 - the store failed: say so in the run's ending
        log.warning("run %s: could not keep its turn in thread %s: %s", core.run_id, thread.id, exc)
        if type(outcome) is RunFailed:
            return outcome
        return RunFailed(core.run_id, f"the reply could not be kept in thread {thread.id!r}: {exc}")
    return outcome


__all__ = ["INTERRUPTED_REPLY", "open_turn", "save_turn"]
