"""The AG-UI door's ASGI app (mounted under the door's prefix, /agui by default).

=====================  =======================================================
GET  /agui/            the chat page (bundle inlined; opened with ``?token=`` the
                       transport swaps the token for a cookie)
POST /agui/            run: a RunAgentInput in, an SSE stream of AG-UI events out;
                       with ``resume``: answers to an interrupted run, which goes on
POST /agui/cancel      ``{"runId": ..., "threadId": ...}``: stop a run (also one
                       waiting for answers); a stream being read ends with
                       RUN_FINISHED and the cancelled outcome
GET  /agui/info        protocol version, endpoint and options
GET  /agui/capabilities  AG-UI ``AgentCapabilities`` (:mod:`.capabilities`)
GET  /agui/threads...  the caller's stored threads (the transport's thread endpoints,
                       with this door's views: :mod:`.threaded`)
GET  /agui/runs/{id}/events  an AG-UI run again, from its start or a cursor
=====================  =======================================================

With a thread store (``kernel.store``) the ``threadId`` names a stored thread of the
caller (:mod:`.threaded`): created on its first run, continued with only the input's new
messages after that. Every route acts for ``ctx.principal_of(scope)``.

The input is validated before anything streams; every refusal is the HTTP transport's
JSON error from its one table (:mod:`onedoor_transport_http.errors`: 400 malformed JSON,
422 invalid input, 413 too large, 429 busy with Retry-After, 409 ``run_in_use`` for a
runId in use…). Every run streams through the kernel's journal (:mod:`.segments` says
what a reader needs to come back), with this door's per-run
:class:`~.translate.Translator` as the encoder.

Content parts (:mod:`.content`) are checked before anything is stored or run, against the
kernel's limits and what its backend takes: 415 ``unsupported_content``, 413 ``too_large``,
422 ``invalid_request``. The input's ``state`` is the run's shared state (:func:`.threaded.run_state`
says how it is read against a thread's); its ``context`` goes to the backend in
``extras["context"]``. Each request is served inside ``onedoor.observe.observed_request``
with the W3C trace context of its headers, which runs get as their ``meta``.

Questions (human in the loop): runs get a ``SuspendAsker``. A question ends the response
with the interrupt outcome and parks the run in the kernel. A resume answers
(:mod:`.interrupts`) and streams the rest of the run as a new AG-UI run (the input's
``runId``, ``parentRunId`` = the interrupted one). A resume that cannot be taken is
refused before anything streams: 404 ``unknown_question`` (also another thread's), 410
``question_expired``, 409 ``already_answered``, 422 ``invalid_answer``. Abandoning
expired interrupts (every entry ``cancelled``) is not an error: it gets a short run that
ends with the cancelled outcome, so a client can move its thread on.
"""

from __future__ import annotations

from typing import Any, Awaitable, Callable, MutableMapping

from onedoor import (
    CursorExpired,
    Part,
    QuestionAsked,
    ServeContext,
    SuspendAsker,
    WireError,
    observed_request,
    trace_meta,
)
from onedoor.questions import clip
from onedoor.run.admission import check_content
from onedoor.threads import keeps_state
from onedoor.wire import json_type
from onedoor_transport_http.errors import REFUSED, UNKNOWN_RUN, send_error, send_json, send_refusal
from onedoor_transport_http.guard import read_json
from onedoor_transport_http.journal_stream import JournalSource, event_stream, open_source, requested_cursor, seq_of
from onedoor_transport_http.thread_endpoints import ThreadEndpoints

from . import segments
from .capabilities import capabilities
from .convert import NO_USER_MESSAGE, InputError, build_request, is_resume
from .replay import StateReplay
from .resume import ResumeRoutes
from .segments import Segment
from .threaded import AguiThreadViews, final_state, holds_history, open_thread, run_state, snapshot_base
from .translate import PROTOCOL_VERSION, Translator, encode_all

Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


