"""A2A over SLIM: `onedoor serve --door a2a --transport slim` serves the A2A door in the
transport's ``rpc`` shape (a slimrpc server with slima2a's A2A service), and AGNTCY's own
A2A-over-SLIM client asks it through a real SLIM node. Node, worker and client are
separate processes (the client is this one); slimrpc sessions always run with MLS."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import uuid

import pytest
from onedoor_test_support import await_for

pytest.importorskip("slim_bindings")
pytest.importorskip("slima2a", reason="A2A over SLIM needs slima2a (pip install slima2a==0.9.3)")

from onedoor import plugins

if "a2a" not in plugins.names("door"):
    pytest.skip("the A2A door (onedoor-door-a2a) is not installed", allow_module_level=True)

import slim_bindings
from a2a.types import CancelTaskRequest, GetExtendedAgentCardRequest, GetTaskRequest, TaskState
from a2a_slim_client import a2a_clients, a2a_stub, artifact_text, request
from slim_harness import NAME, SECRET, Proc, cli

pytestmark = pytest.mark.timeout(120)


def outcomes(worker: Proc) -> list[dict]:
    path = worker.outcomes  # type: ignore[attr-defined]
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


async def test_send_get_and_card_over_slim(node_cluster):
    node_cluster.worker("a2a")
    async with a2a_clients(node_cluster.endpoint, SECRET, NAME) as (unary, _):
        card = await unary.get_extended_agent_card(GetExtendedAgentCardRequest())
        assert card.name == "onedoor (scripted)"
        assert card.capabilities.streaming
        assert [(i.protocol_binding, i.url) for i in card.supported_interfaces] == [("slimrpc", NAME)]
        assert [skill.id for skill in card.skills] == ["chat"]

        events = [event async for event in unary.send_message(request("hello over slim"))]
        assert [event.WhichOneof("payload") for event in events] == ["task"]
        task = events[0].task
        assert task.status.state == TaskState.TASK_STATE_COMPLETED
        assert "You said: hello over slim" in artifact_text(task)

        fetched = await unary.get_task(GetTaskRequest(id=task.id))
        assert fetched.status.state == TaskState.TASK_STATE_COMPLETED
        assert artifact_text(fetched) == artifact_text(task)

        with pytest.raises(slim_bindings.RpcError) as unknown:
            await unary.get_task(GetTaskRequest(id=f"no-such-task-{uuid.uuid4().hex}"))
        assert unknown.value.code == slim_bindings.RpcCode.NOT_FOUND
        assert "TaskNotFoundError" in unknown.value.message

        again = [event async for event in unary.send_message(request("still serving"))]  # the error hurt nothing
        assert "You said: still serving" in artifact_text(again[0].task)


TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


async def test_each_call_is_observed_with_the_trace_context_of_its_metadata(node_cluster):
    requests = node_cluster.root / "requests.jsonl"
    worker = node_cluster.worker("a2a", env={"ONEDOOR_TEST_REQUESTS": str(requests)})
    async with a2a_stub(node_cluster.endpoint, SECRET, NAME) as stub:
        sent = await stub.SendMessage(request("traced over slim"), metadata={"traceparent": TRACEPARENT,
                                                                              "tracestate": "vendor=1"})
        assert "You said: traced over slim" in artifact_text(sent.task)
        streamed = [event async for event in stub.SendStreamingMessage(request("streamed over slim"))]
        assert streamed[-1].status_update.status.state == TaskState.TASK_STATE_COMPLETED
        await stub.GetTask(GetTaskRequest(id=sent.task.id))

    def seen():
        return [json.loads(line) for line in requests.read_text().splitlines()] if requests.exists() else []

    await await_for(lambda: len(seen()) >= 3, "the worker's request observers")
    assert [(r["door"], r["transport"], r["method"], r["error"]) for r in seen()] == [
        ("a2a", "slim", "SendMessage", None), ("a2a", "slim", "SendStreamingMessage", None),
        ("a2a", "slim", "GetTask", None)]
    assert seen()[0]["meta"] == {"traceparent": TRACEPARENT, "tracestate": "vendor=1"}
    assert seen()[1]["meta"] == {} and seen()[0]["principal"] == "local"
    traced = await await_for(lambda: next((o for o in outcomes(worker) if o["message"] == "traced over slim"), None),
                             "the traced run's outcome")
    assert traced["meta"] == {"traceparent": TRACEPARENT, "tracestate": "vendor=1"}, traced


async def test_stream_grows_then_cancel_stops_the_backend(node_cluster):
    worker = node_cluster.worker("a2a")
    async with a2a_clients(node_cluster.endpoint, SECRET, NAME) as (_, streaming):
        seen: list[str] = []  # the reply as the client has it after each artifact update
        text = ""
        states = []
        async for event in streaming.send_message(request("/slow one two three four five")):
            kind = event.WhichOneof("payload")
            if kind == "artifact_update":
                update = event.artifact_update
                chunk = "".join(part.text for part in update.artifact.parts)
                if update.append:  # a delta: the first chunk opens the artifact, the rest append
                    text += chunk
                else:  # the first chunk, or the last one: the whole text, which replaces the artifact
                    assert not text or (update.last_chunk and chunk == text), (text, update)
                    text = chunk
                seen.append(text)
            elif kind == "status_update":
                states.append(event.status_update.status.state)
        assert len(seen) >= 5, seen
        assert all(later.startswith(earlier) and len(later) >= len(earlier) for earlier, later in zip(seen, seen[1:]))
        assert "one two three four five" in text
        assert states[-1] == TaskState.TASK_STATE_COMPLETED

        task_id = ""
        deltas = 0
        cancelled = None
        last = None
        async for event in streaming.send_message(request("/slow /long 400")):
            kind = event.WhichOneof("payload")
            if kind == "task":
                task_id = event.task.id
            elif kind == "artifact_update":
                deltas += 1
                if cancelled is None:
                    cancelled = await streaming.cancel_task(CancelTaskRequest(id=task_id))
            elif kind == "status_update":
                last = event.status_update.status.state
        assert cancelled is not None and cancelled.status.state == TaskState.TASK_STATE_CANCELED
        assert last == TaskState.TASK_STATE_CANCELED
        assert 0 < deltas < 400  # stopped part way
        assert (await streaming.get_task(GetTaskRequest(id=task_id))).status.state == TaskState.TASK_STATE_CANCELED

    # the backend itself stopped: the worker's run-finished hook saw the run end cancelled
    await await_for(
        lambda: any(o["message"] == "/slow /long 400" for o in outcomes(worker)), "the cancelled run's outcome", 20
    )
    ended = [o for o in outcomes(worker) if o["message"] == "/slow /long 400"]
    assert [o["stop_reason"] for o in ended] == ["cancelled"], ended


async def test_sigterm_mid_stream_cancels_the_run_and_exits_cleanly(node_cluster):
    worker = node_cluster.worker("a2a")
    async with a2a_clients(node_cluster.endpoint, SECRET, NAME) as (_, streaming):
        stream = streaming.send_message(request("/slow /long 400"))
        first = await asyncio.wait_for(anext(stream), 20)
        assert first.WhichOneof("payload") == "task"
        # the task exists before its run starts: SIGTERM once the reply is being written
        for _ in range(50):  # bounded: the run streams a delta every 50 ms
            event = await asyncio.wait_for(anext(stream), 20)
            if event.WhichOneof("payload") == "artifact_update":
                break
        else:
            pytest.fail("no reply text arrived before the SIGTERM")
        code = await asyncio.to_thread(worker.stop, signal.SIGTERM, 15)
        await stream.aclose()
    assert code == 0, worker.text()
    assert "onedoor slim: stopped" in worker.text()
    ended = [o for o in outcomes(worker) if o["message"] == "/slow /long 400"]
    assert [o["stop_reason"] for o in ended] == ["cancelled"], (ended, worker.text())


async def test_wrong_secret_is_refused_and_the_worker_keeps_serving(node_cluster):
    """slimrpc's handshake fails (its own retries: about 10 s), and says so."""
    worker = node_cluster.worker("a2a")
    async with a2a_clients(node_cluster.endpoint, "not-the-secret-but-long-enough-0123456789", NAME) as (unary, _):
        with pytest.raises(slim_bindings.RpcError) as refused:
            await asyncio.wait_for(unary.get_task(GetTaskRequest(id="any")), 60)
    assert refused.value.code == slim_bindings.RpcCode.UNAVAILABLE
    assert "handshake failed" in refused.value.message.lower()
    assert worker.popen.poll() is None
    async with a2a_clients(node_cluster.endpoint, SECRET, NAME) as (unary, _):
        events = [event async for event in unary.send_message(request("after the intruder"))]
        assert "You said: after the intruder" in artifact_text(events[0].task)


