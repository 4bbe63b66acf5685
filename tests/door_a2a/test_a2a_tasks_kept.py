"""A2A tasks in the thread store, with the official Python client (a2a-sdk) against real
servers: ``ListTasks`` per principal (a tokens file: alice and bob), paging and filters; a
task read after the server restarted, with its history; a task whose server was killed
mid-run reads as failed after the restart, not as working forever; an input-required
task whose server stopped is ended when it is answered, never left waiting. Without a
store (``--store none``) tasks and push configs are kept in memory, per principal, until
the server stops.
"""

from __future__ import annotations

import signal
import uuid
from pathlib import Path
from typing import Iterator

import httpx
import pytest
from a2a.helpers import get_message_text
from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    ListTasksRequest,
    SubscribeToTaskRequest,
    TaskPushNotificationConfig,
    TaskState,
)
from a2a.utils.errors import A2AError, TaskNotFoundError
from a2a_helpers import A2aServer, ask, clients, reply_of, send
from onedoor_test_support import await_for

pytestmark = pytest.mark.timeout(180)

ALICE, BOB = "alice-a2a-token-0123456789", "bob-a2a-token-0123456789"
COMPLETED = TaskState.TASK_STATE_COMPLETED


def auth(token: str) -> httpx.AsyncClient:
    return httpx.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30)


def serve(tmp: Path) -> A2aServer:
    return A2aServer(["-o", f"tokens_file={tmp / 'tokens'}", "-o", f"sqlite.path={tmp / 'threads.sqlite3'}"], tmp)


@pytest.fixture(scope="module")
def two_principals(tmp_path_factory: pytest.TempPathFactory) -> Iterator[A2aServer]:
    tmp = tmp_path_factory.mktemp("a2a-principals")
    (tmp / "tokens").write_text(f"alice {ALICE}\nbob {BOB}\n", "utf-8")
    server = serve(tmp)
    try:
        yield server
    finally:
        server.stop()


async def test_list_tasks_shows_each_principal_only_their_own(two_principals: A2aServer) -> None:
    async with auth(ALICE) as alice_http, auth(BOB) as bob_http:
        _, alice, _ = await clients(alice_http, two_principals.a2a_url)
        _, bob, bob_streaming = await clients(bob_http, two_principals.a2a_url)
        first = await send(alice, ask("alice one"))
        mine = [first] + [await send(alice, ask(f"alice {n}", context_id=first.context_id)) for n in ("two", "three")]
        waiting = await send(alice, ask("/question Which colour?"))
        bobs = await send(bob, ask("bob one"))
        listed = await alice.list_tasks(ListTasksRequest())
        assert {t.id for t in listed.tasks} == {t.id for t in mine} | {waiting.id} and listed.total_size == 4
        assert bobs.id not in {t.id for t in listed.tasks}
        theirs = await bob.list_tasks(ListTasksRequest())
        assert [t.id for t in theirs.tasks] == [bobs.id] and theirs.total_size == 1
        # newest first, in pages, filtered by context and state, with or without artifacts
        page = await alice.list_tasks(ListTasksRequest(page_size=3, include_artifacts=True))
        assert [t.id for t in page.tasks] == [waiting.id] + [t.id for t in reversed(mine)][:2] and page.next_page_token
        assert reply_of(page.tasks[1]) == reply_of(mine[2])
        rest = await alice.list_tasks(ListTasksRequest(page_size=3, page_token=page.next_page_token))
        assert [t.id for t in rest.tasks] == [mine[0].id] and not rest.next_page_token and rest.total_size == 4
        assert not rest.tasks[0].artifacts, "artifacts only when asked for"
        context = await alice.list_tasks(ListTasksRequest(context_id=first.context_id))
        assert {t.id for t in context.tasks} == {t.id for t in mine}
        asking = await alice.list_tasks(ListTasksRequest(status=TaskState.TASK_STATE_INPUT_REQUIRED))
        assert [t.id for t in asking.tasks] == [waiting.id]
        # bob cannot reach alice's tasks by id either
        for call in (bob.get_task(GetTaskRequest(id=first.id)), bob.cancel_task(CancelTaskRequest(id=waiting.id))):
            with pytest.raises(TaskNotFoundError):
                await call
        with pytest.raises(A2AError):
            await bob.create_task_push_notification_config(
                TaskPushNotificationConfig(task_id=waiting.id, url="https://hooks.example/x"))
        with pytest.raises(A2AError):
            async for _ in bob_streaming.subscribe(SubscribeToTaskRequest(id=waiting.id)):
                pass
        still = await alice.get_task(GetTaskRequest(id=waiting.id))
        assert still.status.state == TaskState.TASK_STATE_INPUT_REQUIRED


async def test_a_bad_page_token_is_invalid_params(two_principals: A2aServer) -> None:
    async with auth(ALICE) as http:
        _, alice, _ = await clients(http, two_principals.a2a_url)
        for token in ("not-a-token", "eyJ0cyI6IDEwMDAwMDAwMDAwMDAwMDAwMDAwMDAwLCAiaWQiOiAieCJ9"):  # (ts past 64 bits)
            with pytest.raises(A2AError) as raised:
                await alice.list_tasks(ListTasksRequest(page_token=token))
            assert "page token" in str(raised.value).lower(), repr(raised.value)
        assert (await alice.list_tasks(ListTasksRequest())).total_size >= 0  # the server still serves


