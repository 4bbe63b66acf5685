"""The bridge from A2A tasks to kernel runs: an a2a-sdk ``AgentExecutor``.

One task is one kernel run (a task that asks continues the same run). What the run
emits becomes task events:

=====================  =============================================================
kernel event           A2A event
=====================  =============================================================
TextDelta              artifact update of the ``reply`` artifact (``append`` after the first)
ReasoningDelta         status update ``working``, agent message, metadata kind ``reasoning``
ToolStarted/Finished   status update ``working``, text + data part, kind ``tool_started``/``tool_finished``
QuestionAsked          (held) then status ``input-required`` with the question (see answers.py)
RunFinished            status ``completed``; ``canceled`` for a cancelled run
RunFailed              status ``failed`` with the error as the status message
=====================  =============================================================

``CancelTask`` cancels the run (the backend is told and stops); a client that only goes
away does not (A2A tasks outlive their streams; ``SubscribeToTask`` re-attaches). With
a thread store, the A2A ``contextId`` names the onedoor thread the run continues.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from typing import Any

from a2a.helpers import get_message_text, new_data_part, new_task_from_user_message, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.tasks import TaskUpdater
from a2a.types import TaskState
from onedoor import (
    STOP_CANCELLED,
    STOP_SUSPENDED,
    Question,
    QuestionAnswered,
    QuestionAsked,
    QuestionError,
    ReasoningDelta,
    RunFailed,
    RunFinished,
    RunRefused,
    SuspendAsker,
    TextDelta,
    ToolFinished,
    ToolStarted,
)
from onedoor.threads import ThreadError, check_thread_id

from .answers import answer_from, question_parts

log = logging.getLogger("onedoor.door.a2a")

ARTIFACT_ID = "reply"
LOCAL = "local"
_PARKED_SIZE = 10_000  # input-required tasks remembered (their runs expire in the kernel)


def principal_of(context: RequestContext) -> str:
    """The onedoor principal the call context names (see app.PrincipalContextBuilder)."""
    user = context.call_context.user if context.call_context is not None else None
    name = getattr(user, "user_name", "") if user is not None else ""
    return name if isinstance(name, str) and name else LOCAL


class Parked:
    """An input-required task's run, waiting in the kernel for its answer."""

    __slots__ = ("run", "principal", "question")

    def __init__(self, run: Any, principal: str, question: Question) -> None:
        self.run = run
        self.principal = principal
        self.question = question


