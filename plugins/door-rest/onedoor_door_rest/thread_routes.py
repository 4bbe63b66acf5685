"""The REST door's thread calls: stored conversations, owned by the caller.

Routes (under the door's prefix)::

    POST   /threads                           create a thread -> 201, its summary
    GET    /threads?limit=&before=            the caller's threads, most recently changed first
    GET    /threads/{thread_id}               the thread with its messages (tool calls included)
    DELETE /threads/{thread_id}               204; the thread and its messages are gone
    POST   /threads/{thread_id}/chat          a turn on the thread, JSON like /chat (no history sent)
    POST   /threads/{thread_id}/chat/stream   the same turn as Server-Sent Events

Every call goes through ``kernel.threads`` for ``ctx.principal_of(scope)``, and every
refusal is the transport's table: another principal's thread answers exactly what an
unknown one does (404 ``unknown_thread``); ``--store none`` is 501 ``no_threads``; a turn
that would take the thread past the store's size limit is refused before it runs (413
``thread_too_large``).
"""

# No `from __future__ import annotations`: FastAPI must see the real request models.
from typing import Any

from onedoor import ServeContext

from .bodies import read_chat
from .forms import chat_body_spec
from .models import ChatResponse, ErrorBody
from .responses import ERRORS, RUN_ERRORS, json_response, streamed
from .runs import Runs
from .sse import EventStreamResponse
from .thread_models import (
    MAX_PAGE,
    THREAD_ID_PATTERN,
    ThreadCreate,
    ThreadList,
    ThreadOut,
    ThreadSummaryOut,
    summary_dict,
    thread_chat_model,
    thread_dict,
)

_THREAD_LINKS = {
    op: {"operationId": op, "parameters": {"thread_id": "$response.body#/id"}, "description": what}
    for op, what in (
        ("get_thread", "the thread with its messages"),
        ("thread_chat", "a turn on the thread, answered JSON"),
        ("thread_chat_stream", "a turn on the thread, answered as events"),
        ("delete_thread", "delete the thread"),
    )
}
_NO_STORE: dict[int | str, dict[str, Any]] = {501: {"model": ErrorBody, "description": "no_threads: the server keeps no threads (--store none)"}}
_UNKNOWN: dict[int | str, dict[str, Any]] = {
    404: {"model": ErrorBody, "description": "unknown_thread: no thread of that id for the caller (another "
          "principal's thread answers the same)"},
}
_BAD_ID: dict[int | str, dict[str, Any]] = {422: {"model": ErrorBody, "description": "invalid_request: not a thread id (1-128 letters, digits or -_.:)"}}
_READ_ERRORS: dict[int | str, dict[str, Any]] = {401: ERRORS[401], **_UNKNOWN, **_BAD_ID, **_NO_STORE}
_TURN_ERRORS: dict[int | str, dict[str, Any]] = {
    **ERRORS,
    **_UNKNOWN,
    409: {"model": ErrorBody, "description": "state_conflict: the state sent is based on a version of the thread's "
          "state that has changed since (read it again); pending_questions: the thread's run waits for answers"},
    413: {"model": ErrorBody, "description": "too_large (body, message or its parts over the limit) or "
          "thread_too_large (the message would take the thread past the store's size limit: start a new thread)"},
    422: {"model": ErrorBody, "description": "invalid_request: wrong types, unknown fields, empty message, "
          "not a thread id, a part that is not what it says, a state that is not an object"},
    **_NO_STORE,
}
_CREATE_RESPONSES: dict[int | str, dict[str, Any]] = {
    201: {"links": _THREAD_LINKS},
    **{status: ERRORS[status] for status in (400, 401, 403, 413, 415, 421)},
    422: {"model": ErrorBody, "description": "invalid_request: wrong types, unknown fields, title too long"},
    **_NO_STORE,
}


