"""The REST door's answers: JSON bodies and errors, and how the OpenAPI document
describes them (every error is the HTTP transport's ``{"error": code, "detail": ...}``,
with the one refusal table of :mod:`onedoor_transport_http.errors`)."""

from __future__ import annotations

from typing import Any

from onedoor import encode_json
from onedoor_transport_http.errors import error_body, refusal

from .content_models import UNION_TAGS, PartOut, UsageOut
from .models import ErrorBody


class RequestRefused(Exception):
    """A request the door refuses before it does anything (its body, a header): the app
    answers it with :func:`error_response`."""

    def __init__(self, status: int, code: str, detail: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(detail)
        self.status, self.code, self.detail, self.headers = status, code, detail, headers


def error_response(status: int, code: str, detail: str, headers: dict[str, str] | None = None) -> Any:
    from starlette.responses import Response

    return Response(error_body(code, detail), status_code=status, media_type="application/json", headers=headers)


def json_response(content: Any, status: int = 200) -> Any:
    from starlette.responses import Response

    return Response(encode_json(content), status_code=status, media_type="application/json")


def refusal_response(exc: Exception) -> Any:
    """A kernel refusal (run, thread, question, cursor) as every HTTP door answers it."""
    answer = refusal(exc)
    return error_response(answer.status, answer.code, answer.detail, answer.header_dict or None)


def _where(loc: tuple) -> str:
    parts = [p for p in loc if p != "body"]
    # "text or a list of parts" fields name their union member next: leave it out
    parts = [p for i, p in enumerate(parts) if not (p in UNION_TAGS and i and parts[i - 1] in ("message", "content"))]
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "body"


# what a string that does not match its field's pattern is not
_NOT_A = {
    "thread_id": "not a thread id (1-128 letters, digits or -_.:)", "before": "not a thread id (1-128 letters, "
    "digits or -_.:)", "after": "not a cursor (RUN_ID:EPOCH:SEQ, the id of an event)",
    "Last-Event-ID": "not a cursor (RUN_ID:EPOCH:SEQ, the id of an event)", "data": "not valid base64",
    "media_type": "not a media type (type/subtype, e.g. image/png)", "path": "not a JSON Pointer (empty, or /a/0)",
    "from": "not a JSON Pointer (empty, or /a/0)",
}


def _problem(err: dict) -> tuple[str, str | None]:
    """One validation error as a phrase, and the error code it calls for (None: the default)."""
    kind = err.get("type", "")
    where = _where(tuple(err.get("loc") or ()))
    last = where.split(".")[-1]
    if kind == "extra_forbidden":
        return f"unknown field {where!r}", None
    if kind == "missing":
        return ("the request body is required" if where == "body" else f"{where!r} is required"), None
    if kind == "string_too_short" and where == "message":
        return "the message is empty", None
    if kind == "string_pattern_mismatch" and (last in _NOT_A or where == "message"):
        return (f"{where}: {_NOT_A[last]}" if last in _NOT_A else "the message is empty (only whitespace)"), None
    if kind == "string_too_long" and where == "message":  # the schema's maxLength (the kernel's limit)
        limit = (err.get("ctx") or {}).get("max_length")
        return f"the message is over the limit of {limit} characters", "too_large"
    return f"{where}: {err.get('msg', 'invalid')}", None


def describe_validation(errors: list[dict]) -> tuple[int, str, str]:
    """Status, code and a readable one-line detail for pydantic/FastAPI errors."""
    for err in errors:
        if err.get("type") == "json_invalid":
            reason = (err.get("ctx") or {}).get("error", "JSON decode error")
            loc = err.get("loc") or ()
            at = f" at position {loc[-1]}" if loc and isinstance(loc[-1], int) else ""
            return 400, "bad_json", f"the request body is not valid JSON: {reason}{at}"
    parts = []
    code = "invalid_request"
    for err in errors[:5]:
        phrase, special = _problem(err)
        parts.append(phrase)
        code = special or code
    if len(errors) > 5:
        parts.append(f"and {len(errors) - 5} more")
    return 422, code, "; ".join(parts) or "invalid request"


def _error(description: str) -> dict[str, Any]:
    return {"model": ErrorBody, "description": description}


ERRORS: dict[int | str, dict[str, Any]] = {
    400: _error("bad_json: the body is not valid JSON (or holds lone surrogates, deep nesting, huge numbers); "
                "bad_multipart: a multipart/form-data body that cannot be read"),
    401: _error("missing or wrong bearer token (when the server has one), or a token in the URL"),
    403: _error("sent by a web page of another origin"),
    413: _error("too_large: request body, message, history, a part or all the parts over the limit"),
    415: _error("unsupported_media_type: the body is neither application/json nor multipart/form-data; "
                "unsupported_content: a part of a kind or media type the agent (or the server) does not take"),
    421: _error("a Host header this server does not answer to (DNS rebinding protection)"),
    422: _error("invalid_request: wrong types, unknown fields, empty message, bad history, a part that is not what "
                "it says (bad base64, bytes that are not its media type, a bad URL), a state that is not an object"),
    429: _error("too many runs at once; see Retry-After"),
}
RUN_ERRORS: dict[int | str, dict[str, Any]] = {
    502: _error("the backend failed during the run"),
    503: _error("the run was cancelled (server shutting down)"),
}
RESUME_ERRORS: dict[int | str, dict[str, Any]] = {
    **{status: ERRORS[status] for status in (400, 401, 403, 413, 415, 421)},
    404: _error("unknown_question: no open question of that id for this run (never asked, another run's, or its "
                "run has ended)"),
    409: _error("already_answered: the question has its answer already"),
    410: _error("question_expired: the question expired and its run ended cancelled"),
    422: _error("invalid_request (the body's shape) or invalid_answer (an outcome that is not among the question's "
                "choices, a value that does not fit its schema)"),
}

EVENT_NAMES = [
    "run_started", "text_delta", "reasoning_delta", "tool_started", "tool_finished", "question_asked",
    "question_answered", "reply_part", "state_snapshot", "state_delta", "usage_reported", "run_finished", "run_failed",
]


def _inline(model: Any) -> dict[str, Any]:
    """A model's JSON Schema with nothing to look up (for the SSE events' schema)."""
    return model.model_json_schema()


_USAGE = {"type": "array", "items": _inline(UsageOut), "description": "per model: what the run cost (run_finished, "
          "run_failed: the run's total; usage_reported: usage so far)"}
_PART = _inline(PartOut)
# The fields events carry besides their type (onedoor.events); an event has only its own.
EVENT_FIELDS: dict[str, Any] = {
    "run_id": {"type": "string"},
    "text": {"type": "string"},
    "usage": _USAGE,
    "parts": {"type": "array", "items": _PART, "description": "tool_finished: a result that is more than text"},
    "part": {**_PART, "description": "reply_part: a part of the reply that is not text (an image the agent made)"},
    "state": {"type": "object", "description": "state_snapshot: the run's whole shared state now"},
    "ops": {"type": "array", "items": {"type": "object"}, "description": "state_delta: RFC 6902 JSON Patch "
            "operations that apply to the state before it (the last snapshot and every delta since)"},
}
# One SSE event (OpenAPI 3.1: the text/event-stream schema describes each event).
SSE_EVENT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["event", "data"],
    "properties": {
        "id": {"type": "string", "description": "the event's cursor, RUN_ID:EPOCH:SEQ: send it back as "
               "Last-Event-ID to GET /runs/{run_id}/events to get the events after it"},
        "event": {"type": "string", "enum": EVENT_NAMES},
        "data": {
            "type": "string",
            "contentMediaType": "application/json",
            "contentSchema": {
                "type": "object",
                "required": ["type"],
                "properties": {"type": {"type": "string", "enum": EVENT_NAMES}, **EVENT_FIELDS},
            },
        },
    },
}


