"""An input-required task whose run ends while it waits for the answer ends too, visibly.

Against real `onedoor serve --door a2a --door rest` processes, with the Python client:
the question expires (``a2a.question_ttl=1``): ``GetTask`` shows CANCELED saying it
expired, a ``SubscribeToTask`` subscriber from before receives that update, and a late
answer is refused (the task has ended) instead of flipping it to FAILED. The same when
the task is cancelled while it waits; when its thread is deleted (through the REST door)
the subscriber sees it CANCELED and the task goes with its thread (unknown after); the run really ends cancelled each time (the launcher's observer hook).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any, Awaitable, Callable, Iterator

import httpx
import pytest
from a2a.types import GetTaskRequest, SubscribeToTaskRequest, TaskState
from a2a.utils.errors import TaskNotFoundError, UnsupportedOperationError
from a2a_helpers import TOKEN, A2aServer, ask, authorized, clients, send
from onedoor.testing.hostile import traceback_in

pytestmark = pytest.mark.timeout(120)

INPUT_REQUIRED = TaskState.TASK_STATE_INPUT_REQUIRED
CANCELED = TaskState.TASK_STATE_CANCELED


def serve(tmp_path_factory: pytest.TempPathFactory, *options: str) -> A2aServer:
    tmp = tmp_path_factory.mktemp("parked")
    return A2aServer(["--door", "rest", "--token", TOKEN, "-o", f"sqlite.path={tmp / 'threads.sqlite3'}", *options], tmp)


@pytest.fixture(scope="module")
def expiring(tmp_path_factory: pytest.TempPathFactory) -> Iterator[A2aServer]:
    """Questions expire after 1 s."""
    server = serve(tmp_path_factory, "-o", "a2a.question_ttl=1")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def waiting(tmp_path_factory: pytest.TempPathFactory) -> Iterator[A2aServer]:
    """Questions wait the kernel's default time (600 s)."""
    server = serve(tmp_path_factory)
    try:
        yield server
    finally:
        server.stop()


async def until(read: Callable[[], Awaitable[Any]], done: Callable[[Any], bool], what: str, timeout: float = 20.0) -> Any:
    """Read until ``done(value)``, bounded."""
    deadline = time.monotonic() + timeout
    while True:
        value = await read()
        if done(value):
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"gave up after {timeout:g} s waiting for {what}; last: {value}")
        await asyncio.sleep(0.05)


class Subscriber:
    """A SubscribeToTask stream read in the background; ``ready`` once it holds the task."""

    def __init__(self, client: Any, task_id: str) -> None:
        self.events: list[Any] = []
        self.ready = asyncio.Event()
        self.task = asyncio.ensure_future(self._read(client, task_id))

    async def _read(self, client: Any, task_id: str) -> None:
        async for event in client.subscribe(SubscribeToTaskRequest(id=task_id)):
            self.events.append(event)
            self.ready.set()

    def statuses(self) -> list[Any]:
        return [e.status_update.status for e in self.events if e.HasField("status_update")]


async def parked_task(client: Any, streaming: Any, tag: str) -> tuple[Any, Subscriber]:
    task = await send(client, ask(f"/question What colour? {tag}"))
    assert task.status.state == INPUT_REQUIRED, task
    subscriber = Subscriber(streaming, task.id)
    await asyncio.wait_for(subscriber.ready.wait(), 10)
    return task, subscriber


async def ended(client: Any, task: Any, subscriber: Subscriber, why: str) -> Any:
    """The task as GetTask shows it once CANCELED (bounded poll); the subscriber saw it too."""
    got = await until(lambda: client.get_task(GetTaskRequest(id=task.id)), lambda t: t.status.state == CANCELED,
                      f"task {task.id} to read CANCELED")
    assert why in got.status.message.parts[0].text, got.status
    await asyncio.wait_for(subscriber.task, 10)  # the stream ended with the task
    last = subscriber.statuses()[-1]
    assert last.state == CANCELED and why in last.message.parts[0].text, subscriber.statuses()
    return got


