"""Streaming really streams, and a client that goes away cancels its run for real.

These run the REST door on the HTTP transport's app with uvicorn in a thread
(ThreadedServer, 127.0.0.1, a free port), so the test can look inside the kernel:
``kernel.active_runs``, ``kernel.worker_threads()`` and the lifecycle hooks.
"""

from __future__ import annotations

import asyncio
import threading

import httpx
import pytest
from onedoor.events import STOP_CANCELLED, RunFinished, RunStarted, TextDelta
from onedoor.kernel import Limits
from onedoor.testing import kernel_for_agent, scripted_kernel
from onedoor_test_support import Recorder, await_for, wait_for
from rest_helpers import parse_sse, rest_server

MODES = ["sync", "async"]


class GatedSync:
    """Sends one delta, then waits for the test to open the gate."""

    def __init__(self, gate: threading.Event) -> None:
        self.gate = gate

    def run(self, message, *, history=None, context=None):
        yield RunStarted(context.run_id)
        yield TextDelta("first ")
        if not self.gate.wait(30):
            raise RuntimeError("the test never opened the gate")
        yield TextDelta("second")
        yield RunFinished(context.run_id, "first second")


class GatedAsync(GatedSync):
    async def run(self, message, *, history=None, context=None):
        yield RunStarted(context.run_id)
        yield TextDelta("first ")
        for _ in range(3000):
            if self.gate.is_set():
                break
            await asyncio.sleep(0.01)
        else:
            raise RuntimeError("the test never opened the gate")
        yield TextDelta("second")
        yield RunFinished(context.run_id, "first second")


class Endless:
    """Sync agent that streams until told to stop; records that it was told."""

    told: list[str] = []

    def __init__(self) -> None:
        self.stop = threading.Event()

    def cancel(self) -> None:
        Endless.told.append("cancel")
        self.stop.set()

    def run(self, message, *, history=None, context=None):
        yield RunStarted(context.run_id)
        for index in range(100_000):
            yield TextDelta(f"{index} ")
            if self.stop.wait(0.02):
                return


class EndlessAsync:
    told: list[str] = []

    async def run(self, message, *, history=None, context=None):
        yield RunStarted(context.run_id)
        try:
            for index in range(100_000):
                yield TextDelta(f"{index} ")
                await asyncio.sleep(0.02)
        except asyncio.CancelledError:
            EndlessAsync.told.append("cancelled")
            raise


def with_recorder(kernel):
    kernel.hooks = Recorder()
    return kernel


def read_until_event(chunks, name: str) -> str:
    """Read an SSE stream's text iterator up to event ``name``. The caller keeps the
    iterator: dropping it mid-stream would close the connection."""
    seen = ""
    for chunk in chunks:
        seen += chunk
        if f"event: {name}\n" in seen:
            return seen
    raise AssertionError(f"stream ended before {name}: {seen!r}")


@pytest.mark.parametrize("agent", [GatedSync, GatedAsync], ids=MODES)
def test_first_event_arrives_while_the_backend_is_still_running(agent):
    gate = threading.Event()
    kernel = with_recorder(kernel_for_agent(lambda: agent(gate)))
    with rest_server(kernel) as server, httpx.Client(base_url=server.base_url, timeout=30) as client:
        with client.stream("POST", "/rest/chat/stream", json={"message": "hi"}) as r:
            chunks = r.iter_text()
            seen = ""
            for chunk in chunks:
                seen += chunk
                if "event: text_delta\n" in seen and seen.endswith("\n\n"):
                    break
            # the backend is blocked on the gate: it cannot have finished
            assert not gate.is_set()
            assert kernel.hooks.finished == {} and kernel.active_runs == 1
            assert "run_finished" not in seen
            gate.set()
            seen += "".join(chunks)
        events, _ = parse_sse(seen)
        assert [n for n, _ in events] == ["run_started", "text_delta", "text_delta", "run_finished"]
        assert events[-1][1]["text"] == "first second"