def streamed(spec: dict[str, Any], errors: dict[int | str, dict[str, Any]]) -> dict[int | str, dict[str, Any]]:
    """OpenAPI responses of an SSE operation: ``spec`` for 200, JSON bodies for the errors."""
    out: dict[int | str, dict[str, Any]] = {200: {**spec, "content": {"text/event-stream": {"schema": SSE_EVENT_SCHEMA}}}}
    for status, error in errors.items():
        out[status] = {
            "description": error["description"],
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}},
        }
    return out


def links(*operations: str) -> dict[str, Any]:
    """OpenAPI links from a reply's ``run_id`` to the calls that continue a suspended run."""
    what = {
        "questions": "the questions the run waits for (when status is needs_input)",
        "answer": "answer them, get the rest of the reply as JSON",
        "answer_stream": "answer them, get the rest of the run as events",
    }
    return {
        op: {"operationId": op, "parameters": {"run_id": "$response.body#/run_id"}, "description": what[op]}
        for op in operations
    }


__all__ = [
    "ERRORS", "EVENT_FIELDS", "EVENT_NAMES", "RequestRefused", "RESUME_ERRORS", "RUN_ERRORS", "SSE_EVENT_SCHEMA", "describe_validation", "error_response",
    "json_response", "links", "refusal_response", "streamed",
]
