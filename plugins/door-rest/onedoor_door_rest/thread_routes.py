"""The REST door's thread calls: stored conversations, owned by the caller.

Routes (under the door's prefix)::

    POST   /threads                           create a thread -> 201, its summary
    GET    /threads?limit=&before=            the caller's threads, most recently changed first
    GET    /threads/{thread_id}               the thread with its messages (tool calls included)
    DELETE /threads/{thread_id}               204; the thread and its messages are gone
    POST   /threads/{thread_id}/chat          a turn on the thread, JSON like /chat (no history sent)
    POST   /threads/{thread_id}/chat/stream   the same turn as Server-Sent Events

Every call acts for ``ctx.principal_of(scope)``: another principal's thread answers
exactly what an unknown one does (404 ``unknown_thread``). A server started with
``--store none`` answers 501 ``no_threads``. A turn that would take the thread past the
store's size limit is refused before it runs (413 ``thread_too_large``).
"""

# No `from __future__ import annotations`: FastAPI must see the real request models.
from typing import Any, Optional

from onedoor import ServeContext, ThreadError

from .app import _ERRORS, _RUN_ERRORS, _Runs, _streamed, error_response, json_response
from .models import ChatResponse, ErrorBody
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


class ThreadProblem(Exception):
    """A thread call this door refuses: answered ``{"error": code, "detail": detail}``."""

    def __init__(self, status: int, code: str, detail: str) -> None:
        super().__init__(detail)
        self.status = status
        self.code = code
        self.detail = detail


NO_THREADS = "this server keeps no threads (it was started with --store none); send a history to /chat instead"


class ThreadDesk:
    """The door's side of the kernel's thread store, for one principal per call."""

    def __init__(self, store: Any) -> None:
        self.store = store

    def _store(self) -> Any:
        if self.store is None:
            raise ThreadProblem(501, "no_threads", NO_THREADS)
        return self.store

    async def create(self, principal: str, body: ThreadCreate) -> Any:
        return await self._store().create(principal, title=body.title, settings=body.settings)

    async def list(self, principal: str, limit: int, before: Optional[str]) -> dict[str, Any]:
        page = await self._store().list(principal, limit=limit, before=before)
        out: dict[str, Any] = {"threads": [summary_dict(s) for s in page]}
        if len(page) == limit:
            out["next_before"] = page[-1].id
        return out

    async def load(self, principal: str, thread_id: str) -> Any:
        """The principal's thread, or 404 (unknown and another principal's alike)."""
        thread = await self._store().get(principal, thread_id)
        if thread is None:
            raise ThreadProblem(404, "unknown_thread", f"no thread {thread_id!r}")
        return thread

    async def delete(self, principal: str, thread_id: str) -> None:
        if not await self._store().delete(principal, thread_id):
            raise ThreadProblem(404, "unknown_thread", f"no thread {thread_id!r}")

    def check_room(self, thread: Any, message: str) -> None:
        """413 when the message alone would take the thread past the store's size limit
        (a reply that does is not kept: its run ends run_failed saying so)."""
        limit = getattr(self.store, "max_thread_chars", None)
        if not isinstance(limit, int):
            return
        held = sum(len(m.content) for m in thread.messages)
        if held + len(message) > limit:
            raise ThreadProblem(
                413, "thread_too_large",
                f"thread {thread.id!r} holds {held} characters; with this message it would pass the limit of "
                f"{limit}: start a new thread",
            )


def thread_error_problem(exc: ThreadError) -> ThreadProblem:
    """A store refusal as this door answers it."""
    status, code = {
        "not_found": (404, "unknown_thread"),
        "too_large": (413, "thread_too_large"),
        "conflict": (409, "conflict"),
        "unavailable": (503, "store_unavailable"),
    }.get(exc.reason, (422, "invalid_request"))
    return ThreadProblem(status, code, str(exc))


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
_READ_ERRORS: dict[int | str, dict[str, Any]] = {401: _ERRORS[401], **_UNKNOWN, **_BAD_ID, **_NO_STORE}
_TURN_ERRORS: dict[int | str, dict[str, Any]] = {
    **_ERRORS,
    **_UNKNOWN,
    413: {"model": ErrorBody, "description": "too_large (body or message over the limit) or thread_too_large "
          "(the message would take the thread past the store's size limit: start a new thread)"},
    422: {"model": ErrorBody, "description": "invalid_request: wrong types, unknown fields, empty message, "
          "not a thread id"},
    **_NO_STORE,
}


