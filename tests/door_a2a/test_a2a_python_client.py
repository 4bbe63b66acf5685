"""The A2A door with the official Python client (a2a-sdk), against a real `onedoor serve` process.

The card, a message and its reply, a stream whose text grows, a cancel mid-stream that
really stops the backend (the launcher's observer hook sees the run end cancelled with
no worker thread left), a question as ``input-required`` answered by the next message,
the ``contextId`` as an onedoor thread, the HTTP+JSON binding and re-subscription. A
task's reply is one text part once it has ended, streamed or not (the stream's deltas and
then one update with the whole text, which replaces the artifact as the protocol says).
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from a2a.client import A2ACardResolver
from a2a.helpers import get_artifact_text
from a2a.server.tasks.task_manager import append_artifact_to_task
from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    SubscribeToTaskRequest,
    Task,
    TaskState,
)
from a2a_helpers import ask, authorized, clients, parts_of, reply_of, send

pytestmark = pytest.mark.timeout(120)

COMPLETED = TaskState.TASK_STATE_COMPLETED


async def test_the_card_names_the_agent_its_skill_streaming_and_the_bearer_scheme(served: Any) -> None:
    async with authorized() as http:
        for base in (served.a2a_url, served.base_url):  # under the prefix and at the server root
            card = await A2ACardResolver(http, base).get_agent_card()
            assert card.name == "onedoor (scripted)"
            assert [s.id for s in card.skills] == ["chat"] and "scripted" in card.skills[0].tags
            assert card.capabilities.streaming is True
            assert list(card.security_schemes) == ["bearer"]
            assert card.security_schemes["bearer"].http_auth_security_scheme.scheme == "bearer"
            assert [(i.protocol_binding, i.url) for i in card.supported_interfaces] == [
                ("JSONRPC", served.a2a_url + "/"), ("HTTP+JSON", served.a2a_url + "/rest")]
    assert any(served.a2a_url + "/.well-known/agent-card.json" in line for line in served.lines), served.lines


async def test_send_gets_the_reply_as_one_part(served: Any) -> None:
    reply = "You said: hello there friend of mine (5 words, turn 1)"
    async with authorized() as http:
        _, client, _ = await clients(http, served.a2a_url)
        task = await send(client, ask("hello there friend of mine"))
        stored = await client.get_task(GetTaskRequest(id=task.id))
    assert task.status.state == COMPLETED
    assert parts_of(task) == [reply] and parts_of(stored) == [reply]
    assert get_artifact_text(stored.artifacts[0]) == reply  # the SDK's reader: one line, not a word per line


async def test_stream_shows_reasoning_tools_and_growing_text(served: Any) -> None:
    reply = "You said: three small words (3 words, turn 1)"
    async with authorized() as http:
        _, _, client = await clients(http, served.a2a_url)
        kinds, updates, notes, task_id = [], [], [], ""
        async for event in client.send_message(ask("three small words")):
            kind = event.WhichOneof("payload")
            kinds.append(kind)
            if kind == "task":
                task_id = event.task.id
            elif kind == "artifact_update":
                updates.append(event.artifact_update)
            elif kind == "status_update" and event.status_update.status.message.parts:
                notes.append(event.status_update.status.message.metadata["onedoor"])
        stored = await client.get_task(GetTaskRequest(id=task_id))
    assert kinds[0] == "task" and kinds[-1] == "status_update"
    assert event.status_update.status.state == COMPLETED
    assert {"reasoning", "tool_started", "tool_finished"} <= set(notes)
    *deltas, whole = updates
    assert len(deltas) > 2 and "".join(p.text for u in deltas for p in u.artifact.parts) == reply
    assert [u.append for u in deltas] == [False] + [True] * (len(deltas) - 1)  # the text grows
    assert (whole.append, whole.last_chunk, [p.text for p in whole.artifact.parts]) == (False, True, [reply])
    applied = Task(id=task_id)
    for update in updates:  # what a client keeps, applying the updates as the protocol says (the SDK's own way)
        append_artifact_to_task(applied, update)
    assert parts_of(applied) == [reply] and parts_of(stored) == [reply]


async def test_cancel_mid_stream_stops_the_backend(served: Any) -> None:
    async with authorized() as http:
        _, _, client = await clients(http, served.a2a_url)
        task_id, state, seen = "", None, 0
        async for event in client.send_message(ask("/slow /long 400 cancel-me")):
            if event.HasField("task"):
                task_id = event.task.id
            if event.HasField("artifact_update"):
                seen += 1
                if seen == 2:
                    state = (await client.cancel_task(CancelTaskRequest(id=task_id))).status.state
        assert state == TaskState.TASK_STATE_CANCELED
        assert seen < 50  # the stream ended soon after the cancel, not after 400 deltas
        got = await client.get_task(GetTaskRequest(id=task_id))
        assert got.status.state == TaskState.TASK_STATE_CANCELED
    outcome = served.outcome_of("cancel-me")
    assert outcome["stop_reason"] == "cancelled" and outcome["workers_alive"] == 0, outcome


async def test_a_question_is_input_required_and_the_next_message_answers_it(served: Any) -> None:
    async with authorized() as http:
        _, client, _ = await clients(http, served.a2a_url)
        task = await send(client, ask("/question What colour?"))
        assert task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
        assert task.status.message.parts[0].text.startswith("What colour?")
        answered = await send(client, ask("blue", task_id=task.id, context_id=task.context_id))
        assert answered.id == task.id and answered.status.state == COMPLETED
        assert reply_of(answered) == 'You answered {"answer": "blue"}'
        # an approval: "no" rejects it, and a word that answers nothing asks again
        task = await send(client, ask('/ask delete_files {"path": "/tmp/x"}'))
        assert task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
        again = await send(client, ask("purple", task_id=task.id, context_id=task.context_id))
        assert again.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
        assert "did not answer" in again.status.message.parts[0].text
        done = await send(client, ask("no", task_id=task.id, context_id=task.context_id))
        assert done.status.state == COMPLETED and reply_of(done).startswith("Not approved (reject_once)")


async def test_a_context_is_a_thread(served: Any) -> None:
    async with authorized() as http:
        _, client, _ = await clients(http, served.a2a_url)
        first = await send(client, ask("one"))
        second = await send(client, ask("two", context_id=first.context_id))
        other = await send(client, ask("three"))
    assert reply_of(first).endswith("turn 1)") and reply_of(second).endswith("turn 2)")
    assert reply_of(other).endswith("turn 1)") and other.context_id != first.context_id


async def test_the_http_json_binding(served: Any) -> None:
    async with authorized() as http:
        _, client, streaming = await clients(http, served.a2a_url, "HTTP+JSON")
        task = await send(client, ask("over rest"))
        assert task.status.state == COMPLETED and reply_of(task) == "You said: over rest (2 words, turn 1)"
        updates = [e.artifact_update async for e in streaming.send_message(ask("rest stream"))
                   if e.HasField("artifact_update")]
        assert len(updates) > 2 and [p.text for p in updates[-1].artifact.parts] == [
            "You said: rest stream (2 words, turn 1)"]


async def test_a_client_that_leaves_can_subscribe_again(served: Any) -> None:
    async with authorized() as http:
        _, _, client = await clients(http, served.a2a_url)
        task_id, first = "", ""
        async for event in client.send_message(ask("/slow /long 30 resubscribe")):
            if event.HasField("task"):
                task_id = event.task.id
            if event.HasField("artifact_update"):
                first = event.artifact_update.artifact.parts[0].text
                break  # the client goes away: the task runs on
        states, updates = [], []
        async for event in client.subscribe(SubscribeToTaskRequest(id=task_id)):
            if event.HasField("status_update"):
                states.append(event.status_update.status.state)
            elif event.HasField("artifact_update"):
                updates.append(event.artifact_update)
        assert states[-1] == COMPLETED
        task = await client.get_task(GetTaskRequest(id=task_id))
    assert task.status.state == COMPLETED
    whole = updates[-1]
    assert (whole.append, whole.last_chunk) == (False, True)
    later = "".join(p.text for u in updates[:-1] for p in u.artifact.parts)
    assert later and parts_of(task) == [p.text for p in whole.artifact.parts]  # one part: the whole reply
    text = parts_of(task)[0]
    assert text.startswith(first) and text.endswith(later)  # with the deltas sent after the client left


def test_serve_with_the_default_doors_serves_a2a_and_prints_the_card() -> None:
    from onedoor_transport_http.testing import start_server

    with start_server([]) as server:
        lines = "\n".join(server.lines)
        assert f"agent card {server.base_url}/a2a/.well-known/agent-card.json" in lines, lines
        card = httpx.get(server.base_url + "/.well-known/agent-card.json", timeout=30).json()
    assert card["capabilities"]["streaming"] is True and "securitySchemes" not in card  # no token: no scheme
