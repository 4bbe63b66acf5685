"""The REST door's FastAPI application.

Routes (under the door's prefix, ``/rest`` by default)::

    GET  /              what this door offers
    POST /chat          JSON in, JSON out: the reply and the run's tool calls
    POST /chat/stream   Server-Sent Events, one core event per event
    GET  /openapi.json  the OpenAPI document;  GET /docs  its Swagger UI page

Every error, FastAPI's own included, is ``{"error": code, "detail": message}`` (the
HTTP transport's shape, :mod:`onedoor_transport_http.errors`):

=====  ======================  ====================================================
400    bad_json                the body is not JSON under onedoor.wire (transport)
401    unauthorized            missing or wrong token, or a token in the URL (transport)
403    forbidden_origin        sent by a page of another site (transport)
404    not_found               no such route
405    method_not_allowed
413    too_large               request body over the transport's cap (transport), or
                               message + history over the kernel's limit (its refusal)
415    unsupported_media_type  POST without ``Content-Type: application/json`` (transport)
421    misdirected_request     a ``Host`` this server does not answer to (transport)
422    invalid_request         wrong types, unknown fields, empty message, bad history
422    too_large               message over the schema's maxLength (the kernel's limit)
429    busy                    too many runs at once; ``Retry-After`` says when to retry
502    run_failed              ``/chat``: the backend failed (the stream sends run_failed)
503    cancelled               ``/chat``: the run was cancelled (server shutting down)
=====  ======================  ====================================================
"""

# No `from __future__ import annotations`: FastAPI must see the real ChatRequest class
# built inside build_app, not a string it cannot resolve.
import asyncio
from typing import Any

from onedoor.composition import ServeContext
from onedoor.errors import RunRefused
from onedoor.events import ReasoningDelta, RunFailed, RunFinished, TextDelta, ToolFinished, ToolStarted
from onedoor.wire import encode_json
from onedoor_transport_http.errors import STATUS_CODES, error_body, refusal

from . import RestOptions, __version__
from .models import ChatResponse, ErrorBody, ToolCallRecord, chat_request_model
from .sse import EventStreamResponse, cancel_on_disconnect


def error_response(status: int, code: str, detail: str, headers: dict[str, str] | None = None) -> Any:
    from starlette.responses import Response

    return Response(error_body(code, detail), status_code=status, media_type="application/json", headers=headers)


def json_response(content: Any, status: int = 200) -> Any:
    from starlette.responses import Response

    return Response(encode_json(content), status_code=status, media_type="application/json")


def refusal_response(exc: RunRefused) -> Any:
    status, code, detail, headers = refusal(exc)
    return error_response(status, code, detail, {k.decode(): v.decode() for k, v in headers} or None)


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
            code = "too_large"  # the schema's maxLength (the kernel's limit): 422 like any schema error
            parts.append(f"the message is over the limit of {(err.get('ctx') or {}).get('max_length')} characters")
        else:
            parts.append(f"{where}: {err.get('msg', 'invalid')}")
    if len(errors) > 5:
        parts.append(f"and {len(errors) - 5} more")
    return 422, code, "; ".join(parts) or "invalid request"


_ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"model": ErrorBody, "description": "the body is not valid JSON (or holds lone surrogates, deep nesting, huge numbers)"},
    401: {"model": ErrorBody, "description": "missing or wrong bearer token (when the server has one), or a token in the URL"},
    403: {"model": ErrorBody, "description": "sent by a web page of another origin"},
    413: {"model": ErrorBody, "description": "request body, message or history over the limit"},
    415: {"model": ErrorBody, "description": "the body is not application/json"},
    421: {"model": ErrorBody, "description": "a Host header this server does not answer to (DNS rebinding protection)"},
    422: {"model": ErrorBody, "description": "invalid request: wrong types, unknown fields, empty message, bad history"},
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


def build_app(ctx: ServeContext, options: RestOptions) -> Any:
    """The door's FastAPI app: error handlers, the routes, and (unless turned off) the docs."""
    from fastapi import FastAPI

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
    _add_error_handlers(app)
    _add_routes(app, ctx, options)
    if options.docs:
        _add_docs(app, secured=ctx.endpoint is not None and ctx.endpoint.token_required)
    return app