def test_mls_off_is_refused_at_start(node_cluster):
    worker = node_cluster.worker("a2a", "-o", "mls=false", wait=False)
    assert worker.popen.wait(30) != 0
    assert "always uses MLS" in worker.text()
    assert "Traceback" not in worker.text()


def test_an_asgi_only_door_is_still_a_composition_error(cluster):
    result = subprocess.run(
        cli("serve", "--door", "rest", "--transport", "slim", "-o", f"endpoint={cluster.endpoint}"),
        capture_output=True, text=True, timeout=60, env={**os.environ, "ONEDOOR_SLIM_SECRET": SECRET},
    )
    assert result.returncode != 0
    assert "door 'rest' cannot be served over transport 'slim'" in result.stderr
    assert "'channel' and 'rpc'" in result.stderr and "it can use: http" in result.stderr
    assert "Traceback" not in result.stderr


def _strace_works() -> bool:
    if shutil.which("strace") is None:
        return False
    return subprocess.run(["strace", "-o", "/dev/null", "true"], capture_output=True).returncode == 0


@pytest.mark.skipif(not _strace_works(), reason="needs strace with ptrace allowed (apt-get install -y strace)")
async def test_node_relays_no_plaintext(cluster):
    """The node under strace: the slimrpc method path (metadata) shows in its writes, so the
    capture works, but neither the prompt nor the reply does: MLS protects the payloads."""
    trace = cluster.root / "node.strace"
    cluster.start_node(
        wrapper=["strace", "-f", "-qq", "-s", "1000000", "-e", "trace=write,writev,sendmsg,sendto,sendmmsg", "-o", str(trace)]
    )
    cluster.worker("a2a")
    secret_text = f"TOP-SECRET-{uuid.uuid4().hex}"
    async with a2a_clients(cluster.endpoint, SECRET, NAME) as (unary, _):
        events = [event async for event in unary.send_message(request(secret_text))]
        assert secret_text in artifact_text(events[0].task)  # the reply repeats it
    await await_for(lambda: "SendMessage" in trace.read_text(errors="replace"), "the method path in the strace", 20)
    assert secret_text not in trace.read_text(errors="replace")
