"""Server-Sent Events for a run: one core event per SSE event, ``\\n\\n`` framing.

Each event is ``event: <type>\\ndata: <JSON of onedoor.events.event_to_dict>\\n\\n``.
The response is plain ASGI: a pump task reads the run and appends encoded events to a
buffer; the response task sends whatever has piled up as one body chunk, so a fast
backend costs one ``send`` per batch, not per event. A silence longer than
``keepalive`` seconds sends a ``: keep-alive`` comment. When the client goes away
(``http.disconnect``) the run is cancelled, which tells the backend and ends its worker.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any, Awaitable, Callable

from onedoor.events import TYPE_NAMES, TextDelta, event_to_dict
from starlette.responses import Response

log = logging.getLogger("onedoor.door.rest")
KEEPALIVE = b": keep-alive\n\n"
MAX_PENDING = 512  # encoded events buffered before the pump waits for the socket
SSE_HEADERS = [
    (b"content-type", b"text/event-stream; charset=utf-8"),
    (b"cache-control", b"no-cache"),
    (b"x-accel-buffering", b"no"),
]

_TEXT_HEAD = b'event: text_delta\ndata: {"type":"text_delta","text":'
_dumps_utf8 = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=str).encode
_dumps_ascii = json.JSONEncoder(ensure_ascii=True, separators=(",", ":"), default=str).encode


def to_json_bytes(value: Any) -> bytes:
    """Compact JSON as UTF-8; text with lone surrogates falls back to \\u escapes."""
    try:
        return _dumps_utf8(value).encode("utf-8")
    except UnicodeEncodeError:
        return _dumps_ascii(value).encode("ascii")


def encode_event(event: Any) -> bytes:
    """One SSE event for one core event."""
    if type(event) is TextDelta:  # the hot path: same bytes as the general case
        return _TEXT_HEAD + to_json_bytes(event.text) + b"}\n\n"
    kind = TYPE_NAMES[type(event)].encode()
    return b"event: " + kind + b"\ndata: " + to_json_bytes(event_to_dict(event)) + b"\n\n"


async def cancel_on_disconnect(receive: Callable[[], Awaitable[dict]], run: Any) -> None:
    """Wait for the client to go away, then cancel the run."""
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            run.cancel()
            return


class EventStreamResponse(Response):
    """Streams one run as SSE. ``media_type`` also tells FastAPI's OpenAPI docs."""

    media_type = "text/event-stream"

    def __init__(self, run: Any = None, keepalive: float = 15.0) -> None:
        self.run = run
        self.keepalive = keepalive
        self.status_code = 200
        self.background = None
        self.raw_headers = list(SSE_HEADERS)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        run = self.run
        loop = asyncio.get_running_loop()
        pending: list[bytes] = []
        waiter: list[asyncio.Future | None] = [None]  # the sender waits here for events
        space: list[asyncio.Future | None] = [None]  # the pump waits here for room
        finished = [False]
        closing = [False]  # the sender has stopped: the pump must not wait for room

        def wake() -> None:
            fut = waiter[0]
            if fut is not None:
                waiter[0] = None
                if not fut.done():
                    fut.set_result(None)

        async def pump() -> None:
            try:
                async with run:
                    async for event in run:
                        pending.append(encode_event(event))
                        if waiter[0] is not None:
                            wake()
                        if len(pending) >= MAX_PENDING and not closing[0]:
                            space[0] = loop.create_future()
                            await space[0]
            finally:
                finished[0] = True
                wake()

        await send({"type": "http.response.start", "status": 200, "headers": self.raw_headers})
        pump_task = loop.create_task(pump())
        watch_task = loop.create_task(cancel_on_disconnect(receive, run))
        try:
            while True:
                if pending:
                    data = b"".join(pending)
                    pending.clear()
                    room = space[0]
                    if room is not None:
                        space[0] = None
                        if not room.done():
                            room.set_result(None)
                    await send({"type": "http.response.body", "body": data, "more_body": True})
                    continue
                if finished[0]:
                    break
                fut = waiter[0] = loop.create_future()
                try:
                    await asyncio.wait_for(fut, self.keepalive)
                except TimeoutError:
                    waiter[0] = None
                    await send({"type": "http.response.body", "body": KEEPALIVE, "more_body": True})
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            closing[0] = True
            watch_task.cancel()
            if not pump_task.done():
                run.cancel()
                room = space[0]
                if room is not None and not room.done():
                    room.set_result(None)
            results = await asyncio.gather(pump_task, watch_task, return_exceptions=True)
            if isinstance(results[0], Exception):
                log.error("SSE stream of run %s failed: %r", getattr(run, "run_id", "?"), results[0])
        if self.background is not None:
            await self.background()
