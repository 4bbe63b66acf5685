"""Two real `onedoor serve --door a2a` processes on one SQLite file (``sqlite.shared_journal``),
asked by the official Python client (a2a-sdk): a task made through one server is read,
listed, followed, cancelled and given push configs through the other.

- GetTask and ListTasks through the second server: the task with its history and reply;
- a push config made through the second server for a task the first one runs: the first
  server reads it from the store and its webhook (a real HTTP server on 127.0.0.1) gets
  the task's updates with the config's token;
- SubscribeToTask through the second server while the first runs the task, and CancelTask
  through the second: the first server's backend stops, the task ends CANCELED in the store;
- an input-required task whose run waits on the first server answered through the second
  (message/send and message/stream): the reply shows the answer's effect, both servers read
  the task COMPLETED with its history; a second answer (through either server) is refused
  clearly; with the first server killed while its run waits, the answer through the second
  ends the task CANCELED saying why (no hang).

(PostgreSQL behind nginx: tests/deploy/test_deploy_a2a.py.)
"""

from __future__ import annotations

import signal
import uuid
from typing import Iterator

import pytest
from a2a.helpers import get_message_text
from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    ListTasksRequest,
    Role,
    SubscribeToTaskRequest,
    TaskPushNotificationConfig,
    TaskState,
)
from a2a.utils.errors import A2AError
from a2a_helpers import TOKEN, A2aServer, ask, authorized, clients, reply_of, send
from a2a_webhook import Webhook, state
from onedoor.testing.hostile import traceback_in
from onedoor_test_support import await_for

pytestmark = pytest.mark.timeout(180)

COMPLETED, CANCELED = TaskState.TASK_STATE_COMPLETED, TaskState.TASK_STATE_CANCELED
INPUT_REQUIRED = TaskState.TASK_STATE_INPUT_REQUIRED


def _pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[A2aServer, A2aServer]]:
    shared = tmp_path_factory.mktemp("a2a-shared") / "threads.sqlite3"
    args = ["--token", TOKEN, "-o", f"sqlite.path={shared}", "-o", "sqlite.shared_journal=true",
            "-o", "a2a.push_allow_private=true"]
    first = A2aServer(args, tmp_path_factory.mktemp("a2a-first"))
    try:
        second = A2aServer(args, tmp_path_factory.mktemp("a2a-second"))
    except BaseException:
        first.stop()
        raise
    try:
        yield first, second
    finally:
        second.stop()
        first.stop()


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[A2aServer, A2aServer]]:
    yield from _pair(tmp_path_factory)


@pytest.fixture
def doomed_pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[A2aServer, A2aServer]]:
    """Two servers of their own: the test kills the first."""
    yield from _pair(tmp_path_factory)


def _user_texts(task: object) -> list[str]:
    return [get_message_text(m) for m in task.history if m.role == Role.ROLE_USER]  # type: ignore[attr-defined]


async def test_get_and_list_through_the_other_server(pair: tuple[A2aServer, A2aServer]) -> None:
    first, second = pair
    words = f"kept for both {uuid.uuid4().hex[:6]}"
    async with authorized() as http:
        _, on_first, _ = await clients(http, first.a2a_url)
        _, on_second, _ = await clients(http, second.a2a_url)
        task = await send(on_first, ask(words))
        assert task.status.state == COMPLETED
        got = await on_second.get_task(GetTaskRequest(id=task.id))
        assert got.status.state == COMPLETED and reply_of(got) == reply_of(task) and "You said" in reply_of(got)
        assert [get_message_text(m) for m in got.history if m.role == Role.ROLE_USER] == [words]
        listed = await on_second.list_tasks(ListTasksRequest(context_id=task.context_id))
        assert [t.id for t in listed.tasks] == [task.id] and listed.total_size == 1
        # the conversation goes on through the second server
        again = await send(on_second, ask("and on", context_id=task.context_id))
        assert reply_of(again).endswith("turn 2)"), reply_of(again)


