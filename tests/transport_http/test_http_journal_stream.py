"""A journaled run as SSE (onedoor_transport_http.journal_stream), driven as ASGI in process:
the pushed response carries every event once and in order with its cursor, a slow client
loses nothing, a failing encoder ends only its own response, a client going away does what
the run's ``on_disconnect`` says."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from onedoor.events import STOP_CANCELLED, RunFinished, TextDelta
from onedoor.testing import scripted_kernel
from onedoor_test_support import await_for, parse_sse
from onedoor_transport_http import journal_stream
from onedoor_transport_http.journal_stream import JournalEventStream, JournalSource, event_stream
from onedoor_transport_http.sse import EventStream


def encoder(journal: Any) -> Any:
    def encode(pair: tuple[int, Any]) -> bytes:
        seq, event = pair
        return f"id: {journal.cursor(seq)}\nevent: {type(event).__name__}\ndata: {seq}\n\n".encode()

    return encode


class Client:
    def __init__(self, hold: asyncio.Event | None = None) -> None:
        self.sent: list[dict] = []
        self.gone = asyncio.Event()
        self.hold = hold  # while unset, every write waits (a slow reader)

    async def receive(self) -> dict:
        await self.gone.wait()
        return {"type": "http.disconnect"}

    async def send(self, message: dict) -> None:
        if self.hold is not None:
            await self.hold.wait()
        self.sent.append(message)

    @property
    def frames(self) -> list[Any]:
        return parse_sse(b"".join(m.get("body", b"") for m in self.sent if m["type"] == "http.response.body").decode())


async def respond(source: JournalSource, client: Client, encode: Any, **options: Any) -> None:
    options.setdefault("close", lambda error: b"")  # what a door ends a response with when the run did not
    await event_stream(source, encode, **options)({"type": "http"}, client.receive, client.send)


def test_a_journal_source_gets_the_pushed_stream_and_anything_else_the_plain_one():
    kernel = scripted_kernel()

    async def go() -> None:
        run = kernel.run("hi")
        journal = kernel.journals.start(run)
        source = JournalSource(journal)
        assert type(event_stream(source, encoder(journal))) is JournalEventStream and source.pushes
        assert type(event_stream(kernel.run("hi"), encoder(journal))) is EventStream
        await asyncio.gather(*[t for t in [journal.task] if t is not None])

    asyncio.run(go())


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_every_event_once_in_order_with_its_cursor(mode):
    kernel = scripted_kernel(mode=mode, delay=0.001, reasoning=False)
    journal = kernel.journals.start(kernel.run("/long 50"), on_disconnect="finish")
    client = Client()
    follower = asyncio.ensure_future(_follow(journal))
    await respond(JournalSource(journal, after=journal.last_seq), client, encoder(journal))
    frames = client.frames
    assert [f.id for f in frames] == [journal.cursor(n) for n in range(1, journal.last_seq + 1)]
    assert [f.data for f in frames] == [seq for seq, _ in await follower]
    assert frames[-1].event == "RunFinished" and client.sent[-1]["more_body"] is False


async def _follow(journal: Any) -> list[tuple[int, Any]]:
    return [pair async for pair in journal.follow(0)]


async def test_a_slow_client_gets_everything_in_order(monkeypatch):
    monkeypatch.setattr(journal_stream, "MAX_PENDING", 4)  # frames queued before the reader waits for the writer
    kernel = scripted_kernel(delay=0.0, reasoning=False)
    journal = kernel.journals.start(kernel.run("/long 120"), on_disconnect="finish")
    hold = asyncio.Event()
    client = Client(hold)
    response = asyncio.ensure_future(respond(JournalSource(journal), client, encoder(journal), coalesce=False))
    await await_for(lambda: journal.done, "the run to end while its client is stuck")
    hold.set()
    await response
    assert [f.data for f in client.frames] == list(range(1, journal.last_seq + 1))


async def test_a_failing_encoder_ends_its_response_and_the_run_goes_on_for_others():
    kernel = scripted_kernel(delay=0.002, reasoning=False)
    journal = kernel.journals.start(kernel.run("/long 40"), on_disconnect="finish")
    others = asyncio.ensure_future(_follow(journal))
    good = encoder(journal)

    def encode(pair: tuple[int, Any]) -> bytes:
        if pair[0] == 6:
            raise RuntimeError("boom")
        return good(pair)

    client = Client()
    await respond(JournalSource(journal), client, encode, close=lambda error: b"event: end\ndata: " + json.dumps(error).encode() + b"\n\n")
    frames = client.frames
    assert [f.data for f in frames[:-1]] == list(range(1, 6))
    assert frames[-1].event == "end" and "RuntimeError: boom" in frames[-1].data
    whole = await others
    assert isinstance(whole[-1][1], RunFinished) and whole[-1][1].stop_reason != STOP_CANCELLED


@pytest.mark.parametrize("on_disconnect", ["cancel", "finish"])
async def test_a_client_going_away_does_what_the_run_says(on_disconnect):
    kernel = scripted_kernel(delay=0.01, reasoning=False)
    journal = kernel.journals.start(kernel.run("/long 100"), on_disconnect=on_disconnect)
    client = Client()
    response = asyncio.ensure_future(respond(JournalSource(journal), client, encoder(journal)))
    await await_for(lambda: sum(type(e) is TextDelta for e in journal.events_after(0)) >= 3, "some text")
    client.gone.set()
    await response
    await await_for(lambda: journal.done, "the run to end")
    ending = journal.events_after(journal.last_seq - 1)[-1]
    assert isinstance(ending, RunFinished)
    assert (ending.stop_reason == STOP_CANCELLED) == (on_disconnect == "cancel")
    assert kernel.active_runs == 0