_CREATE_RESPONSES: dict[int | str, dict[str, Any]] = {
    201: {"links": _THREAD_LINKS},
    **{status: _ERRORS[status] for status in (400, 401, 403, 413, 415, 421)},
    422: {"model": ErrorBody, "description": "invalid_request: wrong types, unknown fields, title too long"},
    **_NO_STORE,
}


def add_thread_routes(app: Any, ctx: ServeContext, runs: _Runs) -> None:
    from fastapi import Path, Query, Request
    from starlette.responses import Response

    desk = ThreadDesk(ctx.kernel.store)
    ThreadChatRequest = thread_chat_model(ctx.kernel.limits.max_message_chars)
    thread_id_path = Path(pattern=THREAD_ID_PATTERN, description="the thread's id")

    @app.exception_handler(ThreadProblem)
    async def on_thread_problem(request: Request, exc: ThreadProblem) -> Any:
        return error_response(exc.status, exc.code, exc.detail)

    @app.exception_handler(ThreadError)
    async def on_thread_error(request: Request, exc: ThreadError) -> Any:
        problem = thread_error_problem(exc)
        return error_response(problem.status, problem.code, problem.detail)

    @app.post(
        "/threads",
        operation_id="create_thread",
        summary="Start a thread: a conversation the server keeps",
        status_code=201,
        response_model=ThreadSummaryOut,
        responses=_CREATE_RESPONSES,
    )
    async def create_thread(body: ThreadCreate, request: Request) -> Any:
        thread = await desk.create(ctx.principal_of(request.scope), body)
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
            401: _ERRORS[401],
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
        return json_response(await desk.list(ctx.principal_of(request.scope), limit, before))

    @app.get(
        "/threads/{thread_id}",
        operation_id="get_thread",
        summary="A thread with its messages (tool calls and results included)",
        response_model=ThreadOut,
        responses=_READ_ERRORS,
    )
    async def get_thread(request: Request, thread_id: str = thread_id_path) -> Any:
        return json_response(thread_dict(await desk.load(ctx.principal_of(request.scope), thread_id)))

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
        principal = ctx.principal_of(request.scope)
        await desk.delete(principal, thread_id)
        ctx.kernel.forget_thread(thread_id, principal)  # its runs stop, their journals (its text) go
        return Response(status_code=204)

    async def start_turn(request: Request, thread_id: str, message: str) -> Any:
        principal = ctx.principal_of(request.scope)
        thread = await desk.load(principal, thread_id)
        desk.check_room(thread, message)
        return runs.start_on_thread(message, thread, principal)

    @app.post(
        "/threads/{thread_id}/chat",
        operation_id="thread_chat",
        summary="Send a message on a thread, get the whole reply as JSON; the turn is kept in the thread",
        response_model=ChatResponse,
        responses={**_TURN_ERRORS, **_RUN_ERRORS},
    )
    async def thread_chat(
        body: ThreadChatRequest, request: Request, thread_id: str = thread_id_path  # type: ignore[valid-type]
    ) -> Any:
        run = await start_turn(request, thread_id, body.message)  # type: ignore[attr-defined]
        return await runs.reply_json(run, request)

    @app.post(
        "/threads/{thread_id}/chat/stream",
        operation_id="thread_chat_stream",
        summary="Send a message on a thread, get the run as Server-Sent Events; the turn is kept in the thread",
        response_class=EventStreamResponse,
        status_code=200,
        responses=_streamed(
            {"description": "an event stream like /chat/stream's; the turn is in the thread before run_finished "
             "(or run_failed) is sent"},
            _TURN_ERRORS,
        ),
    )
    async def thread_chat_stream(
        body: ThreadChatRequest, request: Request, thread_id: str = thread_id_path  # type: ignore[valid-type]
    ) -> Any:
        run = await start_turn(request, thread_id, body.message)  # type: ignore[attr-defined]
        return runs.reply_stream(run)


__all__ = ["ThreadDesk", "ThreadProblem", "add_thread_routes", "thread_error_problem"]
