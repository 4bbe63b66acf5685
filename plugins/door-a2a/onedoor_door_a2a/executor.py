"""The bridge from A2A tasks to kernel runs: an a2a-sdk ``AgentExecutor``.

One task is one kernel run, and the task id is the run id (a task that asks continues
the same run). A new task's run starts before the task exists (:mod:`.admission`), so a
kernel refusal is the protocol's error and no task is made; ``execute`` reads the run.
What the run emits becomes task events:

=====================  =============================================================
kernel event           A2A event
=====================  =============================================================
TextDelta, ReplyPart   artifact update of the ``reply`` artifact (``append`` after the first);
                       before the task asks or ends, one update with the whole reply
                       (``append: false``, ``lastChunk`` at the end; see links.py)
ReasoningDelta         status update ``working``, agent message, metadata kind ``reasoning``
ToolStarted/Finished   status update ``working``, text + data part, kind ``tool_started``/``tool_finished``;
                       a result's parts (files, data) also as the artifact ``tool-<call id>``
StateSnapshot/Delta    the ``state`` artifact: the whole state as one data part (replaced)
QuestionAsked          (held) then status ``input-required`` with the question (see answers.py)
RunFinished            status ``completed``; ``canceled`` for a cancelled run
RunFailed              status ``failed`` with the error as the status message
=====================  =============================================================

The final status update's metadata (merged into the task's by the SDK) holds the run's
``usage``, per model (the kernel's ``ModelUsage`` JSON), and, for a run with a state kept
with its thread, the thread's ``state_version`` after the run. A new task's message is
turned into the run's input by :mod:`.content` (parts, and a state part); the W3C trace
context of the request's headers (or the message's metadata) goes to ``kernel.run(meta=)``.

The run goes through its journal (``kernel.journals``, ``on_disconnect="finish"``): with a
store that shares journals, another server follows it (``SubscribeToTask``) and cancels
it (:mod:`.elsewhere`). ``CancelTask`` cancels the run (``kernel.cancel_run``: the backend
is told and stops); a client that only goes away does not (A2A tasks outlive their
streams; ``SubscribeToTask`` re-attaches). An answer to a task whose run waits on another
server is given to it through the store (``kernel.answer``, :mod:`.remote`); its
continuation, read from the run's journal, goes through the same translation. An input-required task whose run ends without an answer (its question
expired, its thread was deleted) ends ``canceled`` saying why (:mod:`.parked`). With a
thread store, the A2A ``contextId`` names the caller's onedoor thread the run continues
(``kernel.threads.open``).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from a2a.helpers import new_task_from_user_message, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.agent_execution.active_task import TERMINAL_TASK_STATES
from a2a.server.events import EventQueue
from a2a.server.tasks import TaskUpdater
from a2a.types import TaskState
from onedoor import (
    STOP_CANCELLED,
    STOP_SUSPENDED,
    OnedoorError,
    Question,
    QuestionAsked,
    QuestionError,
    RemoteAnswer,
    RunFailed,
    RunFinished,
    RunRefused,
    SuspendAsker,
    ThreadError,
    trace_meta,
)
from onedoor.journal import shared_store
from onedoor.principals import LOCAL

from . import parked
from .answers import answer_from, question_parts
from .content import message_content, metadata_of, modes, sent_modes
from .links import ARTIFACT_ID, TaskLink
from .remote import Here, There
from .tasks import RecordTaskStore
from .telling import tell, usage_metadata

log = logging.getLogger("onedoor.door.a2a")

CANCELED = TaskState.TASK_STATE_CANCELED


def principal_of(context: RequestContext) -> str:
    """The onedoor principal the call context names (see app.PrincipalContextBuilder)."""
    user = context.call_context.user if context.call_context is not None else None
    name = getattr(user, "user_name", "") if user is not None else ""
    return name if isinstance(name, str) and name else LOCAL


def trace_of(context: RequestContext) -> dict[str, str]:
    """The W3C trace context of the request: its headers, else the message's metadata."""
    state = context.call_context.state if context.call_context is not None else {}
    found = trace_meta(state.get("headers") if isinstance(state, dict) else None)
    if context.message is not None:
        found = {**trace_meta(metadata_of(context.message)), **found}
    return found


