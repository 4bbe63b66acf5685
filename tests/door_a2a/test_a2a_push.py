"""Push notifications with the official Python client (a2a-sdk) against a real server, and a
real webhook: an HTTP server on 127.0.0.1 (port 0) the test starts, recording every POST.

A config sent with the message gets every update of the task (the same ones, in the same
order, a streaming client sees), each with the config's token and authentication; a
webhook that answers 503 is tried again; configs made with CreateTaskPushNotificationConfig
are read back (Get, List), used for what follows, and deleted, through the Python client
and through the JS client @a2a-js/sdk (whose JSON-RPC transport speaks A2A 0.3's
``tasks/pushNotificationConfig/*``). Bad configs (unknown task, bad URL, long id, one
too many) are -32602 / task-not-found with the reason; retries are bounded
(``push_retries``) and a 4xx is not retried, each failure one warning line. Loopback webhooks need
``-o a2a.push_allow_private=true``: without it such a URL is refused with the reason.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any, Iterator

import pytest
from a2a.types import (
    AuthenticationInfo,
    DeleteTaskPushNotificationConfigRequest,
    GetTaskPushNotificationConfigRequest,
    ListTaskPushNotificationConfigsRequest,
    TaskPushNotificationConfig,
    TaskState,
)
from a2a.utils.errors import A2AError, InvalidParamsError, TaskNotFoundError
from a2a_helpers import TOKEN, A2aServer, ask, authorized, clients, send
from a2a_webhook import Webhook, state
from onedoor.testing.hostile import traceback_in
from onedoor_door_a2a.push_configs import MAX_CONFIGS
from onedoor_test_support import await_for, node_or_skip, wait_for

pytestmark = pytest.mark.timeout(120)

def kind_of(body: dict[str, Any]) -> tuple[str, str]:
    """(the kind of update, what it says: a state, or the artifact and its text)."""
    if "artifactUpdate" in body:
        update = body["artifactUpdate"]
        return "artifact_update", update["artifact"]["artifactId"] + ":" + "".join(
            p.get("text", "") for p in update["artifact"]["parts"])
    kind = next(iter(body))
    return {"statusUpdate": "status_update", "task": "task"}[kind], state(body)


@pytest.fixture(scope="module")
def pushing(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A server that may push to loopback webhooks (the option tests need)."""
    tmp = tmp_path_factory.mktemp("a2a-push")
    server = A2aServer(["--token", TOKEN, "-o", "sqlite.path=" + str(tmp / "threads.sqlite3"),
                        "-o", "a2a.push_allow_private=true"], tmp)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def webhook() -> Iterator[Webhook]:
    hook = Webhook(refuse=1)
    try:
        yield hook
    finally:
        hook.close()


def config(url: str, token: str, credentials: str = "", config_id: str = "") -> TaskPushNotificationConfig:
    made = TaskPushNotificationConfig(url=url, token=token, id=config_id)
    if credentials:
        made.authentication.CopyFrom(AuthenticationInfo(scheme="Bearer", credentials=credentials))
    return made


async def test_the_webhook_receives_every_update_of_the_task_with_its_token(pushing: Any, webhook: Webhook) -> None:
    request = ask("/slow pushed along")
    request.configuration.task_push_notification_config.CopyFrom(config(webhook.base + "/one", "tok-one", "cred-1"))
    async with authorized() as http:
        card, _, streaming = await clients(http, pushing.a2a_url)
        assert card.capabilities.push_notifications is True
        seen = []
        async for event in streaming.send_message(request):
            kind = event.WhichOneof("payload")
            if kind == "artifact_update":
                artifact = event.artifact_update.artifact
                seen.append((kind, artifact.artifact_id + ":" + "".join(p.text for p in artifact.parts)))
            elif kind == "status_update":
                seen.append((kind, TaskState.Name(event.status_update.status.state)))
    await await_for(lambda: webhook.ended("/one"), "the task's last update at the webhook")
    pushed = [kind_of(body) for body in webhook.bodies("/one")]
    assert pushed[0][0] == "task", pushed[:2]  # the task as it was made, then every update
    assert pushed[1:] == seen, (pushed, seen)
    assert any(k == "artifact_update" for k, _ in seen) and seen[-1] == ("status_update", "TASK_STATE_COMPLETED")
    headers = [h for p, h, _ in webhook.posts if p == "/one"]
    assert all(h.get("X-A2A-Notification-Token") == "tok-one" for h in headers), headers[0]
    assert all(h.get("Authorization") == "Bearer cred-1" for h in headers), headers[0]
    assert webhook.refused == {"/one": 1}, "the first POST got 503 and was tried again"


