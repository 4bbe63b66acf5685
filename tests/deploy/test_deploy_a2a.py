"""Three `onedoor serve --door a2a` processes on one PostgreSQL behind round-robin nginx
(docs/deploy.md), asked by the official A2A Python client (a2a-sdk): every A2A method
works whichever server a request lands on (nginx's access log says which), and A2A tasks
outlive the servers.

- send, stream, get, list: the task is in the store, every server reads it;
- a task running on one server, subscribed to through another (its journal, read through
  the store: the reply comes out whole and once) and cancelled through a third (the
  kernel carries the cancel to the server running it, whose backend stops);
- an input-required round answered through another server than the one whose run waits
  (HTTP+JSON and JSON-RPC): the run takes the answer, the task completes, every server
  reads it; a second answer is refused. A cancel through another server ends the task and
  the waiting run;
- a task is read, with its history, after every server restarted; one whose server was
  killed reads as failed through the others.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx
import pytest
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.helpers import get_message_text, new_text_message
from a2a.server.tasks.task_manager import append_artifact_to_task
from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    ListTasksRequest,
    Role,
    SendMessageRequest,
    SubscribeToTaskRequest,
    Task,
    TaskState,
)
from a2a.utils.errors import A2AError
from deploy_harness import AUTH, Cluster
from onedoor_test_support import wait_for

pytest.importorskip("onedoor_door_a2a", reason="the A2A door (onedoor-door-a2a) is not installed")
pytestmark = pytest.mark.timeout(300)

COMPLETED, CANCELED = TaskState.TASK_STATE_COMPLETED, TaskState.TASK_STATE_CANCELED
INPUT_REQUIRED = TaskState.TASK_STATE_INPUT_REQUIRED


def ask(text: str, *, task_id: str = "", context_id: str = "", now: bool = False) -> SendMessageRequest:
    message = new_text_message(text, role=Role.ROLE_USER, task_id=task_id or None, context_id=context_id or None)
    request = SendMessageRequest(message=message)
    if now:
        request.configuration.return_immediately = True
    return request


def reply_of(task: Any) -> str:
    return "".join(p.text for a in task.artifacts if a.artifact_id == "reply" for p in a.parts)


class Clients:
    """The a2a-sdk client through the balancer, and the servers its requests went to (from
    nginx's log, which has a request once it has answered it)."""

    def __init__(self, cluster: Cluster, http: httpx.AsyncClient, card: Any) -> None:
        self.cluster = cluster
        self.plain = ClientFactory(ClientConfig(httpx_client=http, streaming=False)).create(card)
        self.streaming = ClientFactory(ClientConfig(httpx_client=http, streaming=True)).create(card)
        self.refused = ""  # where the last refused send went

    def posts(self) -> list[str]:
        """The upstream of every JSON-RPC request (POST /a2a/) nginx has logged, in order."""
        return [line.split()[-1] for line in self.cluster.upstreams() if line.startswith("POST /a2a/ ")]

    def after(self, mark: int, count: int = 1) -> list[str]:
        """The upstreams of the ``count`` requests logged after the first ``mark`` (waits for them)."""
        def logged() -> list[str] | None:
            seen = self.posts()
            return seen[mark:mark + count] if len(seen) >= mark + count else None

        return list(wait_for(logged, "nginx to log the requests", timeout=20))

    async def send(self, request: SendMessageRequest) -> tuple[Task, str]:
        mark = len(self.posts())
        try:
            events = [event async for event in self.plain.send_message(request)]
        except A2AError:
            self.refused = self.after(mark)[0]
            raise
        assert len(events) == 1 and events[0].HasField("task"), events
        return events[0].task, self.after(mark)[0]

    async def call(self, coroutine: Any) -> tuple[Any, str]:
        mark = len(self.posts())
        result = await coroutine
        return result, self.after(mark)[0]


async def connected(cluster: Cluster, http: httpx.AsyncClient) -> Clients:
    card = await A2ACardResolver(http, cluster.url + "/a2a").get_agent_card()
    assert card.supported_interfaces[0].url == cluster.url + "/a2a/", "the card names the balancer (its Host)"
    return Clients(cluster, http, card)


async def test_every_a2a_method_works_on_any_server(tmp_path, postgres, balancer):
    with Cluster(tmp_path, postgres.dsn, balancer=balancer, doors=("a2a",)) as cluster:
        async with httpx.AsyncClient(headers=AUTH, timeout=120) as http:
            a2a = await connected(cluster, http)
            # send, then get and list through the other servers
            task, sent_on = await a2a.send(ask("hello from anywhere"))
            assert task.status.state == COMPLETED and reply_of(task) == "You said: hello from anywhere (3 words, turn 1)"
            read_on = set()
            for _ in range(3):
                got, where = await a2a.call(a2a.plain.get_task(GetTaskRequest(id=task.id)))
                assert reply_of(got) == reply_of(task) and got.status.state == COMPLETED
                assert [get_message_text(m) for m in got.history if m.role == Role.ROLE_USER] == ["hello from anywhere"]
                read_on.add(where)
            assert len(read_on | {sent_on}) == 3, (sent_on, read_on)
            listed = await a2a.plain.list_tasks(ListTasksRequest())
            assert task.id in {t.id for t in listed.tasks}
            # a thread continued from every server
            again, _ = await a2a.send(ask("and again", context_id=task.context_id))
            assert reply_of(again).endswith("turn 2)"), reply_of(again)
            # a stream
            deltas, streamed = 0, ""
            async for event in a2a.streaming.send_message(ask("/slow one two three four five")):
                deltas += event.HasField("artifact_update")
                if event.HasField("status_update") and event.status_update.status.state == COMPLETED:
                    streamed = event.status_update.task_id
            assert deltas > 3 and streamed
            got, _ = await a2a.call(a2a.plain.get_task(GetTaskRequest(id=streamed)))
            assert reply_of(got) == "You said: one two three four five (5 words, turn 1)", reply_of(got)


async def test_subscribe_and_cancel_through_other_servers(tmp_path, postgres, balancer):
    with Cluster(tmp_path, postgres.dsn, balancer=balancer, doors=("a2a",)) as cluster:
        async with httpx.AsyncClient(headers=AUTH, timeout=120) as http:
            a2a = await connected(cluster, http)
            # a whole task followed from another server: the reply comes out once, as stored
            task, runs_on = await a2a.send(ask("/slow /long 40 watched", now=True))
            mark = len(a2a.posts())
            followed = Task(id=task.id, context_id=task.context_id)
            states = []
            async for event in a2a.streaming.subscribe(SubscribeToTaskRequest(id=task.id)):
                if event.HasField("task"):
                    followed.CopyFrom(event.task)
                elif event.HasField("artifact_update"):
                    append_artifact_to_task(followed, event.artifact_update)
                elif event.HasField("status_update"):
                    states.append(event.status_update.status.state)
            watched_on = a2a.after(mark)[0]
            assert watched_on != runs_on, "the subscription went to another server than the one running the task"
            assert states[-1] == COMPLETED, states
            stored, _ = await a2a.call(a2a.plain.get_task(GetTaskRequest(id=task.id)))
            assert reply_of(followed) == reply_of(stored), "applied as the protocol says, the updates give the stored reply"
            assert len(reply_of(stored).split()) >= 35 and [a.artifact_id for a in followed.artifacts] == ["reply"]

            # a long task, followed through one server and cancelled through another
            task, runs_on = await a2a.send(ask("/slow /long 600 cancel-me", now=True))
            mark = len(a2a.posts())
            updates, cancelled, ending = 0, None, None
            async for event in a2a.streaming.subscribe(SubscribeToTaskRequest(id=task.id)):
                if event.HasField("artifact_update"):
                    updates += 1
                    if updates == 3:
                        cancelled = await a2a.plain.cancel_task(CancelTaskRequest(id=task.id))
                elif event.HasField("status_update"):
                    ending = event.status_update.status.state
            assert cancelled is not None and cancelled.status.state == CANCELED, cancelled
            assert runs_on not in a2a.after(mark, 2), "the subscription and the cancel (in either order in the log) " \
                "went to other servers than the one running the task"
            assert ending == CANCELED
            stored, _ = await a2a.call(a2a.plain.get_task(GetTaskRequest(id=task.id)))
            assert stored.status.state == CANCELED
            assert len(reply_of(stored).split()) < 300, "the backend stopped soon after the cancel"


async def test_an_input_required_round_answered_through_another_server(tmp_path, postgres, balancer):
    with Cluster(tmp_path, postgres.dsn, balancer=balancer, doors=("a2a",)) as cluster:
        async with httpx.AsyncClient(headers=AUTH, timeout=120) as http:
            a2a = await connected(cluster, http)
            task, asked_on = await a2a.send(ask("/question Which colour?"))
            assert task.status.state == INPUT_REQUIRED
            # the HTTP+JSON binding, through another server (round robin): the run waiting on the first takes it
            message = {"messageId": "m-rest", "role": "ROLE_USER", "taskId": task.id, "contextId": task.context_id,
                       "parts": [{"text": "blue"}]}
            rest = await http.post(cluster.url + "/a2a/rest/message:send", json={"message": message},
                                   headers={"A2A-Version": "1.0"})
            rest_on = wait_for(lambda: next((line.split()[-1] for line in cluster.upstreams() if "/a2a/rest/" in line),
                                            None), "nginx to log the request")
            assert rest_on != asked_on
            assert rest.status_code == 200, rest.text
            assert rest.json()["task"]["status"]["state"] == "TASK_STATE_COMPLETED", rest.text
            for _ in range(3):  # read through every server: the task as the answering server ended it
                stored, _ = await a2a.call(a2a.plain.get_task(GetTaskRequest(id=task.id)))
                assert stored.status.state == COMPLETED and reply_of(stored) == 'You answered {"answer": "blue"}'
                assert [get_message_text(m) for m in stored.history if m.role == Role.ROLE_USER] == [
                    "/question Which colour?", "blue"]
            # JSON-RPC rounds: each answer lands where the balancer sends it, and completes there
            elsewhere = 0
            for colour in ("red", "green", "amber"):
                task, asked_on = await a2a.send(ask("/question And now?"))
                answered, answered_on = await a2a.send(ask(colour, task_id=task.id, context_id=task.context_id))
                assert answered.status.state == COMPLETED, answered.status
                assert reply_of(answered) == f'You answered {{"answer": "{colour}"}}'
                elsewhere += answered_on != asked_on
                with pytest.raises(A2AError, match="terminal state"):  # a second answer: the task has ended
                    await a2a.send(ask("again", task_id=task.id, context_id=task.context_id))
            assert elsewhere, "no answer reached another server than the one that asked"

            # an input-required task cancelled through another server: the task ends, and so does the waiting run
            task, asked_on = await a2a.send(ask("/question Still there?"))
            cancelled, cancelled_on = await a2a.call(a2a.plain.cancel_task(CancelTaskRequest(id=task.id)))
            assert cancelled.status.state == CANCELED and cancelled_on != asked_on
            deadline, reply = time.monotonic() + 30, None
            while reply is None and time.monotonic() < deadline:
                try:  # the context is free once the run that waited in it has ended
                    reply, _ = await a2a.send(ask("next turn", context_id=task.context_id))
                except A2AError as exc:
                    assert (exc.data or {}).get("error") == "pending_questions", repr(exc)
                    await asyncio.sleep(0.2)
            assert reply is not None and reply.status.state == COMPLETED, "the waiting run on the other server ended"
            stored, _ = await a2a.call(a2a.plain.get_task(GetTaskRequest(id=task.id)))
            assert stored.status.state == CANCELED


async def test_tasks_outlive_their_servers(tmp_path, postgres, balancer):
    with Cluster(tmp_path, postgres.dsn, balancer=balancer, doors=("a2a",)) as cluster:
        async with httpx.AsyncClient(headers=AUTH, timeout=120) as http:
            a2a = await connected(cluster, http)
            task, _ = await a2a.send(ask("remember me"))
            for index in range(3):
                cluster.restart(index)
            got = await a2a.plain.get_task(GetTaskRequest(id=task.id))
            assert got.status.state == COMPLETED and reply_of(got) == reply_of(task)
            assert [get_message_text(m) for m in got.history if m.role == Role.ROLE_USER] == ["remember me"]

            # a task whose server is killed mid-run reads as failed through the others
            victim = cluster.servers[0]
            assert victim is not None
            async with httpx.AsyncClient(headers=AUTH, timeout=120) as direct:
                card = await A2ACardResolver(direct, victim.base_url + "/a2a").get_agent_card()
                on_victim = ClientFactory(ClientConfig(httpx_client=direct, streaming=False)).create(card)
                events = [e async for e in on_victim.send_message(ask("/slow /long 3000 doomed", now=True))]
                doomed = events[0].task
            cluster.kill(0)
            deadline, state = time.monotonic() + 90, None
            while time.monotonic() < deadline:
                got = await a2a.plain.get_task(GetTaskRequest(id=doomed.id))
                state = got.status.state
                if state == TaskState.TASK_STATE_FAILED:
                    break
                await asyncio.sleep(0.5)
            assert state == TaskState.TASK_STATE_FAILED, TaskState.Name(state or 0)
            assert "stopped before the task ended" in get_message_text(got.status.message)
