"""Request bodies at the guard: which media types are JSON, the size cap, decoding JSON once, replaying the bytes.

A JSON body is decoded here, once, under :func:`onedoor.wire.decode_json`: the value is
in ``scope["onedoor.json"]`` (:data:`JSON_BODY`; :func:`read_json` gets it), and the raw
bytes are replayed to the door for frameworks that read them themselves.
"""

from __future__ import annotations

from typing import Any

from onedoor import WireError, decode_json

from .asgi_types import ASGIApp, Message, Receive, Scope, Send
from .errors import send_error

JSON_BODY = "onedoor.json"  # scope key: the request's JSON body, decoded under onedoor.wire


class _TooLarge(Exception):
    pass


def is_json(media_type: str) -> bool:
    return media_type == "application/json" or (media_type.startswith("application/") and media_type.endswith("+json"))


def has_body(headers: dict[bytes, bytes]) -> bool:
    """Whether the headers announce a body (chunked, or a Content-Length other than 0)."""
    declared = headers.get(b"content-length", b"").strip()
    return b"chunked" in headers.get(b"transfer-encoding", b"").lower() or (declared not in (b"", b"0"))


async def _receive_all(receive: Receive, limit: int | None = None) -> bytes | None:
    """The whole body, or None if the client went away first; :class:`_TooLarge` past ``limit`` bytes."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        chunk = message.get("body", b"")
        size += len(chunk)
        if limit is not None and size > limit:
            raise _TooLarge
        chunks.append(chunk)
        if not message.get("more_body", False):
            break
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


async def read_json(scope: Scope, receive: Receive) -> Any:
    """The request's JSON body: decoded by the guard, or read and decoded here (an app
    served without the transport). Raises :class:`onedoor.wire.WireError`; returns
    ``...`` (Ellipsis) if the client went away before the body arrived."""
    if JSON_BODY in scope:
        return scope[JSON_BODY]
    body = await _receive_all(receive)
    return ... if body is None else decode_json(body)


async def with_body(app: ASGIApp, scope: Scope, receive: Receive, send: Send, headers: dict[bytes, bytes], *,
                    max_body: int, decode: bool) -> None:
    """Read the body (at most ``max_body`` bytes), decode it if it is JSON, then call ``app``
    with the bytes replayed."""
    too_large = f"request body over {max_body} bytes"
    declared = headers.get(b"content-length")
    if declared is not None:
        try:
            size = int(declared)
        except ValueError:
            await send_error(send, 400, "bad_request", "malformed Content-Length")
            return
        if size > max_body:
            await send_error(send, 413, "too_large", too_large)
            return
    try:
        body = await _receive_all(receive, max_body)
    except _TooLarge:
        await send_error(send, 413, "too_large", too_large)
        return
    if body is None:
        return
    if decode and body:
        try:
            scope[JSON_BODY] = decode_json(body)
        except WireError as exc:
            await send_error(send, 400, "bad_json", f"the request body is refused: {exc}")
            return
    replayed = False

    async def replay() -> Message:
        nonlocal replayed, body
        if not replayed:
            replayed, given, body = True, body, b""  # held by whoever reads it now, not here too
            return {"type": "http.request", "body": given, "more_body": False}
        return await receive()

    await app(scope, replay, send)


__all__ = ["JSON_BODY", "has_body", "is_json", "read_json", "with_body"]