def _add_error_handlers(app: Any) -> None:
    """Every error, FastAPI's own included, in the transport's JSON shape."""
    from fastapi import Request
    from fastapi.exceptions import RequestValidationError
    from starlette.exceptions import HTTPException

    @app.exception_handler(RequestValidationError)
    async def on_validation(request: Request, exc: RequestValidationError) -> Any:
        status, code, detail = describe_validation(list(exc.errors()))
        return error_response(status, code, detail)

    @app.exception_handler(HTTPException)
    async def on_http(request: Request, exc: HTTPException) -> Any:
        code = STATUS_CODES.get(exc.status_code, "error")
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


class _Reply:
    """What ``/chat`` gathers from a run's events."""

    def __init__(self) -> None:
        self.reasoning: list[str] = []
        self.calls: dict[str, ToolCallRecord] = {}

    def add(self, event: Any) -> None:
        kind = type(event)
        if kind is ReasoningDelta:
            self.reasoning.append(event.text)
        elif kind is ToolStarted:
            self.calls[event.call_id] = ToolCallRecord(call_id=event.call_id, name=event.name, arguments=event.arguments)
        elif kind is ToolFinished:
            record = self.calls.setdefault(event.call_id, ToolCallRecord(call_id=event.call_id, name=event.name))
            record.result = event.result
            record.is_error = event.is_error

    def response(self, outcome: Any) -> Any:
        if isinstance(outcome, RunFailed):
            return error_response(502, "run_failed", outcome.error)
        assert isinstance(outcome, RunFinished)
        if outcome.stop_reason == "cancelled":
            return error_response(503, "cancelled", "the run was cancelled before it finished", {"Retry-After": "1"})
        reply = ChatResponse(
            run_id=outcome.run_id,
            reply=outcome.text,
            stop_reason=outcome.stop_reason,
            tool_calls=list(self.calls.values()),
            reasoning="".join(self.reasoning),
        )
        return json_response(reply.model_dump(mode="python"))


def _add_routes(app: Any, ctx: ServeContext, options: RestOptions) -> None:
    from fastapi import Request

    kernel = ctx.kernel
    ChatRequest = chat_request_model(kernel.limits.max_message_chars)

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
        reply = _Reply()
        try:
            async with run:
                async for event in run:
                    if type(event) is not TextDelta:  # the text is in the outcome
                        reply.add(event)
        finally:
            watcher.cancel()
        return reply.response(run.outcome)

    @app.post(
        "/chat/stream",
        operation_id="chat_stream",
        summary="Send a message, get the run as Server-Sent Events",
        response_class=EventStreamResponse,
        status_code=200,
        responses={
            200: {
                "description": "an event stream: `event: <type>` and `data: <JSON event>` per event, "
                "`: keepalive` comments during long silences; the last event is run_finished or run_failed",
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
        return EventStreamResponse(start_run(body), keepalive=options.keepalive)


def _add_docs(app: Any, *, secured: bool) -> None:
    """Swagger UI at /docs and the OpenAPI document (with bearer auth when the server has a token)."""
    from fastapi import Request
    from fastapi.openapi.docs import get_swagger_ui_html
    from fastapi.openapi.utils import get_openapi

    @app.get("/docs", include_in_schema=False)
    async def docs(request: Request) -> Any:
        # Opened with ?token=…, the transport answered with a cookie: the page's own
        # requests (the spec, "try it out") carry it; the token stays out of URLs.
        url = request.scope.get("root_path", "") + "/openapi.json"
        return get_swagger_ui_html(openapi_url=url, title="onedoor REST door")

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = get_openapi(title=app.title, version=app.version, description=app.description, routes=app.routes)
            if secured:
                schema.setdefault("components", {})["securitySchemes"] = {"bearer": {"type": "http", "scheme": "bearer"}}
                schema["security"] = [{"bearer": []}]
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi


__all__ = ["build_app", "describe_validation", "error_response"]
