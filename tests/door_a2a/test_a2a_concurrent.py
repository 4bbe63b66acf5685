"""Many turns at once on one A2A context: every turn is kept in its thread, none lost.

Against a real `onedoor serve --door a2a --door rest` (SQLite threads): 30 messages sent at
once on one ``contextId`` through the Python client (JSON-RPC, half of them streaming,
and the HTTP+JSON binding) all complete, and the thread, read back through the REST door,
holds each message once and its reply once: the kernel has a thread's writers take turns.
"""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter
from typing import Any, Iterator

import httpx
import pytest
from a2a.types import TaskState
from a2a_helpers import TOKEN, A2aServer, ask, authorized, clients
from onedoor.testing.hostile import traceback_in

pytestmark = pytest.mark.timeout(180)

TURNS = 30


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[A2aServer]:
    tmp = tmp_path_factory.mktemp("concurrent")
    served = A2aServer(["--door", "rest", "--token", TOKEN, "-o", f"sqlite.path={tmp / 'threads.sqlite3'}"], tmp)
    try:
        yield served
    finally:
        served.stop()


async def one_turn(client: Any, text: str, context_id: str) -> Any:
    """The turn's final state, and its reply as the client saw it."""
    state, reply = None, ""
    async for event in client.send_message(ask(text, context_id=context_id)):
        if event.HasField("task"):
            state = event.task.status.state
            reply = "".join(p.text for a in event.task.artifacts for p in a.parts) or reply
        elif event.HasField("artifact_update") and not event.artifact_update.append:
            reply = "".join(p.text for p in event.artifact_update.artifact.parts)
        elif event.HasField("status_update"):
            state = event.status_update.status.state
    return state, reply


async def test_turns_sent_at_once_on_one_context_are_all_kept(server: A2aServer) -> None:
    context_id = "busy-" + uuid.uuid4().hex
    texts = [f"turn number {n} {uuid.uuid4().hex[:8]}" for n in range(TURNS)]
    async with authorized() as http:
        _, plain, streaming = await clients(http, server.a2a_url)
        _, rest, _ = await clients(http, server.a2a_url, "HTTP+JSON")
        first = await one_turn(plain, "open the context", context_id)  # the thread exists before the rush
        assert first[0] == TaskState.TASK_STATE_COMPLETED, first
        senders = [(plain, streaming, rest)[n % 3] for n in range(TURNS)]
        done = await asyncio.gather(*(one_turn(c, t, context_id) for c, t in zip(senders, texts)))
    assert [state for state, _ in done] == [TaskState.TASK_STATE_COMPLETED] * TURNS, done
    for text, (_, reply) in zip(texts, done):
        assert reply.startswith(f"You said: {text} ("), (text, reply)

    thread = httpx.get(f"{server.base_url}/rest/threads/{context_id}", timeout=30,
                       headers={"Authorization": f"Bearer {TOKEN}"}).json()
    messages = thread["messages"]
    users = Counter(m["content"] for m in messages if m["role"] == "user")
    assert users == Counter(["open the context", *texts]), users  # each message once
    replies = [m["content"] for m in messages if m["role"] == "assistant" and not m.get("tool_calls")]
    assert len(replies) == TURNS + 1
    for text in texts:  # each reply once
        assert sum(1 for r in replies if r.startswith(f"You said: {text} (")) == 1, text
    assert server.alive() and traceback_in(server.stderr()) is None, server.stderr()[-3000:]
