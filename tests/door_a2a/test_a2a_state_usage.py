"""Shared state, usage and tracing through the A2A door, against a real `onedoor serve` process.

State: a data part flagged ``{"onedoor": "state"}`` is the state a client sends; the run's
state comes back as the ``state`` artifact (one data part, the same flag), replaced as
the run changes it, and the thread keeps it: the next task on the context starts from it,
and a state sent with an old ``state_version`` is refused. Usage: the final status
update's metadata, and so the task's, holds the run's usage per model, equal to what the
kernel counted (the launcher's observer hook records it). Tracing: the W3C trace context
of the request's headers (or of the message's metadata) reaches ``kernel.run(meta=...)``,
and every request the door serves is told to the request observers, with its method,
transport, trace context, principal and the runs started inside it.
"""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest
from a2a.helpers import new_data_part, new_text_part
from a2a.types import GetTaskRequest, TaskState
from a2a.utils.errors import InvalidParamsError
from a2a_helpers import TOKEN, ask, ask_parts, authorized, clients, reply_of, send
from google.protobuf.json_format import MessageToDict
from onedoor.testing.hostile import traceback_in
from onedoor_test_support import wait_for

pytestmark = pytest.mark.timeout(120)

COMPLETED = TaskState.TASK_STATE_COMPLETED
TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
OTHER_TRACE = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
V1 = {"Authorization": f"Bearer {TOKEN}", "A2A-Version": "1.0"}


def as_json(struct: Any) -> Any:
    """A protobuf Struct/Value as JSON, whole-number doubles as integers."""
    def ints(value: Any) -> Any:
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, dict):
            return {k: ints(v) for k, v in value.items()}
        if isinstance(value, list):
            return [ints(v) for v in value]
        return value
    return ints(MessageToDict(struct))


def state_part(state: Any, version: int | None = None) -> Any:
    part = new_data_part(state)
    part.metadata.update({"onedoor": "state", **({"state_version": version} if version is not None else {})})
    return part


def states_of(updates: list[Any]) -> list[Any]:
    """The states the ``state`` artifact updates carried, in order."""
    out = []
    for update in updates:
        if update.artifact.artifact_id == "state":
            (part,) = update.artifact.parts
            assert as_json(part.metadata) == {"onedoor": "state"}
            out.append(as_json(part.data))
    return out


async def stream(client: Any, request: Any) -> tuple[list[Any], Any]:
    """(the artifact updates, the final status update) of a streamed task."""
    updates, final = [], None
    async for event in client.send_message(request):
        if event.HasField("artifact_update"):
            updates.append(event.artifact_update)
        elif event.HasField("status_update"):
            final = event.status_update
    return updates, final


async def test_a_client_state_comes_back_changed_and_the_thread_keeps_it(served: Any) -> None:
    context = "ctx-" + uuid.uuid4().hex
    add = '/state [{"op": "add", "path": "/todo/-", "value": "eggs"}] add eggs'
    async with authorized() as http:
        _, client, streaming = await clients(http, served.a2a_url)
        updates, final = await stream(streaming, ask_parts(new_text_part(add), state_part({"todo": ["milk"]}),
                                                           context_id=context))
        assert states_of(updates) == [{"todo": ["milk"]}, {"todo": ["milk", "eggs"]}]
        version = as_json(final.metadata)["state_version"]
        task = await client.get_task(GetTaskRequest(id=final.task_id))
        stored = {a.artifact_id: a for a in task.artifacts}
        assert as_json(stored["state"].parts[0].data) == {"todo": ["milk", "eggs"]}
        assert as_json(task.metadata)["state_version"] == version
        assert reply_of(task).endswith('State: {"todo":["milk","eggs"]}'), reply_of(task)
        # the next task on the context starts from the thread's state, and changes it again
        swap = '/state [{"op": "replace", "path": "/todo/0", "value": "oat milk"}] swap'
        updates, final = await stream(streaming, ask_parts(new_text_part(swap), context_id=context))
        assert states_of(updates) == [{"todo": ["milk", "eggs"]}, {"todo": ["oat milk", "eggs"]}]
        newer = as_json(final.metadata)["state_version"]
        assert newer > version
        # a state based on the old version is refused before any task, saying so
        with pytest.raises(InvalidParamsError) as refused:
            await send(client, ask_parts(new_text_part("stale"), state_part({"todo": []}, version), context_id=context))
        assert refused.value.data["error"] == "state_conflict" and refused.value.data["status"] == "409"
        # and one based on the current version is taken
        task = await send(client, ask_parts(new_text_part("fresh"), state_part({"todo": ["tea"]}, newer),
                                            context_id=context))
        assert task.status.state == COMPLETED and reply_of(task).endswith('State: {"todo":["tea"]}'), reply_of(task)
        with pytest.raises(InvalidParamsError) as bad:
            await send(client, ask_parts(new_text_part("not an object"), state_part([1, 2]), context_id=context))
        assert bad.value.data["error"] == "invalid_request", bad.value.data
    assert traceback_in(served.stderr()) is None, served.stderr()[-3000:]


async def test_a_state_part_is_not_an_answer(served: Any) -> None:
    async with authorized() as http:
        _, client, _ = await clients(http, served.a2a_url)
        task = await send(client, ask("/question Your name?"))
        assert task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
        answered = await send(client, ask_parts(new_text_part("Ada"), state_part({"outcome": "decline"}),
                                                task_id=task.id, context_id=task.context_id))
    assert answered.status.state == COMPLETED and reply_of(answered) == 'You answered {"answer": "Ada"}'


