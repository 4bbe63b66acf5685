"""JSON errors for every HTTP door: one body shape, and one table for each kind of refusal.

Every error the transport or a door answers is ``{"error": code, "detail": message}``
with ``Content-Type: application/json``: a short machine-readable code and one line for a
person. The kernel's refusals map the same way on every door (REST, AG-UI, A2A), through
:func:`refusal`:

========================  ===================  ======  ===================  =================
raised                    reason               status  error                headers
========================  ===================  ======  ===================  =================
RunRefused                busy                 429     busy                 ``Retry-After``
RunRefused                too_large            413     too_large
RunRefused                invalid              422     invalid_request
RunRefused                in_use               409     run_in_use
RunRefused                not_found            404     unknown_thread
RunRefused                pending_questions    409     pending_questions
ThreadError               not_found            404     unknown_thread
ThreadError               conflict             409     conflict
ThreadError               taken                409     thread_taken
ThreadError               too_large            413     thread_too_large
ThreadError               invalid              422     invalid_request
ThreadError               no_threads           501     no_threads
StoreUnavailable          unavailable          503     store_unavailable    ``Retry-After``
QuestionError             unknown              404     unknown_question
QuestionError             expired              410     question_expired
QuestionError             answered             409     already_answered
QuestionError             invalid              422     invalid_answer
CursorError               invalid              422     invalid_request
CursorError               expired              409     cursor_expired
========================  ===================  ======  ===================  =================

Plain ASGI (no Starlette): a door calls :func:`send_error` or :func:`send_refusal` with
the ASGI ``send``; a framework door wraps :func:`error_body` (or :func:`refusal`) in its
own response.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Iterable, MutableMapping

from onedoor import CursorError, QuestionError, RunRefused, ThreadError
from onedoor.wire import encode_json

Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
Headers = Iterable[tuple[bytes, bytes]]

# reason -> (HTTP status, error code), per kind of refusal
REFUSALS: dict[str, tuple[int, str]] = {
    "busy": (429, "busy"),
    "too_large": (413, "too_large"),
    "invalid": (422, "invalid_request"),
    "in_use": (409, "run_in_use"),
    "not_found": (404, "unknown_thread"),
    "pending_questions": (409, "pending_questions"),
    "unsupported_content": (415, "unsupported_content"),
    "state_conflict": (409, "state_conflict"),
    "draining": (503, "draining"),
}
THREAD_REFUSALS: dict[str, tuple[int, str]] = {
    "not_found": (404, "unknown_thread"),
    "conflict": (409, "conflict"),
    "taken": (409, "thread_taken"),
    "too_large": (413, "thread_too_large"),
    "invalid": (422, "invalid_request"),
    "no_threads": (501, "no_threads"),
    "no_state": (501, "no_state"),
    "stale": (412, "state_changed"),
    "unavailable": (503, "store_unavailable"),
}
QUESTION_REFUSALS: dict[str, tuple[int, str]] = {
    "unknown": (404, "unknown_question"),
    "expired": (410, "question_expired"),
    "answered": (409, "already_answered"),
    "invalid": (422, "invalid_answer"),
}
CURSOR_REFUSALS: dict[str, tuple[int, str]] = {
    "invalid": (422, "invalid_request"),
    "expired": (409, "cursor_expired"),
}
UNKNOWN_RUN = (404, "unknown_run")  # a run id with no run of the caller's (unknown, another's, or forgotten)

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
    501: "not_implemented",
    503: "unavailable",
}


@dataclass(frozen=True)
class Refusal:
    """One refusal as every HTTP door answers it."""

    status: int
    code: str
    detail: str
    headers: tuple[tuple[bytes, bytes], ...] = ()

    def __iter__(self) -> Any:  # status, code, detail, headers = refusal(exc)
        return iter((self.status, self.code, self.detail, list(self.headers)))

    @property
    def header_dict(self) -> dict[str, str]:
        return {k.decode(): v.decode() for k, v in self.headers}


def _retry_after(seconds: float | None) -> tuple[tuple[bytes, bytes], ...]:
    return ((b"retry-after", str(max(1, math.ceil(seconds or 1))).encode()),)


def refusal(exc: Exception) -> Refusal:
    """The status, code, detail and headers of a kernel refusal (RunRefused, ThreadError,
    QuestionError, CursorError); anything else is a 422 ``invalid_request``."""
    detail = str(exc)
    if isinstance(exc, RunRefused):
        status, code = REFUSALS.get(exc.reason, (422, "invalid_request"))
        headers = _retry_after(exc.retry_after) if exc.retry_after is not None else ()
        return Refusal(status, code, detail, headers)
    if isinstance(exc, ThreadError):
        status, code = THREAD_REFUSALS.get(exc.reason, (422, "invalid_request"))
        if exc.reason == "unavailable":
            return Refusal(status, code, f"the thread store cannot be reached now ({exc}); try again", _retry_after(1))
        return Refusal(status, code, detail)
    if isinstance(exc, QuestionError):
        status, code = QUESTION_REFUSALS.get(exc.reason, (422, "invalid_answer"))
        return Refusal(status, code, detail)
    if isinstance(exc, CursorError):
        status, code = CURSOR_REFUSALS.get(exc.reason, (422, "invalid_request"))
        return Refusal(status, code, detail)
    return Refusal(422, "invalid_request", detail)


REFUSED = (RunRefused, ThreadError, QuestionError, CursorError)  # what refusal() maps


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


async def send_refusal(send: Send, exc: Exception) -> None:
    """Answer a kernel refusal (any kind :func:`refusal` maps)."""
    answer = refusal(exc)
    await send_error(send, answer.status, answer.code, answer.detail, answer.headers)


__all__ = [
    "CURSOR_REFUSALS", "QUESTION_REFUSALS", "REFUSALS", "REFUSED", "STATUS_CODES", "THREAD_REFUSALS", "UNKNOWN_RUN",
    "Refusal", "error_body", "refusal", "send_error", "send_json", "send_refusal",
]