async def test_an_expired_question_cancels_the_task_and_a_late_answer_is_refused(expiring: A2aServer) -> None:
    async with authorized() as http:
        _, client, streaming = await clients(http, expiring.a2a_url)
        task, subscriber = await parked_task(client, streaming, "expire-me")
        await ended(client, task, subscriber, "expired")
        for transport in (client, (await clients(http, expiring.a2a_url, "HTTP+JSON"))[1]):
            with pytest.raises(UnsupportedOperationError, match="terminal state"):
                await send(transport, ask("blue", task_id=task.id, context_id=task.context_id))
        still = await client.get_task(GetTaskRequest(id=task.id))
    assert still.status.state == CANCELED  # not flipped to FAILED by the late answer
    outcome = expiring.outcome_of("expire-me")
    assert outcome["stop_reason"] == "cancelled" and outcome["workers_alive"] == 0, outcome
    assert traceback_in(expiring.stderr()) is None, expiring.stderr()[-3000:]


async def test_a_question_answered_in_time_still_completes(expiring: A2aServer) -> None:
    async with authorized() as http:
        _, client, _ = await clients(http, expiring.a2a_url)
        task = await send(client, ask("/question Quick, a colour?"))
        answered = await send(client, ask("red", task_id=task.id, context_id=task.context_id))
    assert answered.status.state == TaskState.TASK_STATE_COMPLETED, answered.status
    assert [p.text for a in answered.artifacts for p in a.parts] == ['You answered {"answer": "red"}']


async def test_deleting_the_thread_cancels_the_waiting_task(waiting: A2aServer) -> None:
    async with authorized() as http:
        _, client, streaming = await clients(http, waiting.a2a_url)
        task, subscriber = await parked_task(client, streaming, "delete-my-thread")
        gone = await http.delete(waiting.base_url + f"/rest/threads/{task.context_id}")
        assert gone.status_code == 204, gone.text
        await asyncio.wait_for(subscriber.task, 20)  # the stream ended with the task
        last = subscriber.statuses()[-1]
        assert last.state == CANCELED and "was deleted" in last.message.parts[0].text, subscriber.statuses()
        # the task (its history holds the conversation's text) went with its thread
        with pytest.raises(TaskNotFoundError):
            await client.get_task(GetTaskRequest(id=task.id))
        with pytest.raises(TaskNotFoundError):
            await send(client, ask("blue", task_id=task.id, context_id=task.context_id))
    outcome = waiting.outcome_of("delete-my-thread")
    assert outcome["workers_alive"] == 0, outcome  # ended for real (the kernel says RunFailed: its turn had no thread)


async def test_cancelling_a_waiting_task_ends_its_run(waiting: A2aServer) -> None:
    from a2a.types import CancelTaskRequest

    async with authorized() as http:
        _, client, streaming = await clients(http, waiting.a2a_url)
        task, subscriber = await parked_task(client, streaming, "cancel-while-waiting")
        cancelled = await client.cancel_task(CancelTaskRequest(id=task.id))
        assert cancelled.status.state == CANCELED
        await ended(client, task, subscriber, "cancelled")
        # the thread takes a new message at once: no run waits for answers on it
        again = await send(client, ask("next " + uuid.uuid4().hex[:6], context_id=task.context_id))
    assert again.status.state == TaskState.TASK_STATE_COMPLETED, again.status
    outcome = waiting.outcome_of("cancel-while-waiting")
    assert outcome["stop_reason"] == "cancelled" and outcome["workers_alive"] == 0, outcome


async def test_an_expired_question_ends_its_task_with_no_run_hook_too() -> None:
    """A door app built in-process, not through `onedoor serve`: no run hooks tell the door."""
    from onedoor import Limits, ServeContext
    from onedoor.testing import scripted_kernel
    from onedoor_door_a2a import A2aDoor, A2aOptions
    from onedoor_transport_http.app import HttpOptions, build_app

    kernel = scripted_kernel(Limits(question_ttl=1.0))
    ctx = ServeContext(kernel=kernel, options={"a2a": A2aOptions()})
    app, _ = build_app([A2aDoor()], ctx, HttpOptions(port=0))
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1", timeout=30) as http:
        _, client, _ = await clients(http, "http://127.0.0.1/a2a")
        task = await send(client, ask("/question In-process colour?"))
        assert task.status.state == INPUT_REQUIRED
        got = await until(lambda: client.get_task(GetTaskRequest(id=task.id)), lambda t: t.status.state == CANCELED,
                          "the in-process task to read CANCELED")
    assert "expired" in got.status.message.parts[0].text
    await kernel.shutdown(1.0)
