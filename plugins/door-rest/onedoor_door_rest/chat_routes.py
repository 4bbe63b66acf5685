"""The REST door's run calls: ``/chat``, ``/chat/stream``, and those that continue a
suspended run (``/runs/{run_id}/answers[/stream]``, ``/runs/{run_id}/questions``)."""

# No `from __future__ import annotations`: FastAPI must see the real request models.
from typing import Any

from onedoor import ServeContext

from .bodies import read_chat
from .forms import chat_body_spec
from .models import AnswersRequest, ChatResponse, ErrorBody, QuestionsResponse, chat_request_model
from .responses import ERRORS, RESUME_ERRORS, RUN_ERRORS, error_response, json_response, links, streamed
from .runs import Runs, resume_url
from .sse import EventStreamResponse


def add_chat_routes(app: Any, ctx: ServeContext, runs: Runs) -> None:
    from fastapi import Request

    kernel = ctx.kernel
    limits = kernel.limits
    ChatRequest = chat_request_model(limits.max_message_chars)
    body_spec = chat_body_spec(app, ChatRequest, limits)
    options = runs.options

    async def start(request: Request) -> Any:
        given = await read_chat(request, ChatRequest, limits, thread=False)
        return runs.start(given, ctx.principal_of(request.scope), request.headers)

    @app.get("/", summary="What this door offers", operation_id="index", responses={401: ERRORS[401]})
    async def index(request: Request) -> dict[str, Any]:
        base = request.scope.get("root_path", "")
        out = {
            "door": "rest",
            "backend": kernel.backend.name,
            "chat": base + "/chat",
            "stream": base + "/chat/stream",
            "answers": base + "/runs/{run_id}/answers",
            "threads": base + "/threads",
            "accepts": sorted(kernel.backend.accepts),
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
        responses={200: {"links": links("questions", "answer", "answer_stream")}, **ERRORS, **RUN_ERRORS},
        openapi_extra=body_spec,
    )
    async def chat(request: Request) -> Any:
        return await runs.reply_json(await start(request), request)

    @app.post(
        "/chat/stream",
        operation_id="chat_stream",
        summary="Send a message, get the run as Server-Sent Events",
        response_class=EventStreamResponse,
        status_code=200,
        responses=streamed(
            {"description": "an event stream: `event: <type>` and `data: <JSON event>` per event, `: keepalive` "
             "comments during long silences; the last event is run_finished (stop_reason `suspended` after a "
             "question_asked: the run waits for answers) or run_failed"},
            ERRORS,
        ),
        openapi_extra=body_spec,
    )
    async def chat_stream(request: Request) -> Any:
        return runs.reply_stream(await start(request))

    _add_resume_routes(app, runs, ctx)


def _add_resume_routes(app: Any, runs: Runs, ctx: ServeContext) -> None:
    """The calls that continue a suspended run, and the one that shows what it waits for."""
    from fastapi import Path, Request

    run_id_path = Path(min_length=1, max_length=128, description="the run_id of the suspended run")

    @app.post(
        "/runs/{run_id}/answers",
        operation_id="answer",
        summary="Answer a suspended run's questions, get the rest of the reply as JSON",
        response_model=ChatResponse,
        responses={200: {"links": links("questions", "answer", "answer_stream")}, **RESUME_ERRORS, **RUN_ERRORS},
    )
    async def answer(body: AnswersRequest, request: Request, run_id: str = run_id_path) -> Any:
        run, calls = await runs.answer(run_id, body, ctx.principal_of(request.scope))
        return await runs.reply_json(run, request, calls)

    @app.post(
        "/runs/{run_id}/answers/stream",
        operation_id="answer_stream",
        summary="Answer a suspended run's questions, get the rest of the run as Server-Sent Events",
        response_class=EventStreamResponse,
        status_code=200,
        responses=streamed(
            {"description": "an event stream like /chat/stream's: run_started (same run_id), question_answered per "
             "answer, the run's events, and last run_finished (maybe `suspended` again) or run_failed"},
            RESUME_ERRORS,
        ),
    )
    async def answer_stream(body: AnswersRequest, request: Request, run_id: str = run_id_path) -> Any:
        run, _ = await runs.answer(run_id, body, ctx.principal_of(request.scope))
        return runs.reply_stream(run)

    @app.get(
        "/runs/{run_id}/questions",
        operation_id="questions",
        summary="The questions a suspended run waits for",
        response_model=QuestionsResponse,
        responses={
            200: {"links": links("answer", "answer_stream")},
            401: ERRORS[401],
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


__all__ = ["add_chat_routes"]