async def test_a_config_made_through_the_other_server_is_pushed_to(pair: tuple[A2aServer, A2aServer]) -> None:
    first, second = pair
    hook = Webhook()
    try:
        async with authorized() as http:
            _, on_first, _ = await clients(http, first.a2a_url)
            _, on_second, _ = await clients(http, second.a2a_url)
            task = await send(on_first, ask("/question Which colour, pushed?"))
            assert task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
            await on_second.create_task_push_notification_config(
                TaskPushNotificationConfig(task_id=task.id, url=hook.base + "/across", token="tok-across", id="across"))
            answered = await send(on_first, ask("teal", task_id=task.id, context_id=task.context_id))
            assert answered.status.state == COMPLETED
        await await_for(lambda: hook.ended("/across"), "the first server's pushes for the config made on the second")
        states = [state(b) for b in hook.bodies("/across") if state(b)]
        assert "TASK_STATE_WORKING" in states and states[-1] == "TASK_STATE_COMPLETED", states
        assert all(h.get("X-A2A-Notification-Token") == "tok-across" for p, h, _ in hook.posts if p == "/across")
    finally:
        hook.close()


async def test_subscribe_and_cancel_through_the_other_server(pair: tuple[A2aServer, A2aServer]) -> None:
    first, second = pair
    tag = f"cancel-across-{uuid.uuid4().hex[:6]}"
    async with authorized() as http:
        _, on_first, streaming_first = await clients(http, first.a2a_url)
        _, on_second, streaming_second = await clients(http, second.a2a_url)
        task_id = ""
        async for event in streaming_first.send_message(ask(f"/slow /long 600 {tag}")):
            if event.HasField("artifact_update"):
                task_id = event.artifact_update.task_id
                break
        assert task_id
        updates, cancelled, ending = 0, None, None
        async for event in streaming_second.subscribe(SubscribeToTaskRequest(id=task_id)):
            if event.HasField("artifact_update"):
                updates += 1
                if updates == 3:
                    cancelled = await on_second.cancel_task(CancelTaskRequest(id=task_id))
            elif event.HasField("status_update"):
                ending = event.status_update.status.state
        assert cancelled is not None and cancelled.status.state == CANCELED, cancelled
        assert ending == CANCELED, TaskState.Name(ending or 0)
        stored = await on_first.get_task(GetTaskRequest(id=task_id))
        assert stored.status.state == CANCELED
    outcome = first.outcome_of(tag)
    assert outcome["stop_reason"] == "cancelled", outcome  # the backend on the first server stopped
    assert len(reply_of(stored).split()) < 300, "the backend stopped soon after the cancel"
    for server in pair:
        assert traceback_in(server.stderr()) is None, server.stderr()[-3000:]


async def test_an_answer_through_the_other_server(pair: tuple[A2aServer, A2aServer]) -> None:
    first, second = pair
    colour = f"teal-{uuid.uuid4().hex[:6]}"
    prompt = f"Which colour for {colour}?"
    async with authorized() as http:
        _, on_first, _ = await clients(http, first.a2a_url)
        _, on_second, _ = await clients(http, second.a2a_url)
        task = await send(on_first, ask(f"/question {prompt}"))
        assert task.status.state == INPUT_REQUIRED
        answered = await send(on_second, ask(colour, task_id=task.id, context_id=task.context_id))
        assert answered.status.state == COMPLETED, answered.status
        assert reply_of(answered) == f'You answered {{"answer": "{colour}"}}'
        for client in (on_first, on_second):
            got = await client.get_task(GetTaskRequest(id=task.id))
            assert got.status.state == COMPLETED and reply_of(got) == reply_of(answered)
            assert _user_texts(got) == [f"/question {prompt}", colour]
            agent = [get_message_text(m) for m in got.history if m.role == Role.ROLE_AGENT]
            assert any(text.startswith(prompt) for text in agent), agent  # the question, in the history
        # a second answer, through either server: the task has ended, the answer is refused
        for client in (on_first, on_second):
            with pytest.raises(A2AError, match="terminal state|answered already"):
                await send(client, ask("red", task_id=task.id, context_id=task.context_id))
        first.outcome_of(prompt)  # the run ended on the first server (its door hears of it and lets the task go)
        for client in (on_first, on_second):
            again = await client.get_task(GetTaskRequest(id=task.id))
            assert again.status.state == COMPLETED and reply_of(again) == reply_of(answered), again.status
    for server in pair:
        assert traceback_in(server.stderr()) is None, server.stderr()[-3000:]


