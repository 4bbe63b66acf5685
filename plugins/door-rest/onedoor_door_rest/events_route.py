"""``GET <prefix>/runs/{run_id}/events``: pick up a run's event stream again.

Without a cursor it replays the run from its first event; with ``Last-Event-ID`` (or
``?after=``, the ``id`` of the last event the client has) it sends every later event
exactly once, then the live ones, up to the run's ending. Another principal's run, an
unknown one and one whose journal has gone (``limits.journal_retention`` after it
ended) are alike. With a store that shares journals (PostgreSQL), the run may be one
another server drives: the reader follows it through the store: 404 ``unknown_run``. A cursor older than the events kept: 409
``cursor_expired`` (read the thread instead). Nothing after the cursor (the run has
ended, or waits for answers): 204, which also tells an ``EventSource`` to stop
reconnecting.
"""

# No `from __future__ import annotations`: FastAPI reads the parameters' real types.
import asyncio
from typing import Any

from onedoor import CursorExpired, ServeContext, parse_cursor

from .app import _ERRORS, _Runs, _streamed, error_response
from .models import ErrorBody
from .resumable import FollowedRun, first_event

CURSOR_PATTERN = r"^[A-Za-z0-9_.-]{1,128}:[0-9]{1,9}:[0-9]{1,12}$"

_EVENTS_ERRORS: dict[int | str, dict[str, Any]] = {
    401: _ERRORS[401],
    404: {"model": ErrorBody, "description": "unknown_run: no run of that id for the caller (unknown, another "
          "principal's, or its events are no longer kept)"},
    409: {"model": ErrorBody, "description": "cursor_expired: the events after that cursor are no longer kept; "
          "read the thread instead"},
    422: {"model": ErrorBody, "description": "invalid_request: not a run id, not a cursor, or a cursor of "
          "another run"},
}


async def open_reader(journal: Any, after: int) -> FollowedRun:
    """A reader from ``after``; CursorExpired before anything is answered when the
    journal no longer holds what follows it."""
    reader = journal.follow(after=after)
    first = asyncio.ensure_future(first_event(reader))
    # a local journal checks the cursor before its first wait; one another server writes
    # reads the store first (a millisecond): wait that long, not for a live event
    await asyncio.wait({first}, timeout=0 if journal_is_local(journal) else 0.25)
    if first.done() and first.exception() is not None:
        await reader.aclose()
        raise first.exception()  # type: ignore[misc]
    return FollowedRun(journal, first=first, reader=reader)


def journal_is_local(journal: Any) -> bool:
    from onedoor import RunJournal

    return isinstance(journal, RunJournal)


def add_events_route(app: Any, ctx: ServeContext, runs: _Runs) -> None:
    from fastapi import Header, Path, Query, Request
    from starlette.responses import Response

    journals = ctx.kernel.journals

    @app.get(
        "/runs/{run_id}/events",
        operation_id="run_events",
        summary="Pick up a run's events again: after the cursor of Last-Event-ID (or ?after=), or from the start",
        response_class=Response,
        status_code=200,
        responses={
            **_streamed(
                {"description": "the events after the cursor, each exactly once, then live ones up to the run's "
                 "ending (the same events, with the same ids, as the stream that started the run)"},
                _EVENTS_ERRORS,
            ),
            204: {"description": "nothing after that cursor: the run has ended (or waits for answers)"},
        },
    )
    async def run_events(
        request: Request,
        run_id: str = Path(min_length=1, max_length=128, description="the run_id of its run_started event"),
        # typed str (not Optional): the schema says a cursor or nothing, never null
        after: str = Query(
            None, pattern=CURSOR_PATTERN, description="the id of the last event received (as Last-Event-ID)"
        ),
        last_event_id: str = Header(  # checked below, once the run is known (an unknown run is 404 first)
            None, alias="Last-Event-ID", max_length=200,
            description="the id of the last event received: RUN_ID:EPOCH:SEQ (422 if it is not one)",
        ),
    ) -> Any:
        journal = await journals.find(run_id, ctx.principal_of(request.scope))  # this server's, or (a store
        # that shares journals) the one another server is writing
        if journal is None:
            return error_response(404, "unknown_run", f"no run {run_id!r} (unknown, or its events are no longer kept)")
        seq = 0
        text = after if after is not None else last_event_id
        if text is not None:
            try:
                cursor = parse_cursor(text)
            except ValueError as exc:
                return error_response(422, "invalid_request", f"Last-Event-ID: {exc}")
            if cursor.run_id != journal.run_id:
                return error_response(422, "invalid_request", f"cursor {text!r} is of another run")
            if cursor.epoch != journal.epoch:
                return error_response(409, "cursor_expired", f"cursor {text!r} is of an earlier life of the run")
            seq = cursor.seq
        try:
            followed = await open_reader(journal, seq)
        except CursorExpired as exc:
            return error_response(409, "cursor_expired", str(exc))
        if followed.empty:
            return Response(status_code=204)
        return runs.follow_stream(followed)


__all__ = ["add_events_route", "open_reader"]
