"""A new task's run starts before the task exists: a kernel refusal is the protocol's error.

a2a-sdk's request handler (1.2.3 to 1.3) asks its ``RequestContextBuilder`` for the
request context of a message before it makes the task. :class:`AdmittingContextBuilder`
builds it as the SDK's own builder does and, for a message that starts a task, has the
executor start the task's kernel run right there (the contextId names the thread, the
task id is the run id). A refusal (busy, too large, a thread another principal holds,
a thread whose run waits for answers…) raises the A2A error of :mod:`.refusals`: the
SDK answers it and makes no task. The started run waits in the executor for the task's
``execute``.

A message for an existing task starts nothing here. One for a task that has ended is
refused here, as the SDK refuses it (``UnsupportedOperationError``, "Task … is in terminal
state"), before the SDK sets up the task again: a2a-sdk (1.2.3, 1.3.0) would make an
``ActiveTask`` whose event queues are never closed (their tasks pending until garbage
collected, a traceback each). So is one answering an input-required task whose run has
ended meanwhile (its question expired a moment ago), with the reason, and one whose question
was answered meanwhile (``already_answered``). A message answering a task whose run waits on
another server is given to that run here (:mod:`.remote`); one for a task another server runs
is refused (``task_elsewhere``, 409), and one for a task no run carries any more is refused
as for an ended task, once the task is stored so (:mod:`.elsewhere`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from a2a.server.agent_execution import RequestContext, SimpleRequestContextBuilder
from onedoor import QuestionError, RunRefused, ThreadError
from onedoor.journal import shared_store
from onedoor.journal.answers import answer_store

from .refusals import a2a_error, elsewhere_error, note
from .remote import answer_elsewhere

if TYPE_CHECKING:
    from .elsewhere import Elsewhere
    from .executor import KernelExecutor


class AdmittingContextBuilder(SimpleRequestContextBuilder):  # type: ignore[misc]
    def __init__(self, executor: KernelExecutor, task_store: Any, places: Elsewhere | None = None) -> None:
        super().__init__()
        self.executor = executor
        self.task_store = task_store
        self.places = places

    async def build(
        self, context: Any, params: Any = None, task_id: str | None = None, context_id: str | None = None,
        task: Any = None,
    ) -> RequestContext:
        request = await super().build(context, params=params, task_id=task_id, context_id=context_id, task=task)
        if params is None:
            return request
        if task_id:
            await self._check_open(task_id, context, request)
            return request
        try:
            await self.executor.admit(request)
        except (RunRefused, ThreadError) as exc:
            error, answer = a2a_error(exc)
            note(context, answer)
            raise error from None
        return request

    async def _check_open(self, task_id: str, context: Any, request: RequestContext) -> None:
        """UnsupportedOperationError for a message to a task that has ended."""
        from a2a.server.agent_execution.active_task import TERMINAL_TASK_STATES
        from a2a.types import TaskState
        from a2a.utils.errors import UnsupportedOperationError

        stored = await self.task_store.get(task_id, context)
        state = stored.status.state if stored is not None else None
        if state in TERMINAL_TASK_STATES:
            raise UnsupportedOperationError(message=f"Task {task_id} is in terminal state: {TaskState.Name(state)}")
        answered = self.executor.answered_already(task_id, request)
        if answered is not None:
            error, refused = a2a_error(QuestionError("answered", answered))
            note(context, refused)
            raise error
        ended = self.executor.ended_while_waiting(task_id, request)
        if ended is not None:
            raise UnsupportedOperationError(message=f"Task {task_id} is in terminal state: TASK_STATE_CANCELED "
                                            f"({ended})")
        if stored is not None and self.places is not None:
            await self._check_here(task_id, context, stored, request)

    async def _check_here(self, task_id: str, context: Any, stored: Any, request: RequestContext) -> None:
        """The refusal of a message for a task another server runs (:mod:`.elsewhere`); a
        message for one whose run waits there for its answer answers it (:mod:`.remote`);
        a task no run carries any more is ended first."""
        from a2a.server.agent_execution.active_task import INTERRUPTED_TASK_STATES
        from a2a.types import TaskState
        from a2a.utils.errors import UnsupportedOperationError

        from .tasks import owner_of

        places = self.places
        assert places is not None
        principal = owner_of(context)
        if places.here(task_id, principal):
            return
        waiting = stored.status.state in INTERRUPTED_TASK_STATES
        if waiting and answer_store(self.executor.kernel.store) is not None \
                and await answer_elsewhere(self.executor, places, task_id, request, stored, context):
            return
        if await places.page(task_id, principal) is not None:
            error, answer = elsewhere_error(task_id, waiting=waiting)
            note(context, answer)
            raise error
        settled = await places.settle(task_id, context)
        if settled is not None:
            raise UnsupportedOperationError(message=f"Task {task_id} is in terminal state: "
                                            f"{TaskState.Name(settled.status.state)} ({settled.status.message.parts[0].text})")
        if not waiting and shared_store(self.executor.kernel.store) is not None:
            # written a moment ago and its run not found: ending, or its server just stopped
            error, answer = elsewhere_error(task_id, waiting=False)
            note(context, answer)
            raise error


__all__ = ["AdmittingContextBuilder"]
