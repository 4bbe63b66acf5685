"""The shared SSE layer (onedoor_transport_http.sse.EventStream), driven as ASGI in process:
coalesced and per-frame writes, keep-alives, the one ending, a failing encoder, a stream
cut short, a client that goes away."""

from __future__ import annotations

import asyncio
from typing import Any

from onedoor.events import TYPE_NAMES, RunFailed, RunFinished, TextDelta, event_to_dict
from onedoor.testing import scripted_kernel
from onedoor.wire import encode_json
from onedoor_test_support import parse_sse
from onedoor_transport_http.sse import KEEPALIVE, SSE_HEADERS, EventStream


def encode(event: Any) -> bytes:
    return b"event: " + TYPE_NAMES[type(event)].encode() + b"\ndata: " + encode_json(event_to_dict(event)) + b"\n\n"


class Client:
    """ASGI receive/send that records the response; ``leave()`` sends http.disconnect."""

    def __init__(self) -> None:
        self.sent: list[dict] = []
        self.gone = asyncio.Event()

    async def receive(self) -> dict:
        await self.gone.wait()
        return {"type": "http.disconnect"}

    async def send(self, message: dict) -> None:
        self.sent.append(message)

    def leave(self) -> None:
        self.gone.set()

    @property
    def bodies(self) -> list[bytes]:
        return [m["body"] for m in self.sent if m["type"] == "http.response.body"]

    @property
    def text(self) -> str:
        return b"".join(self.bodies).decode()


async def stream(run: Any, client: Client, **options: Any) -> None:
    await EventStream(run, options.pop("encode", encode), **options)({"type": "http"}, client.receive, client.send)


async def test_headers_framing_and_one_ending():
    client = Client()
    await stream(scripted_kernel().run("hello there"), client)
    assert client.sent[0] == {"type": "http.response.start", "status": 200, "headers": SSE_HEADERS}
    assert client.sent[-1]["more_body"] is False and all(m["more_body"] for m in client.sent[1:-1])
    names = [f.event for f in parse_sse(client.text)]
    assert names[0] == "run_started" and names[-1] == "run_finished" and names.count("run_finished") == 1


async def test_ready_frames_leave_together_or_one_by_one():
    together, apart = Client(), Client()
    await stream(scripted_kernel(reasoning=False, tool=False).run("/long 300 go"), together)
    await stream(scripted_kernel(reasoning=False, tool=False).run("/long 300 go"), apart, coalesce=False)
    # the same events either way (run ids differ)
    assert [f.data for f in parse_sse(together.text)][1:-1] == [f.data for f in parse_sse(apart.text)][1:-1]
    frames = len(parse_sse(apart.text))
    assert len([b for b in apart.bodies if b]) == frames  # one write per frame
    assert len(together.bodies) < frames / 4  # a fast backend's frames are coalesced


async def test_keepalive_during_silence_and_disconnect_cancels():
    client = Client()
    kernel = scripted_kernel()
    task = asyncio.ensure_future(stream(kernel.run("/hang"), client, keepalive=0.05))
    for _ in range(200):
        if KEEPALIVE in client.bodies:
            break
        await asyncio.sleep(0.02)
    assert KEEPALIVE in client.bodies
    client.leave()
    await asyncio.wait_for(task, 10)
    last = parse_sse(client.text)[-1]
    assert last.event == "run_finished" and last.data["stop_reason"] == "cancelled"
    assert kernel.active_runs == 0


async def test_a_failing_encoder_still_ends_the_stream():
    client = Client()

    def flaky(event: Any) -> bytes:
        if type(event) is TextDelta and "there" in event.text:
            raise RuntimeError("encoder bug")
        return encode(event)

    await stream(scripted_kernel().run("hello there"), client, encode=flaky)
    last = parse_sse(client.text)[-1]
    assert last.event == "run_failed" and "RuntimeError: encoder bug" in last.data["error"]
    assert client.sent[-1]["more_body"] is False


async def test_the_doors_own_closing_frames():
    client = Client()
    seen: list[str | None] = []

    def close(error: str | None) -> bytes:
        seen.append(error)
        return b"data: closing\n\n"

    await stream(scripted_kernel().run("hi"), client, close=close)
    assert seen == [None] and client.text.endswith("data: closing\n\n")


async def test_cut_short_by_its_task_it_still_ends_with_the_outcome():
    client = Client()
    kernel = scripted_kernel(delay=0.01)
    task = asyncio.ensure_future(stream(kernel.run("/long 1000 go"), client))
    for _ in range(500):
        if b"text_delta" in b"".join(client.bodies):
            break
        await asyncio.sleep(0.01)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    assert client.sent[-1]["more_body"] is False
    frames = parse_sse(client.text)
    assert frames[-1].event == "run_finished" and frames[-1].data["stop_reason"] == "cancelled"
    assert kernel.active_runs == 0


async def test_terminal_event_is_not_repeated():
    client = Client()
    run = scripted_kernel().run("/fail now")
    await stream(run, client)
    names = [f.event for f in parse_sse(client.text)]
    assert names[-1] == "run_failed" and names.count("run_failed") == 1
    assert isinstance(run.outcome, RunFailed) and not isinstance(run.outcome, RunFinished)
