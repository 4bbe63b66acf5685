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
ended meanwhile (its question expired a moment ago), with the reason.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from a2a.server.agent_execution import RequestContext, SimpleRequestContextBuilder
from onedoor import RunRefused, ThreadError

from .refusals import a2a_error, note

if TYPE_CHECKING:
    from .executor import KernelExecutor


class AdmittingContextBuilder(SimpleRequestContextBuilder):  # type: ignore[misc]
    def __init__(self, executor: KernelExecutor, task_store: Any) -> None:
        super().__init__()
        self.executor = executor
        self.task_store = task_store

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
        ended = self.executor.ended_while_waiting(task_id, request)
        if ended is not None:
            raise UnsupportedOperationError(message=f"Task {task_id} is in terminal state: TASK_STATE_CANCELED "
                                            f"({ended})")


__all__ = ["AdmittingContextBuilder"]
