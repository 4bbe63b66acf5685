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
    GET  /openapi.json  the OpenAPI document;  GET /docs  its Swagger UI page

Every SSE event carries ``id: <cursor>`` (the run's journal, resumable.py); what a client
going away does is the ``on_disconnect`` option (cancel the run, or let it finish).

A run that asks (a tool approval, a question) ends its response with the question:
``/chat`` answers 200 with ``status: "needs_input"``, ``questions`` and ``resume_url``;
the stream sends ``question_asked`` and then ``run_finished`` with stop_reason
``suspended``. The run waits, parked, until the answers come (or the questions expire:
it then ends cancelled). The answers' response continues the same run.

Every error, FastAPI's own included, is ``{"error": code, "detail": message}`` (the
HTTP transport's shape, :mod:`onedoor_transport_http.errors`):

=====  ======================  ====================================================
400    bad_json                the body is not JSON under onedoor.wire (transport)
401    unauthorized            missing or wrong token, or a token in the URL (transport)
403    forbidden_origin        sent by a page of another site (transport)
404    not_found               no such route
404    unknown_question        (answers) no open question of that id for that run
404    unknown_thread          no thread of that id for the caller (another's alike)
404    unknown_run             (events) no run of that id for the caller, or forgotten
409    cursor_expired          (events) the events after that cursor are no longer kept
405    method_not_allowed
409    already_answered        (answers) the question has its answer already
410    question_expired        (answers) the question expired; its run ended cancelled
413    too_large               request body over the transport's cap (transport), or
                               message + history over the kernel's limit (its refusal)
413    thread_too_large        the message would take the thread past the store's limit
415    unsupported_media_type  POST without ``Content-Type: application/json`` (transport)
421    misdirected_request     a ``Host`` this server does not answer to (transport)
422    invalid_request         wrong types, unknown fields, empty message, bad history
422    too_large               message over the schema's maxLength (the kernel's limit)
422    invalid_answer          (answers) an outcome or value that does not fit the question
429    busy                    too many runs at once; ``Retry-After`` says when to retry
502    run_failed              ``/chat``: the backend failed (the stream sends run_failed)
501    no_threads              thread calls on a server started with ``--store none``
503    cancelled               ``/chat``: the run was cancelled (server shutting down)
=====  ======================  ====================================================
"""

# No `from __future__ import annotations`: FastAPI must see the real ChatRequest class
# built inside build_app, not a string it cannot resolve.
import asyncio
from typing import Any

from onedoor import (
    STOP_SUSPENDED,
    Answer,
    QuestionAnswered,
    QuestionAsked,
    QuestionError,
    ReasoningDelta,
    RunFailed,
    RunFinished,
    RunRefused,
    ServeContext,
    SuspendAsker,
    TextDelta,
    ToolFinished,
    ToolStarted,
    encode_json,
)
from onedoor_transport_http.errors import STATUS_CODES, error_body, refusal

from . import RestOptions, __version__
from .asking import QuestionLedger, ResponseRun, question_error_parts
from .models import (
    AnswersRequest,
    ChatResponse,
    ErrorBody,
    QuestionsResponse,
    ToolCallRecord,
    chat_request_model,
)
from .resumable import FollowedRun, journal_encoder
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
        elif kind == "string_pattern_mismatch" and where.split(".")[-1] in ("thread_id", "before"):
            parts.append(f"{where}: not a thread id (1-128 letters, digits or -_.:)")
        elif kind == "string_pattern_mismatch" and where.split(".")[-1] in ("after", "Last-Event-ID"):
            parts.append(f"{where}: not a cursor (RUN_ID:EPOCH:SEQ, the id of an event)")
        elif kind == "string_pattern_mismatch" and where == "message":
            parts.append("the message is empty (only whitespace)")
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


_RESUME_ERRORS: dict[int | str, dict[str, Any]] = {
    **{status: _ERRORS[status] for status in (400, 401, 403, 413, 415, 421)},
    404: {"model": ErrorBody, "description": "unknown_question: no open question of that id for this run "
          "(never asked, another run's, or its run has ended)"},
    409: {"model": ErrorBody, "description": "already_answered: the question has its answer already"},
    410: {"model": ErrorBody, "description": "question_expired: the question expired and its run ended cancelled"},
    422: {"model": ErrorBody, "description": "invalid_request (the body's shape) or invalid_answer (an outcome "
          "that is not among the question's choices, a value that does not fit its schema)"},
}


def _links(*operations: str) -> dict[str, Any]:
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


EVENT_NAMES = [
    "run_started", "text_delta", "reasoning_delta", "tool_started", "tool_finished", "question_asked",
    "question_answered", "run_finished", "run_failed",
]
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
        "read and delete. **Resumable streams.** Every event carries `id: <cursor>`; after a dropped connection, "
        "`GET /runs/{run_id}/events` with `Last-Event-ID` (or `?after=`) sends every later event exactly once.",
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
        headers = dict(exc.headers or {})
        if exc.status_code == 404:
            detail = f"no route for {request.url.path}"
        if exc.status_code == 405:  # every method of the path, not only those of the first route that matched it
            headers["Allow"] = ", ".join(allowed_methods(app, request.scope)) or headers.get("Allow", "")
        return error_response(exc.status_code, code, detail, headers)

    @app.exception_handler(RunRefused)
    async def on_refused(request: Request, exc: RunRefused) -> Any:
        return refusal_response(exc)

    @app.exception_handler(QuestionError)
    async def on_question_error(request: Request, exc: QuestionError) -> Any:
        return error_response(*question_error_parts(exc))

    @app.exception_handler(Exception)
    async def on_error(request: Request, exc: Exception) -> Any:
        # Starlette re-raises after this answer, so uvicorn logs the traceback server-side.
        return error_response(500, "internal", "internal error; see the server log")


def allowed_methods(app: Any, scope: Any) -> list[str]:
    """The methods some route of ``app`` answers for the path of ``scope``."""
    from starlette.routing import Match

    methods: set[str] = set()
    for route in app.router.routes:
        match, _ = route.matches(scope)
        if match is not Match.NONE:
            methods |= set(getattr(route, "methods", None) or ())
    return sorted(methods)


class _Reply:
    """What ``/chat`` (and a JSON resume) gathers from a run's events.

    ``known_calls``: tool calls announced in an earlier response of the same run (the
    approvals being answered), so a call that finishes in this one keeps its arguments.
    """

    def __init__(self, known_calls: dict[str, tuple[str, Any]] | None = None) -> None:
        self.reasoning: list[str] = []
        self.calls: dict[str, ToolCallRecord] = {}
        self.questions: list[dict[str, Any]] = []
        self.answers: list[dict[str, Any]] = []
        self.known_calls = known_calls or {}

    def add(self, event: Any) -> None:
        kind = type(event)
        if kind is ReasoningDelta:
            self.reasoning.append(event.text)
        elif kind is ToolStarted:
            self.calls[event.call_id] = ToolCallRecord(call_id=event.call_id, name=event.name, arguments=event.arguments)
        elif kind is ToolFinished:
            record = self.calls.get(event.call_id)
            if record is None:
                _, arguments = self.known_calls.get(event.call_id, (event.name, None))
                record = self.calls[event.call_id] = ToolCallRecord(
                    call_id=event.call_id, name=event.name, arguments=arguments
                )
            record.result = event.result
            record.is_error = event.is_error
        elif kind is QuestionAsked:
            self.questions.append(event.question.to_dict())
        elif kind is QuestionAnswered:
            self.answers.append(event.answer.to_dict())

    def response(self, outcome: Any, resume_url: str, thread_id: str | None = None) -> Any:
        if isinstance(outcome, RunFailed):
            return error_response(502, "run_failed", outcome.error)
        assert isinstance(outcome, RunFinished)
        if outcome.stop_reason == "cancelled":
            return error_response(503, "cancelled", "the run was cancelled before it finished", {"Retry-After": "1"})
        body: dict[str, Any] = {
            "run_id": outcome.run_id,
            "reply": outcome.text,
            "stop_reason": outcome.stop_reason,
            "tool_calls": [call.model_dump(mode="python") for call in self.calls.values()],
            "reasoning": "".join(self.reasoning),
            "status": "completed",
        }
        if outcome.stop_reason == STOP_SUSPENDED:
            body.update(status="needs_input", questions=self.questions, resume_url=resume_url)
        if self.answers:
            body["answers"] = self.answers
        if thread_id is not None:
            body["thread_id"] = thread_id
        return json_response(body)


class _Runs:
    """How this door starts runs, continues suspended ones, and answers for them."""

    def __init__(self, kernel: Any, options: RestOptions) -> None:
        self.kernel = kernel
        self.options = options
        self.asker = SuspendAsker(ttl=options.question_ttl or None, fallback=options.ask_fallback)
        self.ledger = QuestionLedger()

    def start(self, body: Any, principal: str) -> ResponseRun:
        history = [m.to_kernel() for m in body.history]
        run = self.kernel.run(body.message, history=history, door="rest", asker=self.asker, principal=principal)
        return ResponseRun(run)

    def start_on_thread(self, message: str, thread: Any, principal: str) -> ResponseRun:
        """A turn on a stored thread: the kernel reads its history and keeps the turn in it."""
        run = self.kernel.run(message, thread=thread, door="rest", asker=self.asker, principal=principal)
        return ResponseRun(run)

    def resume(
        self, run_id: str, body: AnswersRequest, principal: str
    ) -> tuple[ResponseRun, dict[str, tuple[str, Any]]]:
        """The run's next response, after the answers, and the tool calls being approved;
        QuestionError (nothing answered) if an answer names a question that is not this
        run's (or the run is another principal's), or the kernel refuses the answers."""
        waiting = self.waiting(run_id, principal)
        self.ledger.check(run_id, [a.question_id for a in body.answers], {q.id for q in waiting})
        calls = {q.tool.id: (q.tool.name, q.tool.arguments) for q in waiting if q.tool is not None}
        answers = [Answer(a.question_id, a.outcome, a.value) for a in body.answers]
        return ResponseRun(self.kernel.resume(answers, principal=principal, door="rest")), calls

    def waiting(self, run_id: str, principal: str) -> list[Any]:
        """The open questions of a suspended run of ``principal``."""
        return list(self.kernel.open_questions(run_id, principal=principal))

    async def reply_json(self, run: ResponseRun, request: Any, known_calls: dict[str, tuple[str, Any]] | None = None) -> Any:
        """Read this response of the run to its end and answer JSON (with on_disconnect
        "finish", a client going away does not stop the run: it ends into its thread)."""
        watcher = asyncio.get_running_loop().create_task(self._watch(request, run))
        reply = _Reply(known_calls)
        event: Any = None
        try:
            async with run:
                async for event in run:
                    kind = type(event)
                    if kind is TextDelta:  # the text is in the outcome
                        continue
                    if kind is QuestionAsked:
                        run.asked = True  # the run is parked: this response ending must not cancel it
                        self.ledger.note(event.question)
                    reply.add(event)
        finally:
            watcher.cancel()
        # a suspended response's ending is its last event (the run itself has no outcome yet)
        outcome = event if type(event) in (RunFinished, RunFailed) else run.outcome
        thread = getattr(run.run, "thread", None)
        return reply.response(outcome, resume_url(request, run.run_id), thread.id if thread is not None else None)

    async def _watch(self, request: Any, run: ResponseRun) -> None:
        if self.options.on_disconnect == "cancel":
            await cancel_on_disconnect(request.receive, run)

    def reply_stream(self, run: ResponseRun) -> Any:
        """The run as SSE, journaled: every event carries its cursor, and a client that lost
        the stream can pick it up again at GET /runs/{run_id}/events."""
        journal = self.kernel.journals.start(run.run, on_disconnect=self.options.on_disconnect)
        # a resumed run goes on in the journal of its first response: this one sends what comes next
        # (the kernel's task has not run yet, so last_seq is where the earlier responses ended)
        return self.follow_stream(FollowedRun(journal, after=journal.last_seq))

    def follow_stream(self, followed: FollowedRun) -> Any:
        return EventStreamResponse(
            followed, keepalive=self.options.keepalive, encode=journal_encoder(followed.journal, self.ledger),
            close=followed.close,
        )


def resume_url(request: Any, run_id: str) -> str:
    return f"{request.scope.get('root_path', '')}/runs/{run_id}/answers"


def _streamed(spec: dict[str, Any], errors: dict[int | str, dict[str, Any]]) -> dict[int | str, dict[str, Any]]:
    """OpenAPI responses of an SSE operation: ``spec`` for 200, JSON bodies for the errors."""
    out: dict[int | str, dict[str, Any]] = {200: {**spec, "content": {"text/event-stream": {"schema": SSE_EVENT_SCHEMA}}}}
    for status, error in errors.items():
        out[status] = {
            "description": error["description"],
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}},
        }
    return out


_RUN_ERRORS: dict[int | str, dict[str, Any]] = {
    502: {"model": ErrorBody, "description": "the backend failed during the run"},
    503: {"model": ErrorBody, "description": "the run was cancelled (server shutting down)"},
}


def _add_routes(app: Any, ctx: ServeContext, options: RestOptions) -> None:
    from fastapi import Request

    kernel = ctx.kernel
    ChatRequest = chat_request_model(kernel.limits.max_message_chars)
    runs = _Runs(kernel, options)

    @app.get("/", summary="What this door offers", operation_id="index", responses={401: _ERRORS[401]})
    async def index(request: Request) -> dict[str, Any]:
        base = request.scope.get("root_path", "")
        out = {
            "door": "rest",
            "backend": kernel.backend.name,
            "chat": base + "/chat",
            "stream": base + "/chat/stream",
            "answers": base + "/runs/{run_id}/answers",
            "threads": base + "/threads",
            "keeps_threads": kernel.store is not None,
        }
        if options.docs:
            out.update(openapi=base + "/openapi.json", docs=base + "/docs")
        return out

    @app.post(
        "/chat",
        operation_id="chat",
        summary="Send a message, get the whole reply as JSON",
        response_model=ChatResponse,
        responses={200: {"links": _links("questions", "answer", "answer_stream")}, **_ERRORS, **_RUN_ERRORS},
    )
    async def chat(body: ChatRequest, request: Request) -> Any:  # type: ignore[valid-type]
        return await runs.reply_json(runs.start(body, ctx.principal_of(request.scope)), request)

    @app.post(
        "/chat/stream",
        operation_id="chat_stream",
        summary="Send a message, get the run as Server-Sent Events",
        response_class=EventStreamResponse,
        status_code=200,
        responses=_streamed(
            {"description": "an event stream: `event: <type>` and `data: <JSON event>` per event, `: keepalive` "
             "comments during long silences; the last event is run_finished (stop_reason `suspended` after a "
             "question_asked: the run waits for answers) or run_failed"},
            _ERRORS,
        ),
    )
    async def chat_stream(body: ChatRequest, request: Request) -> Any:  # type: ignore[valid-type]
        return runs.reply_stream(runs.start(body, ctx.principal_of(request.scope)))

    _add_resume_routes(app, runs, ctx)
    from .events_route import add_events_route
    from .thread_routes import add_thread_routes

    add_thread_routes(app, ctx, runs)
    add_events_route(app, ctx, runs)


def _add_resume_routes(app: Any, runs: _Runs, ctx: ServeContext) -> None:
    """The calls that continue a suspended run, and the one that shows what it waits for."""
    from fastapi import Path, Request

    run_id_path = Path(min_length=1, max_length=128, description="the run_id of the suspended run")

    @app.post(
        "/runs/{run_id}/answers",
        operation_id="answer",
        summary="Answer a suspended run's questions, get the rest of the reply as JSON",
        response_model=ChatResponse,
        responses={200: {"links": _links("questions", "answer", "answer_stream")}, **_RESUME_ERRORS, **_RUN_ERRORS},
    )
    async def answer(body: AnswersRequest, request: Request, run_id: str = run_id_path) -> Any:
        run, calls = runs.resume(run_id, body, ctx.principal_of(request.scope))
        return await runs.reply_json(run, request, calls)

    @app.post(
        "/runs/{run_id}/answers/stream",
        operation_id="answer_stream",
        summary="Answer a suspended run's questions, get the rest of the run as Server-Sent Events",
        response_class=EventStreamResponse,
        status_code=200,
        responses=_streamed(
            {"description": "an event stream like /chat/stream's: run_started (same run_id), question_answered per "
             "answer, the run's events, and last run_finished (maybe `suspended` again) or run_failed"},
            _RESUME_ERRORS,
        ),
    )
    async def answer_stream(body: AnswersRequest, request: Request, run_id: str = run_id_path) -> Any:
        run, _ = runs.resume(run_id, body, ctx.principal_of(request.scope))
        return runs.reply_stream(run)

    @app.get(
        "/runs/{run_id}/questions",
        operation_id="questions",
        summary="The questions a suspended run waits for",
        response_model=QuestionsResponse,
        responses={
            200: {"links": _links("answer", "answer_stream")},
            401: _ERRORS[401],
            404: {"model": ErrorBody, "description": "unknown_question: no such run, or it waits for nothing"},
            422: {"model": ErrorBody, "description": "invalid_request: a run_id that cannot be one (too long)"},
        },
    )
    async def questions(request: Request, run_id: str = run_id_path) -> Any:
        waiting = runs.waiting(run_id, ctx.principal_of(request.scope))
        if not waiting:
            return error_response(404, "unknown_question", f"run {run_id!r} is not waiting for answers")
        return json_response(
            {"run_id": run_id, "questions": [q.to_dict() for q in waiting], "resume_url": resume_url(request, run_id)}
        )


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