class KernelExecutor(AgentExecutor):
    """Runs every A2A task through ``kernel.run`` (or ``kernel.resume`` for an answer)."""

    def __init__(self, kernel: Any, *, door: str = "a2a", ttl: float | None = None, fallback: str = "deny") -> None:
        self.kernel = kernel
        self.door = door
        self.asker = SuspendAsker(ttl=ttl, fallback=fallback)
        self.running: dict[str, Any] = {}  # task id -> its RunStream while events flow
        self.parked: OrderedDict[str, Parked] = OrderedDict()
        self.cancelled: set[str] = set()  # tasks whose canceled state this executor published

    # -- AgentExecutor -------------------------------------------------------------------
    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        task_id = context.task_id or ""
        updater = TaskUpdater(event_queue, task_id, context.context_id or "")
        current = context.current_task
        if current is None:
            assert context.message is not None  # the handler checks messages (app.CheckedRequestHandler)
            await event_queue.enqueue_event(new_task_from_user_message(context.message))
        principal = principal_of(context)
        if current is not None and current.status.state == TaskState.TASK_STATE_INPUT_REQUIRED:
            run = await self._answer(context, updater, principal)
        else:
            run = await self._start(context, updater, principal)
        if run is None:
            return
        appending = current is not None and any(a.artifact_id == ARTIFACT_ID for a in current.artifacts)
        await self._pump(run, updater, task_id, principal, appending)

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        """Stop the task's run for real (running or waiting for an answer), then say canceled."""
        task_id = context.task_id or ""
        run = self.running.get(task_id)
        parked = self.parked.pop(task_id, None)
        if run is None and parked is not None:
            run = parked.run
        if run is not None:
            run.cancel()
        if task_id in self.running:
            self.cancelled.add(task_id)  # its pump must not say canceled a second time
        updater = TaskUpdater(event_queue, task_id, context.context_id or "")
        await updater.cancel(updater.new_agent_message([new_text_part("the task was cancelled")]))

    # -- starting and continuing runs ----------------------------------------------------
    async def _start(self, context: RequestContext, updater: TaskUpdater, principal: str) -> Any:
        text = get_message_text(context.message) if context.message is not None else ""
        try:
            thread = await self._thread(context.context_id or "", principal)
            return self.kernel.run(text, thread=thread, door=self.door, asker=self.asker, principal=principal)
        except (RunRefused, ThreadError) as exc:
            await self._fail(updater, f"the run was refused: {exc}")
            return None

    async def _thread(self, context_id: str, principal: str) -> Any:
        """The onedoor thread the A2A context names (made on first use), or None without a store."""
        store = self.kernel.store
        if store is None:
            return None
        thread_id = check_thread_id(context_id)
        thread = await store.get(principal, thread_id)
        if thread is not None:
            return thread
        try:
            return await store.create(principal, thread_id=thread_id)
        except ThreadError as exc:
            # two first messages on one new context at once: the other made it a moment ago
            again = await store.get(principal, thread_id) if exc.reason == "conflict" else None
            if again is None:
                raise
            return again

    async def _answer(self, context: RequestContext, updater: TaskUpdater, principal: str) -> Any:
        """The resumed run, once the message answers the task's open question; else None
        (the task asks again with the reason, or fails when its run is gone)."""
        task_id = context.task_id or ""
        parked = self.parked.get(task_id)
        if parked is None or parked.principal != principal:
            await self._fail(updater, "no run waits for an answer on this task (its question expired, "
                             "or the server restarted)")
            return None
        open_now = self.kernel.open_questions(parked.run.run_id, principal=principal)
        question = next((q for q in open_now if q.id == parked.question.id), open_now[0] if open_now else None)
        if question is None:
            self.parked.pop(task_id, None)
            await self._fail(updater, "the question expired and its run ended")
            return None
        try:
            answer = answer_from(question, context.message)
            run = self.kernel.resume([answer], principal=principal, door=self.door)
        except (ValueError, QuestionError) as exc:
            if isinstance(exc, QuestionError) and exc.reason != "invalid":
                self.parked.pop(task_id, None)
                await self._fail(updater, f"the answer was refused: {exc}")
                return None
            await updater.requires_input(updater.new_agent_message(
                [new_text_part(f"That did not answer the question: {exc}"), *question_parts(question)]
            ))
            return None
        self.parked.pop(task_id, None)
        return run

    # -- the event pump ------------------------------------------------------------------
    async def _pump(self, run: Any, updater: TaskUpdater, task_id: str, principal: str, appending: bool) -> None:
        self.running[task_id] = run
        asked: Question | None = None
        try:
            async with run:
                async for event in run:
                    kind = type(event)
                    if kind is TextDelta:
                        await updater.add_artifact([new_text_part(event.text)], artifact_id=ARTIFACT_ID,
                                                   name="reply", append=appending)
                        appending = True
                    elif kind is RunFinished:
                        if event.stop_reason == STOP_SUSPENDED and asked is not None:
                            self._park(task_id, Parked(run, principal, asked))
                            await updater.requires_input(updater.new_agent_message(question_parts(asked)))
                        else:
                            await self._finish(updater, task_id, event)
                    elif kind is RunFailed:
                        await self._fail(updater, event.error)
                    elif kind is QuestionAsked:
                        asked = event.question
                    else:
                        await self._progress(updater, event)
        except asyncio.CancelledError:
            run.cancel()  # CancelTask (or shutdown): the backend is told; leaving `async with` waits for it
            raise
        finally:
            self.running.pop(task_id, None)
            self.cancelled.discard(task_id)

    async def _progress(self, updater: TaskUpdater, event: Any) -> None:
        """Reasoning, tool calls and answers: ``working`` status updates a client can show."""
        kind = type(event)
        if kind is ReasoningDelta:
            parts = [new_text_part(event.text)]
            meta = {"onedoor": "reasoning"}
        elif kind is ToolStarted:
            parts = [new_text_part(f"calling {event.name}"),
                     new_data_part({"call_id": event.call_id, "name": event.name, "arguments": event.arguments})]
            meta = {"onedoor": "tool_started"}
        elif kind is ToolFinished:
            parts = [new_text_part(f"{event.name} {'failed' if event.is_error else 'finished'}"),
                     new_data_part({"call_id": event.call_id, "name": event.name, "result": event.result,
                                    "is_error": event.is_error})]
            meta = {"onedoor": "tool_finished"}
        elif kind is QuestionAnswered:
            parts = [new_data_part({"answer": event.answer.to_dict()})]
            meta = {"onedoor": "question_answered"}
        else:
            return  # RunStarted
        await updater.update_status(TaskState.TASK_STATE_WORKING, updater.new_agent_message(parts, metadata=meta))

    async def _finish(self, updater: TaskUpdater, task_id: str, event: RunFinished) -> None:
        if event.stop_reason == STOP_CANCELLED:
            if task_id not in self.cancelled:  # CancelTask has said so already
                await updater.cancel(updater.new_agent_message([new_text_part("the run was cancelled")]))
            return
        await updater.complete()

    async def _fail(self, updater: TaskUpdater, error: str) -> None:
        await updater.failed(updater.new_agent_message([new_text_part(error)]))

    def _park(self, task_id: str, parked: Parked) -> None:
        self.parked[task_id] = parked
        self.parked.move_to_end(task_id)
        while len(self.parked) > _PARKED_SIZE:
            self.parked.popitem(last=False)


__all__ = ["KernelExecutor", "principal_of"]