async def test_a_task_is_there_after_a_restart_with_its_history(tmp_path: Path) -> None:
    (tmp_path / "tokens").write_text(f"alice {ALICE}\n", "utf-8")
    server = serve(tmp_path)
    try:
        async with auth(ALICE) as http:
            _, client, _ = await clients(http, server.a2a_url)
            first = await send(client, ask("before the restart"))
            asked = await send(client, ask("/question Which colour?", context_id=first.context_id))
            answered = await send(client, ask("green", task_id=asked.id, context_id=asked.context_id))
            waiting = await send(client, ask("/question Still there?"))
    finally:
        server.stop()
    server = serve(tmp_path)
    try:
        async with auth(ALICE) as http:
            _, client, _ = await clients(http, server.a2a_url)
            got = await client.get_task(GetTaskRequest(id=first.id))
            assert got.status.state == COMPLETED and reply_of(got) == reply_of(first)
            assert [get_message_text(m) for m in got.history if m.role == 1][0] == "before the restart"
            again = await client.get_task(GetTaskRequest(id=answered.id))
            users = [get_message_text(m) for m in again.history if m.role == 1]
            assert users[:1] == ["/question Which colour?"] and "green" in users, users
            assert reply_of(again) == 'You answered {"answer": "green"}' and again.status.state == COMPLETED
            listed = await client.list_tasks(ListTasksRequest())
            assert {first.id, answered.id, waiting.id} <= {t.id for t in listed.tasks}
            # the run that waited was ended by the stop (the task says so), and an answer now is refused
            left = await client.get_task(GetTaskRequest(id=waiting.id))
            assert left.status.state == TaskState.TASK_STATE_CANCELED, left.status
            assert "cancelled while it waited" in get_message_text(left.status.message), left.status
            with pytest.raises(A2AError, match="terminal state"):
                await send(client, ask("yes", task_id=waiting.id, context_id=waiting.context_id))
            nxt = await send(client, ask("after the restart", context_id=first.context_id))
            assert nxt.status.state == COMPLETED and "turn 3" in reply_of(nxt), reply_of(nxt)
    finally:
        server.stop()


async def test_a_task_whose_server_was_killed_reads_failed_after_the_restart(tmp_path: Path) -> None:
    (tmp_path / "tokens").write_text(f"alice {ALICE}\n", "utf-8")
    server = serve(tmp_path)
    try:
        async with auth(ALICE) as http:
            _, _, streaming = await clients(http, server.a2a_url)
            task_id = ""
            async for event in streaming.send_message(ask(f"/slow /long 400 killed-{uuid.uuid4().hex[:6]}")):
                if event.HasField("artifact_update"):
                    task_id = event.artifact_update.task_id
                    break
        server.proc.send_signal(signal.SIGKILL)
        server.proc.wait(10)
    finally:
        server.stop()
    server = serve(tmp_path)
    try:
        async with auth(ALICE) as http:
            _, client, streaming = await clients(http, server.a2a_url)
            got = await client.get_task(GetTaskRequest(id=task_id))
            assert got.status.state == TaskState.TASK_STATE_FAILED, got.status
            assert "stopped before the task ended" in get_message_text(got.status.message)
            with pytest.raises(A2AError, match="terminal state"):
                async for _ in streaming.subscribe(SubscribeToTaskRequest(id=task_id)):
                    pass
    finally:
        server.stop()


async def test_without_a_store_tasks_and_push_configs_are_in_memory(tmp_path: Path) -> None:
    """``--store none``: the SDK's in-memory stores, as on one server before; gone with it."""
    from a2a_webhook import Webhook, state

    (tmp_path / "tokens").write_text(f"alice {ALICE}\nbob {BOB}\n", "utf-8")
    args = ["--store", "none", "-o", f"tokens_file={tmp_path / 'tokens'}", "-o", "a2a.push_allow_private=true"]
    hook = Webhook()
    server = A2aServer(args, tmp_path)
    try:
        async with auth(ALICE) as alice_http, auth(BOB) as bob_http:
            _, alice, _ = await clients(alice_http, server.a2a_url)
            _, bob, _ = await clients(bob_http, server.a2a_url)
            done = await send(alice, ask("kept in memory"))
            asked = await send(alice, ask("/question Which colour, in memory?"))
            await alice.create_task_push_notification_config(
                TaskPushNotificationConfig(task_id=asked.id, url=hook.base + "/mem", token="tok-mem", id="mem"))
            answered = await send(alice, ask("red", task_id=asked.id, context_id=asked.context_id))
            assert answered.status.state == COMPLETED
            got = await alice.get_task(GetTaskRequest(id=done.id))
            assert reply_of(got) == reply_of(done) and got.status.state == COMPLETED
            listed = await alice.list_tasks(ListTasksRequest())
            assert {t.id for t in listed.tasks} == {done.id, asked.id}
            assert list((await bob.list_tasks(ListTasksRequest())).tasks) == []
            with pytest.raises(TaskNotFoundError):
                await bob.get_task(GetTaskRequest(id=done.id))
        await await_for(lambda: hook.ended("/mem"), "the answered task's updates at the webhook")
        states = [state(b) for b in hook.bodies("/mem") if state(b)]
        assert "TASK_STATE_WORKING" in states and states[-1] == "TASK_STATE_COMPLETED", states
        assert all(h.get("X-A2A-Notification-Token") == "tok-mem" for _, h, _ in hook.posts)
    finally:
        server.stop()
        hook.close()
    server = A2aServer(args, tmp_path)
    try:
        async with auth(ALICE) as http:
            _, alice, _ = await clients(http, server.a2a_url)
            with pytest.raises(TaskNotFoundError):  # nothing kept: gone with the server
                await alice.get_task(GetTaskRequest(id=done.id))
    finally:
        server.stop()