async def test_an_answer_here_then_one_through_the_other_server(pair: tuple[A2aServer, A2aServer]) -> None:
    """The server holding the run takes the first answer; the second, through the other
    server, is refused and changes nothing."""
    first, second = pair
    async with authorized() as http:
        _, on_first, _ = await clients(http, first.a2a_url)
        _, on_second, _ = await clients(http, second.a2a_url)
        task = await send(on_first, ask("/question Which fruit?"))
        answered = await send(on_first, ask("plum", task_id=task.id, context_id=task.context_id))
        assert reply_of(answered) == 'You answered {"answer": "plum"}'
        with pytest.raises(A2AError, match="terminal state"):
            await send(on_second, ask("pear", task_id=task.id, context_id=task.context_id))
        got = await on_second.get_task(GetTaskRequest(id=task.id))
        assert got.status.state == COMPLETED and _user_texts(got) == ["/question Which fruit?", "plum"]


async def test_an_approval_streamed_through_the_other_server(pair: tuple[A2aServer, A2aServer]) -> None:
    first, second = pair
    async with authorized() as http:
        _, on_first, _ = await clients(http, first.a2a_url)
        _, on_second, streaming_second = await clients(http, second.a2a_url)
        task = await send(on_first, ask('/ask word_count {"text": "a b c"}'))
        assert task.status.state == INPUT_REQUIRED
        states, kinds, reply = [], [], ""
        async for event in streaming_second.send_message(ask("yes", task_id=task.id, context_id=task.context_id)):
            if event.HasField("status_update"):
                update = event.status_update
                states.append(update.status.state)
                if update.status.HasField("message"):
                    kinds.append(update.status.message.metadata["onedoor"] if "onedoor" in
                                 update.status.message.metadata else "")
            elif event.HasField("artifact_update"):
                reply = "".join(p.text for p in event.artifact_update.artifact.parts) if not \
                    event.artifact_update.append else reply + "".join(p.text for p in event.artifact_update.artifact.parts)
        assert states[-1] == COMPLETED, [TaskState.Name(s) for s in states]
        assert "question_answered" in kinds and "tool_finished" in kinds, kinds
        assert reply == "Approved (allow_once): ran word_count", reply
        for client in (on_first, on_second):
            got = await client.get_task(GetTaskRequest(id=task.id))
            assert got.status.state == COMPLETED and reply_of(got) == reply
            assert _user_texts(got)[-1] == "yes"


async def test_an_answer_through_the_other_server_after_the_first_was_killed(
    doomed_pair: tuple[A2aServer, A2aServer],
) -> None:
    first, second = doomed_pair
    async with authorized() as http:
        http.timeout = httpx_timeout()
        _, on_first, _ = await clients(http, first.a2a_url)
        _, on_second, _ = await clients(http, second.a2a_url)
        task = await send(on_first, ask("/question Anyone there?"))
        assert task.status.state == INPUT_REQUIRED
        first.proc.send_signal(signal.SIGKILL)
        first.proc.wait(10)
        with pytest.raises(A2AError, match="terminal state") as refused:
            await send(on_second, ask("me", task_id=task.id, context_id=task.context_id))
        assert "stopped" in str(refused.value) or "too late" in str(refused.value), refused.value
        got = await on_second.get_task(GetTaskRequest(id=task.id))
        assert got.status.state == CANCELED, got.status
        assert get_message_text(got.status.message), "the task says why it ended"
    assert traceback_in(second.stderr()) is None, second.stderr()[-3000:]


def httpx_timeout() -> object:
    import httpx

    return httpx.Timeout(60.0)


async def test_a_message_that_answers_nothing_through_the_other_server(pair: tuple[A2aServer, A2aServer]) -> None:
    """It asks again, as on the server that asked; the run still waits, and a real answer
    through the same server then completes the task."""
    first, second = pair
    async with authorized() as http:
        _, on_first, _ = await clients(http, first.a2a_url)
        _, on_second, _ = await clients(http, second.a2a_url)
        task = await send(on_first, ask('/ask word_count {"text": "x"}'))
        assert task.status.state == INPUT_REQUIRED
        again = await send(on_second, ask("perhaps", task_id=task.id, context_id=task.context_id))
        assert again.status.state == INPUT_REQUIRED
        assert get_message_text(again.status.message).startswith("That did not answer the question"), again.status
        answered = await send(on_second, ask("no", task_id=task.id, context_id=task.context_id))
        assert answered.status.state == COMPLETED
        assert reply_of(answered) == "Not approved (reject_once): did not run word_count"
        got = await on_first.get_task(GetTaskRequest(id=task.id))
        assert got.status.state == COMPLETED and _user_texts(got)[-2:] == ["perhaps", "no"]
