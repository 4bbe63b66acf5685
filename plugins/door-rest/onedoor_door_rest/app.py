"""The REST door's FastAPI application.

Routes (under the door's prefix, ``/rest`` by default)::

    GET  /                               what this door offers
    POST /chat                           JSON in, JSON out: the reply and the run's tool calls
    POST /chat/stream                    Server-Sent Events, one core event per event
    POST /runs/{run_id}/answers          answer a suspended run's questions; JSON like /chat
    POST /runs/{run_id}/answers/stream   the same, answered with Server-Sent Events
    GET  /runs/{run_id}/questions        the questions a suspended run waits for
    GET  /runs/{run_id}/events           a run's events again, after Last-Event-ID (events_route.py)
    POST/GET /threads, GET/DELETE /threads/{thread_id}, POST /threads/{thread_id}/chat[/stream]
                                         stored conversations of the caller (thread_routes.py)
    GET/PATCH/PUT /threads/{thread_id}/state
                                         a thread's shared state, ETag and If-Match (state_routes.py)
    GET  /openapi.json  the OpenAPI document;  GET /docs  its Swagger UI page

The chat calls take JSON (a message of text or parts) or a ``multipart/form-data`` upload
(bodies.py, forms.py); replies carry the reply's parts, the run's usage and its state.
Every SSE event carries ``id: <cursor>`` (the run's journal, resumable.py); what a client
going away does is the ``on_disconnect`` option (cancel the run, or let it finish).

A run that asks (a tool approval, a question) ends its response with the question:
``/chat`` answers 200 with ``status: "needs_input"``, ``questions`` and ``resume_url``;
the stream sends ``question_asked`` and then ``run_finished`` with stop_reason
``suspended``. The run waits, parked, until the answers come (or the questions expire:
it then ends cancelled). The answers' response continues the same run. With a store that
shares journals (PostgreSQL, SQLite with ``shared_journal``) the answers may be posted to
any server sharing it: the reply is read from the run's journal (without ``state``).

Every error, FastAPI's own included, is ``{"error": code, "detail": message}`` (the
HTTP transport's shape, :mod:`onedoor_transport_http.errors`):

=====  ======================  ====================================================
400    bad_json                the body is not JSON under onedoor.wire (transport)
400    bad_multipart           an upload whose multipart framing cannot be read
401    unauthorized            missing or wrong token, or a token in the URL (transport)
403    forbidden_origin        sent by a page of another site (transport)
404    not_found               no such route
404    unknown_question        (answers) no open question of that id for that run
404    unknown_thread          no thread of that id for the caller (another's alike)
404    unknown_run             (events) no run of that id for the caller, or forgotten
409    cursor_expired          (events) the events after that cursor are no longer kept
409    state_conflict          a chat's state is based on a version the thread has moved on from
412    state_changed           (state) If-Match names no version the state is at
405    method_not_allowed
409    already_answered        (answers) the question has its answer already
410    question_expired        (answers) the question expired; its run ended cancelled
413    too_large               request body over the transport's cap (transport), or
                               message + history over the kernel's limit (its refusal)
413    thread_too_large        the message would take the thread past the store's limit
415    unsupported_media_type  POST that is neither JSON nor an upload (transport); a state PATCH
                               that is not application/json-patch+json
415    unsupported_content     a part of a kind the backend (or a media type the server) does not take
421    misdirected_request     a ``Host`` this server does not answer to (transport)
422    invalid_request         wrong types, unknown fields, empty message, bad history, a part that
                               is not what it says, a JSON Patch that does not apply
422    too_large               message over the schema's maxLength (the kernel's limit)
422    invalid_answer          (answers) an outcome or value that does not fit the question
429    busy                    too many runs at once; ``Retry-After`` says when to retry
502    run_failed              ``/chat``: the backend failed (the stream sends run_failed)
501    no_threads              thread calls on a server started with ``--store none``
503    cancelled               ``/chat``: the run was cancelled (server shutting down)
=====  ======================  ====================================================
"""

# No `from __future__ import annotations`: FastAPI must see the real request models.
from typing import Any

from onedoor import ServeContext
from onedoor_transport_http.errors import REFUSED, STATUS_CODES

from . import RestOptions, __version__
from .chat_routes import add_chat_routes
from .events_route import add_events_route
from .forms import add_request_schemas
from .observing import ObservedRequests, UploadsWhereTaken, fastapi_telemetry
from .responses import RequestRefused, describe_validation, error_response, refusal_response
from .runs import Runs
from .state_routes import add_state_routes
from .thread_routes import add_thread_routes