async def test_configs_made_read_back_used_and_deleted(pushing: Any, webhook: Webhook) -> None:
    async with authorized() as http:
        _, client, _ = await clients(http, pushing.a2a_url)
        task = await send(client, ask("/question Which colour?"))
        assert task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
        made = await client.create_task_push_notification_config(
            TaskPushNotificationConfig(task_id=task.id, **{"url": webhook.base + "/two", "token": "tok-two", "id": "two"}))
        assert (made.task_id, made.id, made.url) == (task.id, "two", webhook.base + "/two")
        other = config(webhook.base + "/three", "tok-three", config_id="three")
        other.task_id = task.id
        await client.create_task_push_notification_config(other)
        got = await client.get_task_push_notification_config(GetTaskPushNotificationConfigRequest(task_id=task.id, id="two"))
        assert (got.url, got.token) == (webhook.base + "/two", "tok-two")
        listed = await client.list_task_push_notification_configs(ListTaskPushNotificationConfigsRequest(task_id=task.id))
        assert sorted(c.id for c in listed.configs) == ["three", "two"]
        await client.delete_task_push_notification_config(DeleteTaskPushNotificationConfigRequest(task_id=task.id, id="three"))
        listed = await client.list_task_push_notification_configs(ListTaskPushNotificationConfigsRequest(task_id=task.id))
        assert [c.id for c in listed.configs] == ["two"]
        answered = await send(client, ask("blue", task_id=task.id, context_id=task.context_id))
        assert answered.status.state == TaskState.TASK_STATE_COMPLETED
    await await_for(lambda: webhook.ended("/two"), "the answered task's updates at the webhook")
    states = [state(b) for b in webhook.bodies("/two") if state(b)]
    assert states[-1] == "TASK_STATE_COMPLETED" and "TASK_STATE_WORKING" in states, states
    texts = [kind_of(b)[1] for b in webhook.bodies("/two") if "artifactUpdate" in b]
    assert texts[-1] == 'reply:You answered {"answer": "blue"}', texts
    assert webhook.bodies("/three") == [], "a deleted config gets nothing"
    assert all(h.get("X-A2A-Notification-Token") == "tok-two" for p, h, _ in webhook.posts if p == "/two")


async def test_a_loopback_webhook_is_refused_without_the_option(served: Any, webhook: Webhook) -> None:
    async with authorized() as http:
        _, client, _ = await clients(http, served.a2a_url)
        task = await send(client, ask("/question Which colour?"))
        for url, why in ((webhook.base + "/four", "is not a public address"), ("http://10.0.0.7/hook", "is not a public"),
                         ("http://169.254.169.254/latest", "is not a public"), ("http://[::1]:9/x", "is not a public"),
                         ("ftp://example.com/x", "is http:// or https://")):
            refused = config(url, "tok")
            refused.task_id = task.id
            with pytest.raises(InvalidParamsError, match=why):  # -32602, with the reason
                await client.create_task_push_notification_config(refused)
        listed = await client.list_task_push_notification_configs(ListTaskPushNotificationConfigsRequest(task_id=task.id))
        assert list(listed.configs) == []
        inline = ask("refused inline")
        inline.configuration.task_push_notification_config.CopyFrom(config(webhook.base + "/five", "tok"))
        with pytest.raises(InvalidParamsError, match="is not a public address"):
            await send(client, inline)
    assert webhook.posts == [] and webhook.refused == {}


def test_the_js_client_makes_reads_and_deletes_configs(pushing: Any, webhook: Webhook) -> None:
    js = Path(__file__).parent / "js"
    node = node_or_skip(js, "@a2a-js/sdk")
    done = subprocess.run([node, str(js / "push.mjs"), pushing.a2a_url], capture_output=True, text=True, timeout=90,
                          env={**os.environ, "TOKEN": TOKEN, "HOOK": webhook.base})
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert "error" not in out, out
    assert out["card"] == {"push": True, "extended": True}
    assert out["extensions"] == ["https://github.com/onedoor-dev/onedoor/blob/main/plugins/door-a2a/README.md"
                                 "#the-extended-card"]
    assert out["asked"] == "TASK_STATE_INPUT_REQUIRED" and out["answered"]["state"] == "TASK_STATE_COMPLETED"
    task_id = out["answered"]["id"]
    one = {"id": "js-one", "taskId": task_id, "url": webhook.base + "/js-one", "token": "tok-js-one", "scheme": "Bearer"}
    assert out["got"] == one and out["listed"] == [one], out
    wait_for(lambda: webhook.ended("/js-one"), "the JS client's task at the webhook")
    headers = [h for p, h, _ in webhook.posts if p == "/js-one"]
    assert headers and all(h.get("Authorization") == "Bearer cred-js-1" for h in headers)
    assert all(h.get("X-A2A-Notification-Token") == "tok-js-one" for h in headers)
    assert webhook.bodies("/js-two") == [], "the config deleted before the answer got nothing"


