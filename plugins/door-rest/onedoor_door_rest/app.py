"""The REST door's FastAPI application.

Routes (under the door's prefix, ``/rest`` by default)::

    GET  /              what this door offers
    POST /chat          JSON in, JSON out: the reply and the run's tool calls
    POST /chat/stream   Server-Sent Events, one core event per event
    GET  /openapi.json  the OpenAPI document;  GET /docs  its Swagger UI page

Every error, FastAPI's own included, is ``{"error": code, "detail": message}``:

=====  ======================  ====================================================
400    bad_json                the body is not valid JSON
404    not_found               no such route
405    method_not_allowed
413    too_large               request body over the transport's cap (transport)
415    unsupported_media_type  POST without ``Content-Type: application/json``
422    invalid_request         wrong types, unknown fields, empty message, bad history
422    too_large               message (or message + history) over the kernel's limit
429    busy                    too many runs at once; ``Retry-After`` says when to retry
502    run_failed              ``/chat``: the backend failed (the stream sends run_failed)
503    cancelled               ``/chat``: the run was cancelled (server shutting down)
=====  ======================  ====================================================
"""

# No `from __future__ import annotations`: FastAPI must see the real ChatRequest class
# built inside build_app, not a string it cannot resolve.
import asyncio
import math
from typing import Any

from onedoor.errors import RunRefused
from onedoor.events import ReasoningDelta, RunFailed, RunFinished, TextDelta, ToolFinished, ToolStarted

from . import RestOptions, __version__
from .models import ChatResponse, ErrorBody, ToolCallRecord, chat_request_model
from .sse import EventStreamResponse, cancel_on_disconnect, to_json_bytes

_REFUSALS = {"busy": (429, "busy"), "too_large": (422, "too_large"), "invalid": (422, "invalid_request")}
_HTTP_CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    413: "too_large",
    415: "unsupported_media_type",
    422: "invalid_request",
    429: "busy",
}


def error_response(status: int, code: str, detail: str, headers: dict[str, str] | None = None) -> Any:
    from starlette.responses import Response

    body = to_json_bytes({"error": code, "detail": detail})
    return Response(body, status_code=status, media_type="application/json", headers=headers)


def json_response(content: Any, status: int = 200) -> Any:
    from starlette.responses import Response

    return Response(to_json_bytes(content), status_code=status, media_type="application/json")


def refusal_response(exc: RunRefused) -> Any:
    status, code = _REFUSALS.get(exc.reason, (422, "invalid_request"))
    headers = None
    if exc.reason == "busy":
        headers = {"Retry-After": str(max(1, math.ceil(exc.retry_after or 1)))}
    return error_response(status, code, str(exc), headers)


def _where(loc: tuple) -> str:
    parts = [p for p in loc if p != "body"]
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "body"


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
        kind = err.get("type", "")
        where = _where(tuple(err.get("loc") or ()))
        if kind == "extra_forbidden":
            parts.append(f"unknown field {where!r}")
        elif kind == "missing":
            parts.append("the request body is required" if where == "body" else f"{where!r} is required")
        elif kind == "string_too_short" and where == "message":
            parts.append("the message is empty")
        elif kind == "string_too_long" and where == "message":
            code = "too_large"
            parts.append(f"the message is over the limit of {(err.get('ctx') or {}).get('max_length')} characters")
        else:
            parts.append(f"{where}: {err.get('msg', 'invalid')}")
    if len(errors) > 5:
        parts.append(f"and {len(errors) - 5} more")
    return 422, code, "; ".join(parts) or "invalid request"


JSON_ROUTES = ("/chat", "/chat/stream")


def _route_path(scope: Any) -> str:
    path, root = scope.get("path", ""), scope.get("root_path", "")
    return path[len(root) :] if root and path.startswith(root) else path