class AguiApp(ResumeRoutes):
    def __init__(
        self,
        kernel: Any,
        options: Any,
        door_name: str = "agui",
        page: bytes | None = None,
        principal_of: Callable[[Any], str] = ServeContext.principal_of,
    ) -> None:
        self.kernel = kernel
        self.options = options
        self.door_name = door_name
        self.page = page
        self.principal_of = principal_of
        self.threads = ThreadEndpoints(kernel, principal_of, AguiThreadViews(self._running_on))
        self.asker = SuspendAsker(fallback=getattr(options, "ask_fallback", "deny"))

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Send) -> None:
        if scope["type"] != "http":
            return
        path = scope["path"]
        root = scope.get("root_path", "")
        if root and path.startswith(root):
            path = path[len(root) :]
        path = path.rstrip("/")
        method = scope["method"]
        headers = dict(scope.get("headers") or ())
        async with observed_request(self.kernel.hooks, door=self.door_name, transport="http", method=f"{method} {path or '/'}",
                                    meta=trace_meta(headers), principal=self.principal_of(scope)):
            try:
                await self._route(scope, receive, send, path, method)
            except REFUSED as exc:  # a kernel refusal before anything streamed: the transport's table
                await send_refusal(send, exc)

    async def _route(self, scope: dict[str, Any], receive: Any, send: Send, path: str, method: str) -> None:
        if path in ("", "/run"):
            if method == "POST":
                await self.run(scope, receive, send)
            elif method in ("GET", "HEAD") and path == "":
                await self.chat_page(send)
            else:
                await send_error(send, 405, "method_not_allowed", f"{method} is not allowed here; POST a RunAgentInput")
        elif path == "/cancel" and method == "POST":
            await self.cancel(scope, receive, send)
        elif path == "/threads" or path.startswith("/threads/"):
            await self.threads(scope, path, send)
        elif path.startswith("/runs/") and path.endswith("/events") and method in ("GET", "HEAD"):
            await self.reattach(scope, receive, send, path[len("/runs/") : -len("/events")])
        elif path == "/info" and method in ("GET", "HEAD"):
            await send_json(send, 200, self.info(scope))
        elif path == "/capabilities" and method in ("GET", "HEAD"):
            await send_json(send, 200, capabilities(self.kernel, self.door_name, PROTOCOL_VERSION))
        else:
            await send_error(send, 404, "not_found", f"no route for {method} {scope['path']}")

    def info(self, scope: dict[str, Any]) -> dict[str, Any]:
        return {
            "protocolVersion": PROTOCOL_VERSION,
            "endpoint": "POST " + (scope.get("root_path", "") or "") + "/",
            "door": self.door_name,
            "threads": getattr(self.kernel, "store", None) is not None,
        }

    async def chat_page(self, send: Send) -> None:
        if self.page is None:
            await send_error(send, 404, "not_found", "the chat page is turned off (page=false)")
            return
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [
                    (b"content-type", b"text/html; charset=utf-8"),
                    (b"content-length", str(len(self.page)).encode()),
                    (b"cache-control", b"no-cache"),
                    (b"referrer-policy", b"no-referrer"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": self.page})

    async def _object_body(self, scope: dict[str, Any], receive: Any, send: Send, what: str) -> dict[str, Any] | None:
        """The JSON object in the body, or None once an error is answered (or the client left)."""
        try:
            data = await read_json(scope, receive)
        except WireError as exc:
            await send_error(send, 400, "bad_json", f"the request body is refused: {exc}")
            return None
        if data is ...:
            return None
        if not isinstance(data, dict):
            await send_error(send, 422, "invalid_request", f"the body must be a JSON object ({what}), got {json_type(data)}")
            return None
        return data

    # -- runs ------------------------------------------------------------------------------
    async def run(self, scope: dict[str, Any], receive: Any, send: Send) -> None:
        data = await self._object_body(scope, receive, send, "a RunAgentInput")
        if data is None:
            return
        if is_resume(data):
            await self.resume(scope, receive, send, data)
            return
        try:
            request = build_request(data, self._check_parts)
        except InputError as exc:
            await send_error(send, 422, "invalid_request", str(exc))
            return
        principal = self.principal_of(scope)
        thread, made = None, False
        store = self.kernel.store
        if store is not None:
            thread, made = await open_thread(self.kernel.threads, principal, request, store)
        elif not request.has_user:
            await send_error(send, 422, "invalid_request", NO_USER_MESSAGE)
            return
        stored = thread is not None and keeps_state(store)
        state, version = run_state(thread if stored else None, request)
        run = self.kernel.run(
            request.message,
            history=None if thread is not None else request.history,
            thread=thread,
            tools=request.tools,
            door=self.door_name,
            run_id=request.run_id,
            extras=request.extras,
            asker=self.asker,
            principal=principal,
            state=state,
            state_version=version,
            meta=trace_meta(dict(scope.get("headers") or ())),
        )
        base = snapshot_base(thread, request) if thread is not None else request.messages
        translator = Translator(
            request.thread_id,
            request.run_id,
            record=self._records(request),
            input_messages=base,
            snapshot_ids="h" if thread is not None else None,
            client_state=request.state if isinstance(request.state, dict) else None,
            final_state=final_state(run) if stored else None,
            join=thread is not None and not made and not request.refuses_snapshot and not holds_history(thread, request),
        )
        await self._stream(scope, receive, send, run, translator, self._finishes(request.forwarded_props, thread is not None))

    def _check_parts(self, parts: list[dict[str, Any]]) -> tuple[str, tuple[Part, ...]]:
        """A message's parts under the kernel's content limits, of kinds its backend takes (RunRefused)."""
        backend = self.kernel.backend
        return check_content(self.kernel.limits, parts, frozenset(backend.accepts), backend.name)

    def _finishes(self, props: Any, threaded: bool) -> bool:
        """Whether the run goes on after its client leaves: the door option, or a threaded
        run whose input asks for it (``forwardedProps.onDisconnect: "finish"``: the page)."""
        if getattr(self.options, "on_disconnect", "cancel") == "finish":
            return True
        return threaded and isinstance(props, dict) and props.get("onDisconnect") == "finish"

    def _records(self, request: Any) -> bool:
        """Whether this run ends with a MESSAGES_SNAPSHOT (the snapshot options)."""
        options = self.options
        if getattr(request, "refuses_snapshot", False):
            return False
        return options.snapshot == "always" or (
            options.snapshot != "never"
            and (request.wants_snapshot or (options.snapshot_after > 0 and len(request.messages) >= options.snapshot_after))
        )

    async def _stream(self, scope: dict[str, Any], receive: Any, send: Send, run: Any, translator: Translator,
                      finish: bool) -> None:
        """Stream one kernel RunStream as this AG-UI run, through the kernel's journal (a
        client can come back for it: :mod:`.segments`)."""
        journals = self.kernel.journals
        journal = journals.start(run, on_disconnect="finish" if finish else "cancel")
        segment = Segment(
            translator.run_id, translator.thread_id, journal.last_seq, translator.prefix,
            parent_run_id=translator.parent_run_id, carried=dict(translator.carried),
            snapshot_base=list(translator.input_messages), snapshot_ids=translator.snapshot_ids, join=translator.join,
        )
        segments.note(journals, journal, segment)

        def encode(pair: tuple[int, Any]) -> bytes:
            event = pair[1]
            if type(event) is QuestionAsked:  # its resume carries the calls this run leaves open
                segments.leave_open(journals, journal, segment, translator.open_calls())
            return translator.feed_sse(event)

        await self._send_stream(scope, receive, send, JournalSource(journal, after=segment.after), encode, translator)

    async def _send_stream(self, scope: dict[str, Any], receive: Any, send: Send, source: Any, encode: Any,
                           translator: Translator, replayed: int = -1) -> None:
        def close(error: str | None) -> bytes:
            """RUN_FINISHED (cancelled) or RUN_ERROR, unless the run already ended (or, for a
            reader that came back, nothing new was sent)."""
            if source.seq <= replayed and error is None:
                return b""
            return encode_all(translator.finish(None if error is None else f"the AG-UI door failed: {error}"))

        options = self.options
        await event_stream(source, encode, close=close, keepalive=options.keepalive, coalesce=options.coalesce)(
            scope, receive, send
        )

    async def _running_on(self, principal: str, thread_id: str) -> dict[str, Any] | None:
        """The run going on in a thread, for the thread endpoint (the page reattaches to it)."""
        segment = await segments.running_on(self.kernel.journals, principal, thread_id)
        return None if segment is None else {"runId": segment.agui_run_id}

    async def cancel(self, scope: dict[str, Any], receive: Any, send: Send) -> None:
        data = await self._object_body(scope, receive, send, '{"runId": ..., "threadId": ...}')
        if data is None:
            return
        run_id = data.get("runId")
        if not isinstance(run_id, str):
            await send_error(send, 422, "invalid_request", "send {\"runId\": ..., \"threadId\": ...}")
            return
        principal = self.principal_of(scope)
        found = await segments.find(self.kernel.journals, run_id, principal)
        cancelled = False
        if found is not None and data.get("threadId", found[1].thread_id) == found[1].thread_id:
            cancelled = not found[0].done and await self.kernel.cancel_run(found[0].run_id, principal=principal)
        if not cancelled:
            await send_error(send, 404, "not_found", f"no run {clip(run_id)} is in progress")
            return
        await send_json(send, 200, {"cancelled": True, "runId": run_id})

    async def reattach(self, scope: dict[str, Any], receive: Any, send: Send, run_id: str) -> None:
        """``GET /runs/{runId}/events``: an AG-UI run again, translated afresh from its first
        event with the same message ids; each frame group carries its journal cursor as
        ``id:``, and with ``Last-Event-ID`` (or ``?after=``) only what came after it is sent."""
        found = await segments.find(self.kernel.journals, run_id, self.principal_of(scope))
        if found is None:
            await send_error(send, *UNKNOWN_RUN, f"no run {clip(run_id)} to follow (unknown, or ended too long ago)")
            return
        journal, segment = found
        seen = max(seq_of(journal, requested_cursor(scope), default=segment.after), segment.after)
        if seen > journal.last_seq:
            raise CursorExpired(f"{journal.cursor(seen)} is not a cursor this run gave out")
        source = await open_source(journal, segment.after)
        translator = Translator(
            segment.thread_id, segment.agui_run_id, id_prefix=segment.id_prefix, record=True,
            input_messages=segment.snapshot_base, parent_run_id=segment.parent_run_id, carried=segment.carried,
            snapshot_ids=segment.snapshot_ids, join=segment.join,
        )
        cursor = journal.cursor
        missed = StateReplay()

        def encode(pair: tuple[int, Any]) -> bytes:
            frames = translator.feed_sse(pair[1])
            if pair[0] <= seen:
                missed.skipped(pair[1])
                return b""
            return missed.before() + with_id(frames, cursor(pair[0]))

        await self._send_stream(scope, receive, send, source, encode, translator, replayed=seen)


def with_id(frames: bytes, cursor: str) -> bytes:
    """SSE frames of one core event with the ``id:`` on the last frame (a reader that
    reconnects with it has seen every frame of that event)."""
    if not frames:
        return frames
    at = frames.rfind(b"\n\ndata: ", 0, len(frames) - 2)
    at = 0 if at < 0 else at + 2
    return frames[:at] + b"id: " + cursor.encode("ascii") + b"\n" + frames[at:]


__all__ = ["AguiApp", "with_id"]