class KernelExecutor(AgentExecutor):
    """Runs every A2A task through ``kernel.run`` (or ``kernel.answer`` for an answer: :mod:`.remote`).

    It keeps only what the kernel cannot know: the runs started for new tasks until their
    ``execute`` takes them (each holds a kernel slot, so at most ``max_concurrent_runs``),
    and a :class:`~onedoor_door_a2a.links.TaskLink` per task whose run lives (running or
    parked; dropped when the task's final status is out)."""

    def __init__(self, kernel: Any, *, door: str = "a2a", ttl: float | None = None, fallback: str = "deny") -> None:
        self.kernel = kernel
        self.door = door
        self.asker = SuspendAsker(ttl=ttl, fallback=fallback)
        self.admitted: dict[str, Any] = {}  # task id -> its run, started before the task existed
        self.answered: dict[str, Any] = {}  # task id -> its answer given through this server (remote.py)
        self.links: dict[str, TaskLink] = {}  # task id -> its link, while its run lives
        self.tasks: Any = None  # the handler's task store (app.request_handler sets it)

    # -- before the task exists (admission.AdmittingContextBuilder) ----------------------
    async def admit(self, request: RequestContext) -> None:
        """Start the run of the new task ``request`` names (RunRefused or ThreadError if
        the kernel refuses it)."""
        principal = principal_of(request)
        assert request.message is not None  # the handler checks messages (app.CheckedRequestHandler)
        content = message_content(request.message, self.kernel)
        self.kernel.check_content(content.message)
        thread = None
        desk = self.kernel.threads
        if desk.kept:
            thread, _ = await desk.open(principal, request.context_id or "", create=True)
            desk.check_room(thread, content.message)
        run = self.kernel.run(content.message, thread=thread, door=self.door, asker=self.asker, principal=principal,
                              run_id=request.task_id, state=content.state, state_version=content.state_version,
                              meta=trace_of(request))
        self.admitted[run.run_id] = run

    async def release(self, task_id: str) -> None:
        """Free the run started for a task the SDK then failed to make (its slot goes back)."""
        run = self.admitted.pop(task_id, None)
        if run is not None:
            await run.aclose()
        self.answered.pop(task_id, None)

    def ended_while_waiting(self, task_id: str, request: RequestContext) -> str | None:
        """Why the input-required task ``task_id`` has ended although its final status may
        not be out yet (its run no longer waits for an answer), else None."""
        link = self.links.get(task_id)
        principal = principal_of(request)
        if link is None or link.question is None or link.principal != principal:
            return None
        if self.kernel.open_questions(task_id, principal=principal) or self.answered_already(task_id, request):
            return None
        return "its run no longer waits for an answer: the question expired or the run was cancelled"

    def answered_already(self, task_id: str, request: RequestContext) -> str | None:
        """Why a message cannot answer the input-required task ``task_id`` whose question was
        answered meanwhile (through another server), else None."""
        link = self.links.get(task_id)
        principal = principal_of(request)
        asked = link.question if link is not None and link.principal == principal else None
        if asked is None or self.kernel.question_status(asked.id, principal=principal, run_id=task_id) != "answered":
            return None
        return f"question {asked.id} of task {task_id} was answered already (through another server)"

    def run_ended(self, run_id: str) -> None:
        """The kernel ended run ``run_id`` (the door's ``onedoor_run_finished`` hook)."""
        link = self.links.get(run_id)
        if link is not None:
            link.ended.set()

    # -- AgentExecutor -------------------------------------------------------------------
    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        task_id = context.task_id or ""
        updater = TaskUpdater(event_queue, task_id, context.context_id or "")
        current = context.current_task
        if current is None:
            assert context.message is not None  # the handler checks messages (app.CheckedRequestHandler)
            await event_queue.enqueue_event(new_task_from_user_message(context.message))
        principal = principal_of(context)
        run = self.admitted.pop(task_id, None)
        answered = self.answered.pop(task_id, None)  # through this server, for a run another one holds
        if run is None and current is None:  # not admitted before (a handler without the door's builder)
            run = await self._admit_late(context, updater)
        if run is not None or answered is not None:
            link = TaskLink(updater, principal, context.context_id if self.kernel.threads.kept else None,
                            self._sends(context))
            self.links[task_id] = link
            if answered is not None and current is not None:
                link.carry_on(current)
            if isinstance(answered, tuple):  # the message did not answer the question
                await link.ask([new_text_part(f"That did not answer the question: {answered[0]}"),
                                *question_parts(answered[1])])
                self._drop(task_id, link)
                return
            run = run if run is not None else answered
        elif current is not None and current.status.state == TaskState.TASK_STATE_INPUT_REQUIRED:
            link, run = await self._answer(context, updater, principal)
        if run is None:
            return
        if isinstance(run, RemoteAnswer):
            await self._pump_remote(run, task_id, link)
        else:
            await self._pump(run, task_id, link)

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        """Stop the task's run for real (running or waiting for an answer), then say canceled:
        the run's own ending (with its usage) when its response ends within the cancel grace."""
        task_id = context.task_id or ""
        principal = principal_of(context)
        link = self.links.get(task_id)
        running = self.kernel.find_run(task_id, principal=principal)
        await self.kernel.cancel_run(task_id, principal=principal)
        if running is not None and link is not None and link.watcher is None:
            try:  # the event pump sees the cancelled ending and ends the task with it
                await asyncio.wait_for(running.ended.wait(), self.kernel.limits.cancel_grace + 1.0)
            except TimeoutError:
                pass
        if link is None:
            link = TaskLink(TaskUpdater(event_queue, task_id, context.context_id or ""), principal, None)
        outcome = running.outcome if running is not None else None
        if await link.end(CANCELED, "the task was cancelled", usage_metadata(outcome) if outcome else None):
            self._drop(task_id, link)

    def _sends(self, context: RequestContext) -> list[str]:
        """What the task's parts may be: the card's output modes, within the client's."""
        configuration = context.configuration
        accepted = list(configuration.accepted_output_modes) if configuration is not None else []
        return sent_modes(modes(self.kernel), accepted)

    # -- starting and continuing runs ----------------------------------------------------
    async def _admit_late(self, context: RequestContext, updater: TaskUpdater) -> Any:
        """Start the run now that the task exists; a refusal fails the task."""
        try:
            await self.admit(context)
        except (RunRefused, ThreadError) as exc:
            await updater.failed(updater.new_agent_message([new_text_part(f"the run was refused: {exc}")]))
            return None
        return self.admitted.pop(context.task_id or "", None)

    async def _answer(self, context: RequestContext, updater: TaskUpdater, principal: str) -> tuple[Any, Any]:
        """(the task's link, the resumed run) once the message answers the open question;
        (link, None) when the task asks again with the reason, or has ended."""
        task_id = context.task_id or ""
        link = self.links.get(task_id)
        open_now = self.kernel.open_questions(task_id, principal=principal)
        if link is None or link.principal != principal or not open_now:
            # the run no longer waits: it ended a moment ago (the watcher says so), or the server restarted
            link = link or TaskLink(updater, principal, None)
            link.updater = updater
            if await link.end(CANCELED, "no run waits for an answer on this task: its question expired, or it "
                              "was cancelled"):
                self._drop(task_id, link)
            return link, None
        link.updater = updater  # the task's queue (the same while the SDK holds the task)
        asked = link.question
        question = next((q for q in open_now if asked is not None and q.id == asked.id), open_now[0])
        try:
            answer = answer_from(question, context.message)
            run = await self.kernel.answer([answer], principal=principal, door=self.door, run_id=task_id)
        except (ValueError, QuestionError) as exc:
            if isinstance(exc, QuestionError) and exc.reason != "invalid":  # closed meanwhile: the run is ending
                if exc.reason == "answered":  # through another server, which carries the task on
                    return link, None
                if link.watcher is None and await link.end(CANCELED, f"the answer came too late: {exc}"):
                    self._drop(task_id, link)
                return link, None  # (else its watcher ends the task)
            await link.ask([new_text_part(f"That did not answer the question: {exc}"), *question_parts(question)])
            return link, None
        link.stop_watching()
        return link, run

    # -- the event pump ------------------------------------------------------------------
    async def _pump(self, run: Any, task_id: str, link: TaskLink) -> None:
        """The run's events into the task, read from its journal (``kernel.journals``: with a
        store that shares journals, another server can follow and cancel it)."""
        journal = self.kernel.journals.start(run, on_disconnect="finish")
        try:
            await self._translate(journal.follow(after=journal.last_seq), task_id, link, Here(run))
        except asyncio.CancelledError:
            journal.cancel()  # CancelTask (or shutdown): the backend is told; the kernel sees it to its end
            raise
        finally:
            if link.watcher is None:
                self._drop(task_id, link)

    async def _pump_remote(self, answered: RemoteAnswer, task_id: str, link: TaskLink) -> None:
        """The continuation of a run another server holds, read from its journal in the store
        after the answers (:mod:`.remote`), into the task as a run of this server's is."""
        try:
            await self._translate(answered.journal.follow(answered.after), task_id, link, There(self.kernel, link))
        except OnedoorError as exc:  # the store out too long, the journal no longer kept
            await link.end(TaskState.TASK_STATE_FAILED, f"the run's events could not be read: {exc}")
        finally:
            self._drop(task_id, link)

    async def _translate(self, events: Any, task_id: str, link: TaskLink, run: Here | There) -> None:
        """A run's events (``(seq, event)`` pairs) into the task, to its ending."""
        asked: Question | None = None
        async for _seq, event in events:
            kind = type(event)
            if kind is RunFinished:
                await self._finished(task_id, link, run, event, asked)
            elif kind is RunFailed:
                await link.end(TaskState.TASK_STATE_FAILED, event.error,
                               self._final_metadata(await run.thread(), link, event))
            elif kind is QuestionAsked:
                asked = event.question
            else:
                await tell(link, event, run.state)

    async def _finished(self, task_id: str, link: TaskLink, run: Here | There, event: RunFinished,
                        asked: Question | None) -> None:
        if event.stop_reason == STOP_SUSPENDED and asked is not None:
            if run.here:
                await self._park(task_id, link, asked, usage_metadata(event))
            else:  # the run's server watches its question (it ends the run if it expires)
                await link.ask(question_parts(asked), usage_metadata(event) or None)
            return
        stored = await run.thread()
        metadata = self._final_metadata(stored, link, event)
        if stored is not None and link.state is not None and stored.state != link.state:
            await link.state_now(stored.state)  # as kept with the thread (rebased on a change made meanwhile)
        if event.stop_reason == STOP_CANCELLED:
            await link.end(CANCELED, "the run was cancelled", metadata)
        else:
            await link.end(TaskState.TASK_STATE_COMPLETED, metadata=metadata)

    def _final_metadata(self, stored: Any, link: TaskLink, event: RunFinished | RunFailed) -> dict[str, Any]:
        """The final status's metadata: the run's usage, and its thread's (``stored``) state version."""
        metadata = usage_metadata(event)
        if stored is not None and link.state is not None:
            metadata["state_version"] = stored.state_version
        return metadata

    async def _park(self, task_id: str, link: TaskLink, asked: Question, metadata: dict[str, Any]) -> None:
        """The run waits in the kernel for the answer: the task is input-required, and a
        watcher ends it if the run ends first."""
        open_now = self.kernel.open_questions(task_id, principal=link.principal)
        expiry = [q.expires_at for q in open_now if q.expires_at is not None]
        link.question = asked
        link.expires_at = min(expiry) if expiry else asked.expires_at
        link.ended.clear()
        ttl = self.asker.ttl or self.kernel.limits.question_ttl
        link.watcher = asyncio.get_running_loop().create_task(
            parked.watch(self.kernel, task_id, link, ttl, lambda: self._drop(task_id, link), self._ended_in_store()),
            name=f"onedoor-a2a-parked-{task_id}",
        )
        await link.ask(question_parts(asked), metadata)

    def _ended_in_store(self) -> Any:
        """For a parked run's watcher, with servers sharing the store: whether its task has
        ended there (another server cancelled it); None on one server."""
        tasks = self.tasks
        if shared_store(self.kernel.store) is None or not isinstance(tasks, RecordTaskStore):
            return None

        async def ended(task_id: str, principal: str) -> bool:
            found = await tasks.get_record(task_id, principal)
            return found is not None and found[0].status.state in TERMINAL_TASK_STATES

        return ended

    def _drop(self, task_id: str, link: TaskLink) -> None:
        if self.links.get(task_id) is link:
            del self.links[task_id]


__all__ = ["ARTIFACT_ID", "KernelExecutor", "principal_of", "tell", "trace_of", "usage_metadata"]