def test_paced_run_streams_before_it_ends(served):
    from rest_helpers import TOKEN

    with httpx.Client(base_url=served.base_url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30) as client:
        with client.stream("POST", "/rest/chat/stream", json={"message": "/slow /long 40 paced"}) as r:
            chunks = r.iter_text()
            first = next(chunks)
            assert "event: run_started" in first and "run_finished" not in first
            rest = "".join(chunks)
    events, _ = parse_sse(first + rest)
    assert sum(1 for n, _ in events if n == "text_delta") == 40 and events[-1][0] == "run_finished"


@pytest.mark.parametrize("agent", [Endless, EndlessAsync], ids=MODES)
def test_client_disconnect_cancels_the_run(agent):
    agent.told.clear()
    kernel = with_recorder(kernel_for_agent(agent))
    with rest_server(kernel) as server, httpx.Client(base_url=server.base_url, timeout=30) as client:
        with client.stream("POST", "/rest/chat/stream", json={"message": "go on forever"}) as r:
            chunks = r.iter_text()
            read_until_event(chunks, "text_delta")
            assert kernel.active_runs == 1 and kernel.hooks.finished == {}
        # the client has gone: the backend is told, its worker ends, the run is cancelled
        wait_for(lambda: kernel.active_runs == 0 and not kernel.worker_threads(), "the run and its worker to end")
        wait_for(lambda: len(kernel.hooks.finished) == 1, "the finished hook")
        outcome = list(kernel.hooks.finished.values())[0]
        assert isinstance(outcome, RunFinished) and outcome.stop_reason == STOP_CANCELLED
        assert agent.told == ["cancel"] if agent is Endless else agent.told == ["cancelled"]


@pytest.mark.parametrize("mode", MODES)
def test_client_disconnect_on_chat_cancels_the_run(mode):
    kernel = with_recorder(scripted_kernel(mode=mode))
    with rest_server(kernel) as server:
        with pytest.raises(httpx.ReadTimeout):
            httpx.post(server.base_url + "/rest/chat", json={"message": "/hang wait"}, timeout=httpx.Timeout(10, read=0.5))
        wait_for(lambda: kernel.active_runs == 0 and not kernel.worker_threads(), "the run and its worker to end")
        wait_for(lambda: len(kernel.hooks.finished) == 1, "the finished hook")
        assert list(kernel.hooks.finished.values())[0].stop_reason == STOP_CANCELLED


@pytest.mark.parametrize("mode", MODES)
async def test_hundred_clients_disconnect_mid_run(mode):
    clients = 100
    kernel = with_recorder(scripted_kernel(Limits(max_concurrent_runs=clients + 10), mode=mode, delay=0.05, deltas=2000))
    with rest_server(kernel) as server:
        tasks_before = server.call(lambda: len(asyncio.all_tasks(server.loop)))
        limits = httpx.Limits(max_connections=clients, max_keepalive_connections=0)
        async with httpx.AsyncClient(base_url=server.base_url, timeout=60, limits=limits) as client:

            async def one(index: int) -> str:
                async with client.stream("POST", "/rest/chat/stream", json={"message": f"client {index}"}) as r:
                    seen = ""
                    async for chunk in r.aiter_text():
                        seen += chunk
                        if "event: text_delta\n" in seen:
                            return seen
                return seen

            seen = await asyncio.gather(*(one(i) for i in range(clients)))
        assert all("event: text_delta\n" in s and "run_finished" not in s for s in seen)
        # every run ends cancelled; no worker thread, run or task is left behind
        await await_for(lambda: len(kernel.hooks.finished) == clients, f"{clients} finished hooks")
        await await_for(lambda: kernel.active_runs == 0 and not kernel.worker_threads(), "every run and worker to end")
        outcomes = list(kernel.hooks.finished.values())
        assert all(isinstance(o, RunFinished) and o.stop_reason == STOP_CANCELLED for o in outcomes)
        assert len({o.run_id for o in outcomes}) == clients
        await await_for(lambda: server.call(lambda: len(asyncio.all_tasks(server.loop))) <= tasks_before,
                        "the server's tasks to go back to their number before the clients came")