class RequireJson:
    """Answer 415 to a POST whose Content-Type is not JSON, before FastAPI parses it."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope.get("method") == "POST" and _route_path(scope) in JSON_ROUTES:
            kind = b""
            for name, value in scope.get("headers", ()):
                if name == b"content-type":
                    kind = value.split(b";", 1)[0].strip().lower()
                    break
            if kind != b"application/json" and not (kind.startswith(b"application/") and kind.endswith(b"+json")):
                shown = kind.decode("latin-1") or "none"
                response = error_response(
                    415, "unsupported_media_type", f"send the body as application/json (got Content-Type: {shown})"
                )
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


def _transport_token(ctx: Any) -> bool:
    options = ctx.options_for(ctx.transport_name) if getattr(ctx, "transport_name", "") else None
    return bool(getattr(options, "token", ""))


_ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"model": ErrorBody, "description": "the body is not valid JSON"},
    401: {"model": ErrorBody, "description": "missing or wrong bearer token (when the server has one)"},
    413: {"model": ErrorBody, "description": "request body too large"},
    415: {"model": ErrorBody, "description": "the body is not application/json"},
    422: {"model": ErrorBody, "description": "invalid request: wrong types, unknown fields, empty or too long message"},
    429: {"model": ErrorBody, "description": "too many runs at once; see Retry-After"},
}


EVENT_NAMES = ["run_started", "text_delta", "reasoning_delta", "tool_started", "tool_finished", "run_finished", "run_failed"]
# One SSE event (OpenAPI 3.1: the text/event-stream schema describes each event).
SSE_EVENT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["event", "data"],
    "properties": {
        "event": {"type": "string", "enum": EVENT_NAMES},
        "data": {
            "type": "string",
            "contentMediaType": "application/json",
            "contentSchema": {
                "type": "object",
                "required": ["type"],
                "properties": {"type": {"type": "string", "enum": EVENT_NAMES}},
            },
        },
    },
}


def build_app(ctx: Any, options: RestOptions) -> Any:
    from fastapi import FastAPI, Request
    from fastapi.exceptions import RequestValidationError
    from fastapi.openapi.docs import get_swagger_ui_html
    from fastapi.openapi.utils import get_openapi
    from starlette.exceptions import HTTPException

    kernel = ctx.kernel
    ChatRequest = chat_request_model(kernel.limits.max_message_chars)
    keepalive = options.keepalive
    app = FastAPI(
        title="onedoor REST door",
        version=__version__,
        description="Talk to the agent: `POST /chat` answers JSON, `POST /chat/stream` answers Server-Sent Events "
        "(one core event per SSE event: run_started, text_delta, reasoning_delta, tool_started, tool_finished, "
        "and last run_finished or run_failed). The caller keeps the history.",
        docs_url=None,
        redoc_url=None,
        openapi_url="/openapi.json" if options.docs else None,
    )

    @app.exception_handler(RequestValidationError)
    async def on_validation(request: Request, exc: RequestValidationError) -> Any:
        status, code, detail = describe_validation(list(exc.errors()))
        return error_response(status, code, detail)

    @app.exception_handler(HTTPException)
    async def on_http(request: Request, exc: HTTPException) -> Any:
        code = _HTTP_CODES.get(exc.status_code, "error")
        detail = exc.detail if isinstance(exc.detail, str) else code
        if exc.status_code == 404:
            detail = f"no route for {request.url.path}"
        return error_response(exc.status_code, code, detail, dict(exc.headers or {}))

    @app.exception_handler(RunRefused)
    async def on_refused(request: Request, exc: RunRefused) -> Any:
        return refusal_response(exc)

    @app.exception_handler(Exception)
    async def on_error(request: Request, exc: Exception) -> Any:
        # Starlette re-raises after this answer, so uvicorn logs the traceback server-side.
        return error_response(500, "internal", "internal error; see the server log")

    def start_run(body: Any) -> Any:
        history = [m.to_kernel() for m in body.history]
        return kernel.run(body.message, history=history, door="rest")

    @app.get("/", summary="What this door offers", operation_id="index", responses={401: _ERRORS[401]})
    async def index(request: Request) -> dict[str, Any]:
        base = request.scope.get("root_path", "")
        out = {
            "door": "rest",
            "backend": kernel.backend.name,
            "chat": base + "/chat",
            "stream": base + "/chat/stream",
        }
        if options.docs:
            out.update(openapi=base + "/openapi.json", docs=base + "/docs")
        return out

    @app.post(
        "/chat",
        operation_id="chat",
        summary="Send a message, get the whole reply as JSON",
        response_model=ChatResponse,
        responses={
            **_ERRORS,
            502: {"model": ErrorBody, "description": "the backend failed during the run"},
            503: {"model": ErrorBody, "description": "the run was cancelled (server shutting down)"},
        },
    )
    async def chat(body: ChatRequest, request: Request) -> Any:  # type: ignore[valid-type]
        run = start_run(body)
        watcher = asyncio.get_running_loop().create_task(cancel_on_disconnect(request.receive, run))
        text: list[str] = []
        reasoning: list[str] = []
        calls: dict[str, ToolCallRecord] = {}
        try:
            async with run:
                async for event in run:
                    kind = type(event)
                    if kind is TextDelta:
                        text.append(event.text)
                    elif kind is ReasoningDelta:
                        reasoning.append(event.text)
                    elif kind is ToolStarted:
                        calls[event.call_id] = ToolCallRecord(call_id=event.call_id, name=event.name, arguments=event.arguments)
                    elif kind is ToolFinished:
                        record = calls.setdefault(event.call_id, ToolCallRecord(call_id=event.call_id, name=event.name))
                        record.result = event.result
                        record.is_error = event.is_error
        finally:
            watcher.cancel()
        outcome = run.outcome
        if isinstance(outcome, RunFailed):
            return error_response(502, "run_failed", outcome.error)
        assert isinstance(outcome, RunFinished)
        if outcome.stop_reason == "cancelled":
            return error_response(503, "cancelled", "the run was cancelled before it finished", {"Retry-After": "1"})
        reply = ChatResponse(
            run_id=outcome.run_id,
            reply=outcome.text,
            stop_reason=outcome.stop_reason,
            tool_calls=list(calls.values()),
            reasoning="".join(reasoning),
        )
        return json_response(reply.model_dump(mode="python"))

    @app.post(
        "/chat/stream",
        operation_id="chat_stream",
        summary="Send a message, get the run as Server-Sent Events",
        response_class=EventStreamResponse,
        status_code=200,
        responses={
            200: {
                "description": "an event stream: `event: <type>` and `data: <JSON event>` per event, "
                "`: keep-alive` comments during long silences; the last event is run_finished or run_failed",
                "content": {"text/event-stream": {"schema": SSE_EVENT_SCHEMA}},
            },
            **{
                status: {
                    "description": spec["description"],
                    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}},
                }
                for status, spec in _ERRORS.items()
            },
        },
    )
    async def chat_stream(body: ChatRequest) -> Any:  # type: ignore[valid-type]
        return EventStreamResponse(start_run(body), keepalive=keepalive)

    if options.docs:

        @app.get("/docs", include_in_schema=False)
        async def docs(request: Request) -> Any:
            url = request.scope.get("root_path", "") + "/openapi.json"
            token = request.query_params.get("token")
            if token:  # a browser page opened with ?token=… passes it on to the spec
                from urllib.parse import quote

                url += "?token=" + quote(token, safe="")
            return get_swagger_ui_html(openapi_url=url, title="onedoor REST door")

        secured = _transport_token(ctx)

        def openapi() -> dict[str, Any]:
            if app.openapi_schema is None:
                schema = get_openapi(title=app.title, version=app.version, description=app.description, routes=app.routes)
                if secured:
                    schema.setdefault("components", {})["securitySchemes"] = {"bearer": {"type": "http", "scheme": "bearer"}}
                    schema["security"] = [{"bearer": []}]
                app.openapi_schema = schema
            return app.openapi_schema

        app.openapi = openapi  # type: ignore[method-assign]

    return RequireJson(app)


__all__ = ["build_app", "describe_validation", "error_response"]
