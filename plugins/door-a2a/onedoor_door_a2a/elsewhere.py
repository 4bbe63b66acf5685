"""A2A methods on a task this server does not hold: :class:`Elsewhere`.

With tasks in the thread store (:mod:`.tasks`), a request about a task may reach a server
other than the one running it (a round-robin balancer), or reach a server after the one
that ran it stopped. The SDK's handler knows only this server's tasks in flight (its
``ActiveTask`` registry); for any other task the door asks the kernel where its run is:
a store that shares journals (PostgreSQL; SQLite with ``sqlite.shared_journal``) tells
whether another server drives it (its journal's lease holds) or parks it for an answer.

- **CancelTask** of a task running on another server: ``kernel.cancel_run`` (the store
  carries it to the server running it, within ``LEASE_RENEW`` seconds), then the task as
  that server ends it, read from the store. A task waiting for an answer elsewhere is
  ended ``canceled`` in the store here; the server holding its run sees that
  (:mod:`.parked` looks at the store while a run waits) and ends the run.
- **SubscribeToTask** of a task running elsewhere: the stored task, then its run's
  journal read through the store (``kernel.journals``): the events up to now go into the
  reply artifact and state silently and come out as one replacement (``append: false``),
  then live updates; the ending (status and final artifacts) as its server stored it.
  As with a2a-sdk's own cross-replica streams, a subscription here ends when the task
  waits for input.
- **An answer** (a message continuing an ``input-required`` task) reaching another server
  than the one whose run waits for it is given to that run through the store
  (:mod:`.remote`); a message for a task running elsewhere is refused (``task_elsewhere``).
- **A task no run carries any more** (its server stopped, killed, before it ended):
  ``GetTask``, ``CancelTask`` and ``SubscribeToTask`` find it so and store it ``failed``
  (``canceled`` if it waited for an answer), saying why. Only once no run has written it
  for ``ORPHAN_GRACE`` seconds (with shared journals), or when it was last written before
  this server started (without: one server).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any, AsyncIterator

from a2a.server.agent_execution.active_task import INTERRUPTED_TASK_STATES, TERMINAL_TASK_STATES
from a2a.server.tasks import TaskUpdater
from a2a.types import Task, TaskArtifactUpdateEvent, TaskState, TaskStatusUpdateEvent
from onedoor import STOP_CANCELLED, STOP_SUSPENDED, OnedoorError, QuestionAsked, RunFailed, RunFinished
from onedoor.journal import LEASE_RENEW, LEASE_TTL, STOPPED, JournalPage, RemoteJournal, shared_store

from .links import TaskLink
from .tasks import RecordTaskStore, owner_of

ORPHAN_GRACE = LEASE_TTL  # seconds a task's record must be left alone before it counts as carried by no run
ENDING_WAIT = 15.0  # seconds a follower waits for the ending its run's server stores
GONE = "the server running this task stopped before the task ended"
GONE_WAITING = "no run waits for an answer on this task any more: the server that asked stopped"


class _Collected:
    """An event queue that keeps what is put in it (a TaskLink's updates, for a follower)."""

    def __init__(self) -> None:
        self.events: list[Any] = []

    async def enqueue_event(self, event: Any) -> None:
        self.events.append(event)

    def take(self) -> list[Any]:
        taken, self.events = self.events, []
        return taken


class Elsewhere:
    def __init__(self, kernel: Any, tasks: Any, tell: Any, sends: list[str]) -> None:
        self.kernel = kernel
        self.tasks: RecordTaskStore = tasks
        self.tell = tell  # executor.tell: a kernel event into a TaskLink
        self.sends = sends

    # -- where a task's run is ------------------------------------------------------------
    def here(self, task_id: str, principal: str) -> bool:
        return self.kernel.find_run(task_id, principal=principal) is not None

    async def page(self, task_id: str, principal: str) -> JournalPage | None:
        """The shared journal of the task's run on another server, while it lives (its lease
        holds and it has not ended); None otherwise (or without shared journals)."""
        store = shared_store(self.kernel.store)
        if store is None or self.here(task_id, principal):
            return None
        page = await store.journal_read(task_id, principal, 0, limit=0)
        if page is None or page.ended or page.lease_until < time.time():
            return None
        return page

    async def stored(self, task_id: str, context: Any) -> tuple[Task, float] | None:
        return await self.tasks.get_record(task_id, owner_of(context))

    # -- a task no run carries ---------------------------------------------------------------
    async def settle(self, task_id: str, context: Any) -> Task | None:
        """The task, stored failed (canceled if it waited for input) when no run carries it
        any more; None when one may (or it has ended, or is unknown)."""
        found = await self.stored(task_id, context)
        if found is None:
            return None
        task, updated_at = found
        principal = owner_of(context)
        if task.status.state in TERMINAL_TASK_STATES or self.here(task_id, principal):
            return None
        if shared_store(self.kernel.store) is not None:
            if time.time() - updated_at < ORPHAN_GRACE or await self.page(task_id, principal) is not None:
                return None
        elif updated_at >= self.tasks.started_at:
            return None
        waiting = task.status.state in INTERRUPTED_TASK_STATES
        await self.store_ending(task, TaskState.TASK_STATE_CANCELED if waiting else TaskState.TASK_STATE_FAILED,
                                 GONE_WAITING if waiting else GONE, context)
        return task

    async def store_ending(self, task: Task, state: int, note: str, context: Any) -> None:
        from a2a.helpers import new_text_part

        collected = _Collected()
        updater = TaskUpdater(collected, task.id, task.context_id)  # type: ignore[arg-type]
        await updater.update_status(state, updater.new_agent_message([new_text_part(note)]))  # type: ignore[arg-type]
        ending: TaskStatusUpdateEvent = collected.events[0]
        if task.status.HasField("message"):
            task.history.append(task.status.message)
        task.status.CopyFrom(ending.status)
        await self.tasks.save(task, context)

    # -- CancelTask --------------------------------------------------------------------------
    async def cancel(self, task_id: str, context: Any) -> Task | None:
        """The task cancelled by the server running it, read from the store; None when the
        handler's own cancel is what to do (no run elsewhere, ended, unknown, waiting for input)."""
        found = await self.stored(task_id, context)
        if found is None or found[0].status.state in TERMINAL_TASK_STATES:
            return None
        principal = owner_of(context)
        if await self.page(task_id, principal) is None:
            return None  # no run elsewhere: the handler stores it canceled
        await self.kernel.cancel_run(task_id, principal=principal)
        if found[0].status.state in INTERRUPTED_TASK_STATES:
            return None  # stored canceled by the handler; the server holding the run sees it there
        deadline = time.monotonic() + self.kernel.limits.cancel_grace + LEASE_RENEW + 5.0
        pause = 0.02
        while time.monotonic() < deadline:
            await asyncio.sleep(pause)
            pause = min(pause * 2, 0.25)
            again = await self.stored(task_id, context)
            if again is not None and again[0].status.state in TERMINAL_TASK_STATES:
                return again[0]
        return None

    # -- SubscribeToTask ---------------------------------------------------------------------
    async def subscription(self, task_id: str, context: Any) -> AsyncIterator[Any] | None:
        """The events of a task this server does not hold (the handler's registry has no
        ActiveTask for it): followed from its run's journal when another server runs it,
        else the task as stored, alone (no run here to stream); None when the handler's own
        answer is right (unknown, ended: also a task just settled as no run carries it)."""
        found = await self.stored(task_id, context)
        if found is None or found[0].status.state in TERMINAL_TASK_STATES:
            return None
        principal = owner_of(context)
        page = await self.page(task_id, principal)
        store = shared_store(self.kernel.store)
        if page is not None and store is not None:
            return self._follow(found[0], RemoteJournal(store, task_id, principal, page), page.last_seq, context)
        if await self.settle(task_id, context) is not None:
            return None
        return _alone(found[0])

    async def _follow(self, task: Task, journal: RemoteJournal, caught_up: int, context: Any) -> AsyncIterator[Any]:
        yield task
        if task.status.state in INTERRUPTED_TASK_STATES:
            return
        collected = _Collected()
        link = TaskLink(TaskUpdater(collected, task.id, task.context_id),  # type: ignore[arg-type]
                        owner_of(context), None, self.sends)
        live = caught_up == 0
        ending: Any = None
        try:
            async for seq, event in journal.follow(0):
                if type(event) in (RunFinished, RunFailed):
                    ending = event
                    break
                if type(event) is not QuestionAsked:
                    await self.tell(link, event, link.state)
                if not live and seq >= caught_up:
                    live = True
                    collected.take()
                    await link.replay()
                for update in collected.take() if live else ():
                    yield update
                if not live:
                    collected.take()
        except OnedoorError:  # the store out too long, or the journal no longer kept: the client comes back
            return
        async for update in self._ending(task, link, collected, ending, context):
            yield update

    async def _ending(self, task: Task, link: TaskLink, collected: _Collected, ending: Any, context: Any) -> Any:
        """The task's ending as its server stored it (its artifacts, then its status)."""
        if isinstance(ending, RunFailed) and ending.error == STOPPED:
            await self.settle(task.id, context)
        deadline = time.monotonic() + ENDING_WAIT
        pause = 0.02
        while time.monotonic() < deadline:
            found = await self.stored(task.id, context)
            stored = found[0] if found is not None else None
            if stored is not None and stored.status.state in TERMINAL_TASK_STATES | INTERRUPTED_TASK_STATES:
                for artifact in stored.artifacts:
                    yield TaskArtifactUpdateEvent(task_id=task.id, context_id=task.context_id, artifact=artifact,
                                                  append=False, last_chunk=True)
                yield TaskStatusUpdateEvent(task_id=task.id, context_id=task.context_id, status=stored.status,
                                            metadata=stored.metadata)
                return
            await asyncio.sleep(pause)
            pause = min(pause * 2, 0.25)
        # not stored in time: the ending as the journal tells it
        if isinstance(ending, RunFailed):
            await link.end(TaskState.TASK_STATE_FAILED, ending.error)
        elif isinstance(ending, RunFinished) and ending.stop_reason != STOP_SUSPENDED:
            cancelled = ending.stop_reason == STOP_CANCELLED
            await link.end(TaskState.TASK_STATE_CANCELED if cancelled else TaskState.TASK_STATE_COMPLETED)
        for update in collected.take():
            yield update


async def _alone(task: Task) -> AsyncIterator[Any]:
    yield task


__all__ = ["ENDING_WAIT", "Elsewhere", "GONE", "GONE_WAITING", "ORPHAN_GRACE"]
