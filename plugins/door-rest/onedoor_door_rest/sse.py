"""The REST door's encoder: one core event per Server-Sent Event.

Each event is ``id: <cursor>`` (when it comes from the run's journal), ``event: <type>``
and ``data: <JSON of onedoor.event_to_dict>``, ending ``\\n\\n``. Streaming itself
(coalescing, keep-alives, disconnects, one ending per stream) is the HTTP transport's
:func:`~onedoor_transport_http.journal_stream.event_stream`.
"""

from __future__ import annotations

from typing import Any

from onedoor import RunFailed, TextDelta, encode_json, event_to_dict
from onedoor.events import TYPE_NAMES
from onedoor_transport_http.journal_stream import event_stream
from onedoor_transport_http.sse import SSE_HEADERS
from starlette.responses import Response

_TEXT = b'event: text_delta\ndata: {"type":"text_delta","text":'


def encode_event(event: Any, cursor: str = "") -> bytes:
    """One SSE event for one core event (``cursor``: its ``id:``, the journal's cursor)."""
    head = b"id: " + cursor.encode() + b"\n" if cursor else b""
    if type(event) is TextDelta:  # the hot path: same bytes as the general case
        return head + _TEXT + encode_json(event.text) + b"}\n\n"
    kind = TYPE_NAMES[type(event)].encode()
    return head + b"event: " + kind + b"\ndata: " + encode_json(event_to_dict(event)) + b"\n\n"


def journal_encoder(journal: Any) -> Any:
    """SSE frames for ``(seq, event)`` pairs of ``journal``, each with its cursor."""
    cursor = journal.cursor

    def encode(pair: tuple[int, Any]) -> bytes:
        return encode_event(pair[1], cursor(pair[0]))

    return encode


def closing(source: Any) -> Any:
    """The frames that end a response whose run's own ending did not come: a run_failed when
    the door failed while encoding, or the reader fell behind what the journal keeps; none
    when the reader was cut short (the client went away, and may come back for the rest)."""

    def close(error: str | None) -> bytes:
        if error is None and source.behind:
            error = f"{source.behind}; the run goes on: read its thread for the reply"
        return b"" if error is None else encode_event(RunFailed(source.run_id, error))

    return close


class EventStreamResponse(Response):
    """Streams one run as SSE. ``media_type`` also tells FastAPI's OpenAPI docs."""

    media_type = "text/event-stream"

    def __init__(self, run: Any = None, keepalive: float = 15.0, encode: Any = None, close: Any = None) -> None:
        self.stream = event_stream(run, encode or encode_event, keepalive=keepalive, close=close)
        self.status_code = 200
        self.background = None
        self.raw_headers = list(SSE_HEADERS)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        await self.stream(scope, receive, send)


__all__ = ["SSE_HEADERS", "EventStreamResponse", "closing", "encode_event", "journal_encoder"]