async def test_bad_configs_are_clear_errors_and_the_server_keeps_serving(pushing: Any, webhook: Webhook) -> None:
    async with authorized() as http:
        _, client, _ = await clients(http, pushing.a2a_url)
        task = await send(client, ask("/question Which colour, configured?"))
        unknown = config(webhook.base + "/x", "tok")
        unknown.task_id = "no-such-task"
        with pytest.raises(TaskNotFoundError):
            await client.create_task_push_notification_config(unknown)
        empty = config("", "tok")
        empty.task_id = task.id
        with pytest.raises(InvalidParamsError) as raised:  # (the SDK's own check of required fields, first)
            await client.create_task_push_notification_config(empty)
        assert "url" in f"{raised.value} {getattr(raised.value, 'data', '')}".lower(), repr(raised.value)
        for made, why in ((config("not a url", "tok"), "is http:// or https://"),
                          (config(webhook.base + "/x", "tok", config_id="i" * 201), "at most 200 characters")):
            made.task_id = task.id
            with pytest.raises(InvalidParamsError, match=why):
                await client.create_task_push_notification_config(made)
        for n in range(MAX_CONFIGS):
            made = config(webhook.base + f"/c{n}", "tok", config_id=f"c{n}")
            made.task_id = task.id
            await client.create_task_push_notification_config(made)
        eleventh = config(webhook.base + "/c-over", "tok", config_id="c-over")
        eleventh.task_id = task.id
        with pytest.raises(InvalidParamsError, match=f"at most {MAX_CONFIGS} push notification configs"):
            await client.create_task_push_notification_config(eleventh)
        replaced = config(webhook.base + "/c0-again", "tok-again", config_id="c0")  # the same id: replaced, not added
        replaced.task_id = task.id
        await client.create_task_push_notification_config(replaced)
        with pytest.raises(A2AError):
            await client.get_task_push_notification_config(GetTaskPushNotificationConfigRequest(task_id=task.id, id="nope"))
        listed = await client.list_task_push_notification_configs(ListTaskPushNotificationConfigsRequest(task_id=task.id))
        assert len(listed.configs) == MAX_CONFIGS
        assert {c.id: c.url for c in listed.configs}["c0"] == webhook.base + "/c0-again"
        again = await send(client, ask("still serving"))
    assert again.status.state == TaskState.TASK_STATE_COMPLETED
    assert traceback_in(pushing.stderr()) is None, pushing.stderr()[-3000:]


@pytest.fixture(scope="module")
def retrying_once(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    tmp = tmp_path_factory.mktemp("a2a-push-retries")
    server = A2aServer(["--token", TOKEN, "-o", "sqlite.path=" + str(tmp / "threads.sqlite3"),
                        "-o", "a2a.push_allow_private=true", "-o", "a2a.push_retries=1"], tmp)
    try:
        yield server
    finally:
        server.stop()


async def test_retries_are_bounded_and_a_refusal_is_not_retried(retrying_once: Any) -> None:
    hook = Webhook(always={"/down": 503, "/no": 400})
    try:
        request = ask("/long 3 pushed to webhooks that fail")
        request.configuration.task_push_notification_config.CopyFrom(config(hook.base + "/down", "tok"))
        async with authorized() as http:
            _, client, streaming = await clients(http, retrying_once.a2a_url)
            events = [event async for event in streaming.send_message(request)]
            assert events[-1].status_update.status.state == TaskState.TASK_STATE_COMPLETED, "the task is not held up"
            asked = await send(client, ask("/question Pushed again?"))
            second = config(hook.base + "/no", "tok", config_id="no")
            second.task_id = asked.id
            await client.create_task_push_notification_config(second)
            await send(client, ask("yes", task_id=asked.id, context_id=asked.context_id))
        pushed = len(events)  # what the stream had: the task as made, then every update
        await await_for(lambda: hook.refused.get("/down", 0) >= 2 * pushed, "every update tried twice at /down", 60)
        await await_for(lambda: "push for task" in retrying_once.stderr() and "HTTP 400" in retrying_once.stderr(),
                        "the warnings of the failed pushes", 30)
        assert hook.refused["/down"] == 2 * pushed, (hook.refused, pushed)  # once, and once again: no more
        assert hook.posts == []
        log = retrying_once.stderr()
        assert "failed (HTTP 503) after 2 attempt(s)" in log and "failed (HTTP 400) after 1 attempt(s)" in log, log[-3000:]
        assert traceback_in(log) is None, log[-3000:]
    finally:
        hook.close()