def add_thread_routes(app: Any, ctx: ServeContext, runs: Runs) -> None:
    from fastapi import Path, Query, Request
    from starlette.responses import Response

    desk = ctx.kernel.threads
    limits = ctx.kernel.limits
    ThreadChatRequest = thread_chat_model(limits.max_message_chars)
    body_spec = chat_body_spec(app, ThreadChatRequest, limits)
    thread_id_path = Path(pattern=THREAD_ID_PATTERN, description="the thread's id")

    @app.post(
        "/threads",
        operation_id="create_thread",
        summary="Start a thread: a conversation the server keeps",
        status_code=201,
        response_model=ThreadSummaryOut,
        responses=_CREATE_RESPONSES,
    )
    async def create_thread(body: ThreadCreate, request: Request) -> Any:
        thread = await desk.create(ctx.principal_of(request.scope), title=body.title, settings=body.settings)
        base = request.scope.get("root_path", "")
        response = json_response(summary_dict(thread), status=201)
        response.headers["location"] = f"{base}/threads/{thread.id}"
        return response

    @app.get(
        "/threads",
        operation_id="list_threads",
        summary="The caller's threads, most recently changed first",
        response_model=ThreadList,
        responses={
            401: ERRORS[401],
            422: {"model": ErrorBody, "description": "invalid_request: limit out of range, before not a thread id"},
            **_NO_STORE,
        },
    )
    async def list_threads(
        request: Request,
        limit: int = Query(50, ge=1, le=MAX_PAGE, description="threads per page"),
        before: str = Query(  # typed str (not Optional): a thread id or nothing, never null
            None, pattern=THREAD_ID_PATTERN,
            description="the next_before of the previous page: threads listed after that one",
        ),
    ) -> Any:
        page = await desk.page(ctx.principal_of(request.scope), limit=limit, before=before)
        out: dict[str, Any] = {"threads": [summary_dict(s) for s in page.threads]}
        if page.next_before is not None:
            out["next_before"] = page.next_before
        return json_response(out)

    @app.get(
        "/threads/{thread_id}",
        operation_id="get_thread",
        summary="A thread with its messages (tool calls and results included)",
        response_model=ThreadOut,
        responses=_READ_ERRORS,
    )
    async def get_thread(request: Request, thread_id: str = thread_id_path) -> Any:
        return json_response(thread_dict(await desk.view(ctx.principal_of(request.scope), thread_id)))

    @app.delete(
        "/threads/{thread_id}",
        operation_id="delete_thread",
        summary="Delete a thread and its messages",
        status_code=204,
        response_class=Response,
        response_model=None,
        responses={204: {"description": "deleted; the thread is gone (404 from now on)"}, **_READ_ERRORS},
    )
    async def delete_thread(request: Request, thread_id: str = thread_id_path) -> Any:
        await desk.delete(ctx.principal_of(request.scope), thread_id)  # its runs stop, their journals (its text) go
        return Response(status_code=204)

    async def start_turn(request: Request, thread_id: str) -> Any:
        principal = ctx.principal_of(request.scope)
        thread = await desk.get(principal, thread_id)  # an unknown thread is 404, whatever the body
        given = await read_chat(request, ThreadChatRequest, limits, thread=True)
        desk.check_room(thread, given.parts or given.message)
        return runs.start_on_thread(given, thread, principal, request.headers)

    @app.post(
        "/threads/{thread_id}/chat",
        operation_id="thread_chat",
        summary="Send a message on a thread, get the whole reply as JSON; the turn is kept in the thread",
        response_model=ChatResponse,
        responses={**_TURN_ERRORS, **RUN_ERRORS},
        openapi_extra=body_spec,
    )
    async def thread_chat(request: Request, thread_id: str = thread_id_path) -> Any:
        return await runs.reply_json(await start_turn(request, thread_id), request)

    @app.post(
        "/threads/{thread_id}/chat/stream",
        operation_id="thread_chat_stream",
        summary="Send a message on a thread, get the run as Server-Sent Events; the turn is kept in the thread",
        response_class=EventStreamResponse,
        status_code=200,
        responses=streamed(
            {"description": "an event stream like /chat/stream's; the turn is in the thread before run_finished "
             "(or run_failed) is sent"},
            _TURN_ERRORS,
        ),
        openapi_extra=body_spec,
    )
    async def thread_chat_stream(request: Request, thread_id: str = thread_id_path) -> Any:
        return runs.reply_stream(await start_turn(request, thread_id))


__all__ = ["add_thread_routes"]
