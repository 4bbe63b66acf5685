"""The REST door's Server-Sent Events: one core event per SSE event.

Each event is ``event: <type>\\ndata: <JSON of onedoor.events.event_to_dict>\\n\\n``. This
module only encodes; the HTTP transport's :class:`onedoor_transport_http.sse.EventStream`
streams (coalescing, keep-alives, disconnect = cancel, one ending per stream).
"""

from __future__ import annotations

from typing import Any

from onedoor import encode_json
from onedoor.events import TYPE_NAMES, QuestionAsked, TextDelta, event_to_dict
from onedoor_transport_http.sse import SSE_HEADERS, EventStream, cancel_on_disconnect
from starlette.responses import Response

to_json_bytes = encode_json  # the name this module exported before onedoor.wire

_TEXT_HEAD = b'event: text_delta\ndata: {"type":"text_delta","text":'


def encode_event(event: Any) -> bytes:
    """One SSE event for one core event."""
    if type(event) is TextDelta:  # the hot path: same bytes as the general case
        return _TEXT_HEAD + encode_json(event.text) + b"}\n\n"
    kind = TYPE_NAMES[type(event)].encode()
    return b"event: " + kind + b"\ndata: " + encode_json(event_to_dict(event)) + b"\n\n"


def response_encoder(run: Any, ledger: Any) -> Any:
    """:func:`encode_event` for one response of ``run`` (an :class:`asking.ResponseRun`):
    a ``question_asked`` event also marks the run as parked and goes in ``ledger``."""

    def encode(event: Any) -> bytes:
        kind = type(event)
        if kind is TextDelta:
            return _TEXT_HEAD + encode_json(event.text) + b"}\n\n"
        if kind is QuestionAsked:
            run.asked = True
            ledger.note(event.question)
        return b"event: " + TYPE_NAMES[kind].encode() + b"\ndata: " + encode_json(event_to_dict(event)) + b"\n\n"

    return encode


class EventStreamResponse(Response):
    """Streams one run as SSE. ``media_type`` also tells FastAPI's OpenAPI docs."""

    media_type = "text/event-stream"

    def __init__(self, run: Any = None, keepalive: float = 15.0, encode: Any = None, close: Any = None) -> None:
        self.stream = EventStream(run, encode or encode_event, keepalive=keepalive, close=close)
        self.status_code = 200
        self.background = None
        self.raw_headers = list(SSE_HEADERS)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        await self.stream(scope, receive, send)


__all__ = [
    "SSE_HEADERS", "EventStreamResponse", "cancel_on_disconnect", "encode_event", "response_encoder", "to_json_bytes",
]
