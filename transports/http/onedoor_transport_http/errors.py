"""JSON errors for every HTTP door: one body shape, one reply for a kernel refusal.

Every error the transport or a door answers is ``{"error": code, "detail": message}``
with ``Content-Type: application/json``: a short machine-readable code and one line
for a person. A kernel refusal (:class:`onedoor.errors.RunRefused`) maps the same way
on every door:

===========  ======  ===================  ==========================================
reason       status  error                headers
===========  ======  ===================  ==========================================
busy         429     busy                 ``Retry-After`` (whole seconds, at least 1)
too_large    413     too_large
invalid      422     invalid_request
===========  ======  ===================  ==========================================

Plain ASGI (no Starlette): a door calls :func:`send_error` or :func:`send_refusal`
with the ASGI ``send``; a framework door wraps :func:`error_body` in its own response.
"""

from __future__ import annotations

import math
from typing import Any, Awaitable, Callable, Iterable, MutableMapping

from onedoor.errors import RunRefused
from onedoor.wire import encode_json

Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
Headers = Iterable[tuple[bytes, bytes]]

REFUSALS: dict[str, tuple[int, str]] = {
    "busy": (429, "busy"),
    "too_large": (413, "too_large"),
    "invalid": (422, "invalid_request"),
    "not_found": (404, "not_found"),
    "pending_questions": (409, "pending_questions"),
}

# The error code used for a status when nothing more specific is known.
STATUS_CODES: dict[int, str] = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "too_large",
    415: "unsupported_media_type",
    421: "misdirected_request",
    422: "invalid_request",
    429: "busy",
    500: "internal",
}


def error_body(code: str, detail: str) -> bytes:
    """The JSON bytes of one error (safe with any text, lone surrogates included)."""
    return encode_json({"error": code, "detail": detail})


async def send_json(send: Send, status: int, payload: Any, headers: Headers = ()) -> None:
    """A whole JSON response in two ASGI messages."""
    body = encode_json(payload)
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


async def send_error(send: Send, status: int, code: str, detail: str, headers: Headers = ()) -> None:
    await send_json(send, status, {"error": code, "detail": detail}, headers)


def refusal(exc: RunRefused) -> tuple[int, str, str, list[tuple[bytes, bytes]]]:
    """Status, error code, detail and headers for a kernel refusal."""
    status, code = REFUSALS.get(exc.reason, (422, "invalid_request"))
    headers = []
    if exc.reason == "busy":
        headers.append((b"retry-after", str(max(1, math.ceil(exc.retry_after or 1))).encode()))
    return status, code, str(exc), headers


async def send_refusal(send: Send, exc: RunRefused) -> None:
    status, code, detail, headers = refusal(exc)
    await send_error(send, status, code, detail, headers)


__all__ = ["REFUSALS", "STATUS_CODES", "error_body", "refusal", "send_error", "send_json", "send_refusal"]