@pytest.mark.parametrize("streaming", [False, True])
async def test_usage_is_in_the_task_metadata_and_equals_the_kernels(served: Any, streaming: bool) -> None:
    words = f"count these words for usage {uuid.uuid4().hex}"
    async with authorized() as http:
        _, plain, streams = await clients(http, served.a2a_url)
        if streaming:
            _, final = await stream(streams, ask(words))
            assert final.status.state == COMPLETED
            status_usage = as_json(final.metadata)["usage"]
            task = await plain.get_task(GetTaskRequest(id=final.task_id))
        else:
            task = await send(plain, ask(words))
            status_usage = None
    kernel = served.outcome_of(words)["usage"]
    assert kernel and kernel[0]["model"] == "scripted" and kernel[0]["input_tokens"] == len(words.split())
    assert as_json(task.metadata)["usage"] == kernel
    if streaming:
        assert status_usage == kernel


async def test_a_failed_task_has_the_usage_of_its_run(served: Any) -> None:
    marker = f"usage-failed-{uuid.uuid4().hex} one two three four"
    async with authorized() as http:
        _, client, _ = await clients(http, served.a2a_url)
        task = await send(client, ask(f"/error {marker}"))
    outcome = served.outcome_of(marker)
    assert outcome["outcome"] == "RunFailed" and outcome["usage"], outcome
    assert task.status.state == TaskState.TASK_STATE_FAILED
    assert as_json(task.metadata)["usage"] == outcome["usage"]


def test_trace_context_from_headers_or_message_metadata_reaches_the_run(served: Any) -> None:
    def send_raw(text: str, headers: dict[str, str], metadata: dict[str, Any] | None = None) -> None:
        message = {"messageId": uuid.uuid4().hex, "role": "ROLE_USER", "parts": [{"text": text}],
                   **({"metadata": metadata} if metadata else {})}
        body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": message}}
        reply = httpx.post(served.a2a_url + "/", json=body, headers={**V1, **headers}, timeout=30).json()
        assert reply["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED", reply

    by_header = f"traced by header {uuid.uuid4().hex}"
    send_raw(by_header, {"traceparent": TRACEPARENT, "tracestate": "vendor=1"})
    assert served.outcome_of(by_header)["meta"] == {"traceparent": TRACEPARENT, "tracestate": "vendor=1"}
    by_metadata = f"traced by metadata {uuid.uuid4().hex}"
    send_raw(by_metadata, {}, {"traceparent": OTHER_TRACE})
    assert served.outcome_of(by_metadata)["meta"] == {"traceparent": OTHER_TRACE}
    both = f"traced both ways {uuid.uuid4().hex}"  # the request's own header is the nearer parent
    send_raw(both, {"traceparent": TRACEPARENT}, {"traceparent": OTHER_TRACE})
    assert served.outcome_of(both)["meta"] == {"traceparent": TRACEPARENT}
    untraced = f"not traced {uuid.uuid4().hex}"
    send_raw(untraced, {})
    assert served.outcome_of(untraced)["meta"] == {}


def test_every_request_is_told_to_the_request_observers(served: Any) -> None:
    marker = uuid.uuid4().hex
    headers = {**V1, "traceparent": TRACEPARENT}
    message = {"messageId": marker, "role": "ROLE_USER", "parts": [{"text": f"observed {marker}"}]}
    body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": message}}
    task = httpx.post(served.a2a_url + "/", json=body, headers=headers, timeout=30).json()["result"]["task"]
    get = {"jsonrpc": "2.0", "id": 2, "method": "GetTask", "params": {"id": task["id"]}}
    assert httpx.post(served.a2a_url + "/", json=get, headers=headers, timeout=30).status_code == 200
    rest = httpx.post(served.a2a_url + "/rest/message:send", headers=headers, timeout=30,
                      json={"message": {**message, "messageId": marker + "-rest"}}).json()["task"]
    assert httpx.get(served.a2a_url + f"/rest/tasks/{rest['id']}", headers=headers, timeout=30).status_code == 200
    old = {"jsonrpc": "2.0", "id": 3, "method": "message/send", "params": {"message": {
        "kind": "message", "messageId": marker + "-03", "role": "user", "parts": [{"kind": "text", "text": "old"}]}}}
    old_task = httpx.post(served.a2a_url + "/", json=old, headers={"Authorization": f"Bearer {TOKEN}",
                                                                   "traceparent": TRACEPARENT}, timeout=30).json()
    assert old_task["result"]["kind"] == "task", old_task
    httpx.get(served.a2a_url + "/.well-known/agent-card.json", timeout=30)

    expected = [("SendMessage", [task["id"]]), ("GetTask", []), ("SendMessage", [rest["id"]]), ("GetTask", []),
                ("message/send", [old_task["result"]["id"]]), ("GetAgentCard", [])]

    def mine() -> list[dict[str, Any]] | None:
        found = [r for r in served.requests() if r["meta"].get("traceparent") == TRACEPARENT
                 and (r["runs"] and r["runs"][0] in {task["id"], rest["id"], old_task["result"]["id"]}
                      or r["method"] == "GetTask")]
        return found if len(found) >= 5 else None

    seen = wait_for(mine, "the door's requests, as observed", 20)
    assert all(r["door"] == "a2a" and r["transport"] == "http" and r["principal"] == "local" and r["error"] is None
               for r in seen), seen
    methods = [(r["method"], r["runs"]) for r in seen]
    for method, runs in expected[:5]:
        assert (method, runs) in methods, (method, runs, methods)
    card = [r for r in served.requests() if r["method"] == "GetAgentCard"]
    assert card and card[-1]["runs"] == [] and card[-1]["meta"] == {}
