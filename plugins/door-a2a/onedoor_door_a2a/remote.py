"""An answer to an input-required task whose run waits on another server.

With a store that shares journals (PostgreSQL; SQLite with ``sqlite.shared_journal``),
the message answering a task may reach any server. The one holding the parked run
resumes it as for a local answer; any other one (:func:`answer_elsewhere`, from the
admission, before the SDK touches the task) reads the run's open question from its
journal in the store, turns the message into the answer (:mod:`.answers`), and gives it
to ``kernel.answer``, which leaves it for the run's server and returns once that server
has taken it (a :class:`~onedoor.RemoteAnswer`). The executor then reads the continuation
from the run's journal into the task as it reads a run of its own (:class:`There`
is what it knows of such a run), so the task ends here, in the store, as it would have
there. The run's server lets its own view of the task go (:func:`let_go`).

A refused answer changes nothing and is the protocol's error: another answer won
(``already_answered``), no such open question (``unknown_question``), one that does not
fit (``invalid_answer``). A run that has ended meanwhile, or whose server stopped (its
lease ran out), ends the task ``canceled`` saying why, and the message is refused as
one to an ended task.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from onedoor import OnedoorError, Question, QuestionAnswered, QuestionAsked, QuestionError
from onedoor.events import event_from_json
from onedoor.journal import shared_store

from .answers import answer_from
from .refusals import a2a_error, note
from .tasks import owner_of

if TYPE_CHECKING:
    from .elsewhere import Elsewhere as Places
    from .links import TaskLink

log = logging.getLogger("onedoor.door.a2a")

PAGE = 500


async def open_question(store: Any, run_id: str, principal: str) -> Question | None:
    """The question the run's journal in the store last asked and nobody answered yet."""
    shared = shared_store(store)
    if shared is None:
        return None
    asked: dict[str, Question] = {}
    after = 0
    while True:
        page = await shared.journal_read(run_id, principal, after, limit=PAGE)
        if page is None:
            return None
        for _, text in page.events:
            event = event_from_json(text)
            if isinstance(event, QuestionAsked):
                asked[event.question.id] = event.question
            elif isinstance(event, QuestionAnswered):
                asked.pop(event.answer.question_id, None)
        if len(page.events) < PAGE:
            break
        after = page.events[-1][0]
    return list(asked.values())[-1] if asked else None


async def answer_elsewhere(executor: Any, places: Places, task_id: str, request: Any, stored: Any,
                           context: Any) -> bool:
    """Answer the run another server holds for input-required task ``stored`` with the
    request's message (``executor``: the door's ``KernelExecutor``); what came of it waits in ``executor.answered`` for the task's
    ``execute``. False when no journal in the store names an open question of the run
    (the caller refuses as before); raises the refusal of an answer the kernel refuses."""
    from a2a.types import TaskState
    from a2a.utils.errors import UnsupportedOperationError

    kernel = executor.kernel
    principal = owner_of(context)
    try:
        question = await open_question(kernel.store, task_id, principal)
    except OnedoorError as exc:
        log.debug("A2A task %s: its run's journal not read (%s)", task_id, exc)
        return False
    if question is None:
        return False
    try:
        answer = answer_from(question, request.message)
    except ValueError as exc:
        executor.answered[task_id] = (str(exc), question)  # asked again, as on the run's server
        return True
    try:
        got = await kernel.answer([answer], principal=principal, door=executor.door, run_id=task_id)
    except QuestionError as exc:
        if exc.reason != "expired":
            error, refused = a2a_error(exc)
            note(context, refused)
            raise error from None
        why = f"the answer came too late: {exc}"
        await places.store_ending(stored, TaskState.TASK_STATE_CANCELED, why, context)
        raise UnsupportedOperationError(message=f"Task {task_id} is in terminal state: TASK_STATE_CANCELED ({why})") \
            from None
    executor.answered[task_id] = got
    return True


class There:
    """What the executor knows of a run another server holds, for its continuation's ending:
    the state as last told, and the thread (its state, its version) read from the store."""

    here = False

    def __init__(self, kernel: Any, link: TaskLink) -> None:
        self.kernel = kernel
        self.link = link

    @property
    def state(self) -> Any:
        return self.link.state

    async def thread(self) -> Any:
        link = self.link
        if link.thread_id is None or link.state is None:
            return None
        try:
            return await self.kernel.threads.get(link.principal, link.thread_id)
        except Exception as exc:  # noqa: BLE001 - the state's version is extra: the task ends without it
            log.debug("A2A task thread %s not read: %s", link.thread_id, exc)
            return None


class Here:
    """The same for a run of this server: its stream knows both."""

    here = True

    def __init__(self, run: Any) -> None:
        self.run = run

    @property
    def state(self) -> Any:
        return self.run.state

    async def thread(self) -> Any:
        return self.run.thread


async def let_go(link: TaskLink) -> None:
    """The parked run was answered through another server, which carries the task on: this
    server writes nothing more of it and lets the SDK's state of the task (its ``ActiveTask``,
    whose copy of the task is now old) end, so a request here reads the task from the store."""
    link.closed = True
    queue = getattr(link.updater, "event_queue", None)
    if queue is not None:
        await queue.close(immediate=True)


__all__ = ["Here", "There", "answer_elsewhere", "let_go", "open_question"]
