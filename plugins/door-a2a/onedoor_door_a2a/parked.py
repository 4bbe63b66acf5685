"""An input-required task whose run ends without an answer ends too: CANCELED, saying why.

While a task is input-required its run is parked in the kernel. The run may end there
without this door resuming it: its question expires (``question_ttl``), its thread is
deleted (by another door), or it is cancelled (another door's cancel, a shutdown). Then
the task must not stay input-required: :func:`watch` (one small task per input-required
task, ended with it) waits for that and publishes ``canceled`` with the reason, so
``GetTask`` shows it and a ``SubscribeToTask`` subscriber receives it; a later message
answering it is refused as the SDK refuses any message to an ended task.

How it knows: the door's ``onedoor_run_finished`` hook tells the executor when a run
ends (:meth:`~onedoor_door_a2a.executor.KernelExecutor.run_ended`), and it wakes at the
question's expiry in any case (a kernel without hooks, e.g. a door app built in-process,
still ends its expired tasks), and, with servers sharing the store, looks there now and
then: a task another server cancelled (:mod:`.elsewhere`) has its run cancelled here. A run
answered through another server goes on there (:mod:`.remote`): the watcher lets the task go. The kernel offers no way to wait for a parked run's end:
a journal's ``follow()`` returns at once while its run is parked.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING, Any, Awaitable, Callable

from a2a.types import TaskState
from onedoor import ThreadError

from .remote import let_go

if TYPE_CHECKING:
    from .links import TaskLink

log = logging.getLogger("onedoor.door.a2a")

EXPIRY_SLACK = 0.5  # seconds after a question's expiry the watcher looks whether the kernel has ended its run
MAX_WAIT = 30.0  # the longest wait between two looks once the expiry has passed
LOOK_EVERY = 2.0  # seconds between two looks at the store (servers sharing it: a cancel through another)


async def watch(kernel: Any, task_id: str, link: TaskLink, ttl: float, done: Any,
                ended_in_store: Callable[[str, str], Awaitable[bool]] | None = None) -> None:
    """Wait while ``task_id``'s run is parked; once it is not (and this door did not
    resume it: that stops the watcher), end the task CANCELED with the reason. With
    ``ended_in_store`` (servers sharing the store) it also looks there every ``LOOK_EVERY``
    seconds: a task another server ended (CancelTask there) has its run cancelled here.
    ``done()`` is called at the end, whatever happens."""
    asked = link.question
    try:
        late = EXPIRY_SLACK
        while kernel.open_questions(task_id, principal=link.principal):
            expires_at = link.expires_at if link.expires_at is not None else time.time() + ttl
            until_expiry = max(0.0, expires_at - time.time()) + late
            wait = until_expiry if ended_in_store is None else min(until_expiry, LOOK_EVERY)
            try:
                await asyncio.wait_for(link.ended.wait(), wait)
            except TimeoutError:
                if ended_in_store is not None and await _ended(ended_in_store, task_id, link.principal) \
                        and kernel.open_questions(task_id, principal=link.principal):
                    await kernel.cancel_run(task_id, principal=link.principal)
                elif wait >= until_expiry:
                    late = min(late * 2, MAX_WAIT)  # still parked after its expiry: look again, less often
        if asked is not None and kernel.question_status(asked.id, principal=link.principal,
                                                        run_id=task_id) == "answered":
            await let_go(link)  # answered through another server (this door's own answer stops the watcher)
            return
        await _run_gone(kernel, task_id, link)
        await link.end(TaskState.TASK_STATE_CANCELED, await why_ended(kernel, link, ttl))
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # noqa: BLE001 - the task's queue is gone (server shutting down): nothing to tell
        log.debug("could not end input-required task %s: %s", task_id, exc)
    finally:
        done()


async def _ended(ended_in_store: Callable[[str, str], Awaitable[bool]], task_id: str, principal: str) -> bool:
    try:
        return await ended_in_store(task_id, principal)
    except Exception as exc:  # noqa: BLE001 - the store is out: look again next time
        log.debug("could not read input-required task %s from the store: %s", task_id, exc)
        return False


async def _run_gone(kernel: Any, task_id: str, link: TaskLink) -> None:
    """Wait (bounded) until the ended run's last response is over, so that its turn is in
    its thread before the task says it ended."""
    stream = kernel.find_run(task_id, principal=link.principal)
    if stream is not None and not stream.suspended:
        try:
            await asyncio.wait_for(stream.ended.wait(), kernel.limits.cancel_grace + 5.0)
        except TimeoutError:
            pass


async def why_ended(kernel: Any, link: TaskLink, ttl: float) -> str:
    """Why a parked run ended without an answer: its thread was deleted, its question
    expired, or it was cancelled."""
    if link.thread_id is not None:
        try:
            await kernel.threads.get(link.principal, link.thread_id)
        except ThreadError as exc:
            if exc.reason == "not_found":
                return (f"the conversation (thread {link.thread_id!r}) was deleted, and the run waiting for an "
                        "answer with it")
    if link.expires_at is not None and time.time() >= link.expires_at - EXPIRY_SLACK:
        return f"the question expired unanswered (after {ttl:g} s): the run ended cancelled"
    return "the run was cancelled while it waited for an answer"


__all__ = ["why_ended", "watch"]
