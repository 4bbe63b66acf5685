"""``GET <prefix>/runs/{run_id}/events``: pick up a run's event stream again.

Without a cursor it replays the run from its first event; with ``Last-Event-ID`` (or
``?after=``, the ``id`` of the last event the client has) it sends every later event
exactly once, then the live ones, up to the run's ending. With a store that shares
journals (PostgreSQL), the run may be one another server drives: the reader follows it
through the store. Refusals are the transport's table: 404 ``unknown_run`` (unknown,
another principal's, or its journal has gone, ``limits.journal_retention`` after it
ended), 422 for a cursor of another run or none at all, 409 ``cursor_expired`` for one
older than the events kept (read the thread instead). Nothing after the cursor (the run
has ended, or waits for answers): 204, which also tells an ``EventSource`` to stop
reconnecting.
"""

# No `from __future__ import annotations`: FastAPI reads the parameters' real types.
from typing import Any

from onedoor import CursorError, ServeContext
from onedoor.journal import CURSOR_PATTERN
from onedoor_transport_http.errors import UNKNOWN_RUN
from onedoor_transport_http.journal_stream import open_source, seq_of

from .models import ErrorBody
from .responses import ERRORS, error_response, refusal_response, streamed
from .runs import Runs

_EVENTS_ERRORS: dict[int | str, dict[str, Any]] = {
    401: ERRORS[401],
    404: {"model": ErrorBody, "description": "unknown_run: no run of that id for the caller (unknown, another "
          "principal's, or its events are no longer kept)"},
    409: {"model": ErrorBody, "description": "cursor_expired: the events after that cursor are no longer kept; "
          "read the thread instead"},
    422: {"model": ErrorBody, "description": "invalid_request: not a run id, not a cursor, or a cursor of "
          "another run"},
}


def add_events_route(app: Any, ctx: ServeContext, runs: Runs) -> None:
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
            **streamed(
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
        after: str = Query(None, pattern=CURSOR_PATTERN, description="the id of the last event received (as Last-Event-ID)"),
        last_event_id: str = Header(  # checked below, once the run is known (an unknown run is 404 first)
            None, alias="Last-Event-ID", max_length=200,
            description="the id of the last event received: RUN_ID:EPOCH:SEQ (422 if it is not one)",
        ),
    ) -> Any:
        journal = await journals.find(run_id, ctx.principal_of(request.scope))  # this server's, or (a store
        # that shares journals) the one another server is writing
        if journal is None:
            status, code = UNKNOWN_RUN
            return error_response(status, code, f"no run {run_id!r} (unknown, or its events are no longer kept)")
        try:
            source = await open_source(journal, seq_of(journal, after if after is not None else last_event_id))
        except CursorError as exc:
            return refusal_response(exc)
        if source.empty:
            return Response(status_code=204)
        return runs.follow_stream(source)


__all__ = ["add_events_route"]