def build_app(ctx: ServeContext, options: RestOptions) -> Any:
    """The door's FastAPI app: error handlers, the routes, and (unless turned off) the docs."""
    from fastapi import FastAPI

    app = FastAPI(
        title="onedoor REST door",
        version=__version__,
        description="Talk to the agent: `POST /chat` answers JSON, `POST /chat/stream` answers Server-Sent Events "
        "(one core event per SSE event: run_started, text_delta, reasoning_delta, tool_started, tool_finished, "
        "question_asked, question_answered, and last run_finished or run_failed). The caller keeps the history.\n\n"
        "**Human in the loop.** When the agent needs a person (may it run this tool? a question with a form), the "
        "response ends with the question: `/chat` answers `status: \"needs_input\"` with `questions` and "
        "`resume_url`; the stream sends `question_asked`, then `run_finished` with stop_reason `suspended`. The run "
        "waits until the questions' `expires_at`. Continue it with `POST /runs/{run_id}/answers` (JSON reply) or "
        "`POST /runs/{run_id}/answers/stream` (events), body `{\"answers\": [{\"question_id\": \"…\", "
        "\"outcome\": \"allow_once\"}]}`; an input question is answered `{\"outcome\": \"accept\", "
        "\"value\": {…}}`.\n\n"
        "**Threads.** `POST /threads` starts a conversation the server keeps (per caller: another token's "
        "threads answer 404); `POST /threads/{thread_id}/chat` (or `/chat/stream`) sends a message on it "
        "without a history, and the turn is kept; `GET /threads`, `GET /threads/{thread_id}` and `DELETE` list, "
        "read and delete. **Content.** A message is text or a list of parts (images, audio, video, documents, "
        "resources, links, JSON data: `data` is base64), or a `multipart/form-data` upload of a `message` and "
        "`file` fields; replies carry the reply's `parts`. **Usage.** Replies and `run_finished` carry `usage`, per "
        "model. **Shared state.** `GET /threads/{thread_id}/state` (ETag), `PATCH` with a JSON Patch or `PUT`, "
        "`If-Match` to change it only if unchanged; a run's `state_snapshot` / `state_delta` events. "
        "**Resumable streams.** Every event carries `id: <cursor>`; after a dropped connection, "
        "`GET /runs/{run_id}/events` with `Last-Event-ID` (or `?after=`) sends every later event exactly once.",
        docs_url=None,
        redoc_url=None,
        openapi_url="/openapi.json" if options.docs else None,
        **fastapi_telemetry(ctx),
    )
    _add_error_handlers(app)
    runs = Runs(ctx.kernel, options)
    add_chat_routes(app, ctx, runs)
    add_thread_routes(app, ctx, runs)
    add_state_routes(app, ctx)
    add_events_route(app, ctx, runs)
    if options.docs:
        _add_docs(app, secured=ctx.endpoint is not None and ctx.endpoint.token_required)
    return ObservedRequests(UploadsWhereTaken(app), ctx)


def _add_error_handlers(app: Any) -> None:
    """Every error, FastAPI's own included, in the transport's JSON shape; the kernel's
    refusals through the transport's one table."""
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
        headers = dict(exc.headers or {})
        if exc.status_code == 404:
            detail = f"no route for {request.url.path}"
        if exc.status_code == 405:  # every method of the path, not only those of the first route that matched it
            headers["Allow"] = ", ".join(allowed_methods(app, request.scope)) or headers.get("Allow", "")
        return error_response(exc.status_code, code, detail, headers)

    for kind in REFUSED:
        app.add_exception_handler(kind, _on_refusal)

    @app.exception_handler(RequestRefused)
    async def on_refused(request: Request, exc: RequestRefused) -> Any:
        return error_response(exc.status, exc.code, exc.detail, exc.headers)

    @app.exception_handler(Exception)
    async def on_error(request: Request, exc: Exception) -> Any:
        # Starlette re-raises after this answer, so uvicorn logs the traceback server-side.
        return error_response(500, "internal", "internal error; see the server log")


async def _on_refusal(request: Any, exc: Exception) -> Any:
    return refusal_response(exc)


def allowed_methods(app: Any, scope: Any) -> list[str]:
    """The methods some route of ``app`` answers for the path of ``scope``."""
    from starlette.routing import Match

    methods: set[str] = set()
    for route in app.router.routes:
        match, _ = route.matches(scope)
        if match is not Match.NONE:
            methods |= set(getattr(route, "methods", None) or ())
    return sorted(methods)


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
            # servers: the prefix the door is mounted at (FastAPI fills app.servers from the
            # request's root_path; older releases leave it out of a custom schema), so "try it
            # out" on the docs page calls /rest/chat, where the page's cookie goes
            schema = get_openapi(title=app.title, version=app.version, description=app.description, routes=app.routes,
                                 servers=app.servers or None)
            add_request_schemas(app, schema)
            if secured:
                schema.setdefault("components", {})["securitySchemes"] = {"bearer": {"type": "http", "scheme": "bearer"}}
                schema["security"] = [{"bearer": []}]
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi


__all__ = ["build_app", "describe_validation", "error_response"]
