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

from onedoor import Answer, CursorExpired, QuestionAsked, QuestionError, ServeContext, SuspendAsker, WireError
from onedoor.questions import clip
from onedoor.wire import json_type
from onedoor_transport_http.errors import REFUSED, UNKNOWN_RUN, send_error, send_json, send_refusal
from onedoor_transport_http.guard import read_json
from onedoor_transport_http.journal_stream import JournalSource, event_stream, open_source, requested_cursor, seq_of
from onedoor_transport_http.sse import SSE_HEADERS
from onedoor_transport_http.thread_endpoints import ThreadEndpoints

from . import segments
from .convert import NO_USER_MESSAGE, InputError, ResumeRequest, build_request, build_resume, is_resume
from .interrupts import answer_for
from .segments import Segment
from .threaded import AguiThreadViews, open_thread, snapshot_base
from .translate import PROTOCOL_VERSION, Translator, encode_all

Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


class AguiApp:
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
            request = build_request(data)
        except InputError as exc:
            await send_error(send, 422, "invalid_request", str(exc))
            return
        principal = self.principal_of(scope)
        thread = None
        if self.kernel.store is not None:
            thread = await open_thread(self.kernel.threads, principal, request)
        elif not request.has_user:
            await send_error(send, 422, "invalid_request", NO_USER_MESSAGE)
            return
        run = self.kernel.run(
            request.prompt,
            history=None if thread is not None else request.history,
            thread=thread,
            tools=request.tools,
            door=self.door_name,
            run_id=request.run_id,
            extras=request.extras,
            asker=self.asker,
            principal=principal,
        )
        base = snapshot_base(thread, request) if thread is not None else request.messages
        translator = Translator(
            request.thread_id,
            request.run_id,
            record=self._records(request),
            input_messages=base,
            snapshot_ids="h" if thread is not None else None,
        )
        await self._stream(scope, receive, send, run, translator, self._finishes(request.forwarded_props, thread is not None))

    def _finishes(self, props: Any, threaded: bool) -> bool:
        """Whether the run goes on after its client leaves: the door option, or a threaded
        run whose input asks for it (``forwardedProps.onDisconnect: "finish"``: the page)."""
        if getattr(self.options, "on_disconnect", "cancel") == "finish":
            return True
        return threaded and isinstance(props, dict) and props.get("onDisconnect") == "finish"

    def _records(self, request: Any) -> bool:
        """Whether this run ends with a MESSAGES_SNAPSHOT (the snapshot options)."""
        options = self.options
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
            snapshot_base=list(translator.input_messages), snapshot_ids=translator.snapshot_ids,
        )
        segments.note(journals, journal, segment)

        def encode(pair: tuple[int, Any]) -> bytes:
            event = pair[1]
            if type(event) is QuestionAsked:  # its resume carries the calls this run leaves open
                segment.left_open = translator.open_calls()
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
        segment = segments.running_on(self.kernel.journals, principal, thread_id)
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
        found = segments.find(self.kernel.journals, run_id, principal)
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
        found = segments.find(self.kernel.journals, run_id, self.principal_of(scope))
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
            snapshot_ids=segment.snapshot_ids,
        )
        cursor = journal.cursor

        def encode(pair: tuple[int, Any]) -> bytes:
            frames = translator.feed_sse(pair[1])
            return with_id(frames, cursor(pair[0])) if pair[0] > seen else b""

        await self._send_stream(scope, receive, send, source, encode, translator, replayed=seen)

    # -- interrupts ------------------------------------------------------------------------
    def _answers(self, request: ResumeRequest, principal: str) -> tuple[list[Answer], str, Segment]:
        """The kernel's answers for the resume entries, the kernel run they continue, and the
        AG-UI run that was interrupted; QuestionError (nothing answered) for an entry that
        names no open question of this thread."""
        answers: list[Answer] = []
        run_id: str | None = None
        parent: Segment | None = None
        for interrupt_id, status, payload in request.entries:
            located = self.kernel.question(interrupt_id, principal=principal)
            journal = self.kernel.journals.get(located[0], principal) if located is not None else None
            segment = segments.last(journal)
            if located is None or located[1] is None or segment is None or segment.thread_id != request.thread_id:
                raise self._closed_reason(interrupt_id, principal)
            if run_id is not None and located[0] != run_id:
                raise QuestionError("invalid", "the entries answer interrupts of different runs; resume one run at a time")
            run_id, parent = located[0], segment
            answers.append(answer_for(located[1], status, payload))
        assert run_id is not None and parent is not None
        return answers, run_id, parent

    def _closed_reason(self, interrupt_id: str, principal: str) -> QuestionError:
        """Why ``interrupt_id`` cannot be answered here: the kernel's expired/answered, else unknown
        (an open question of another thread is unknown, as far as this client goes)."""
        try:
            self.kernel.check_question(interrupt_id, principal=principal)
        except QuestionError as exc:
            if exc.reason in ("expired", "answered"):
                return exc
        return QuestionError("unknown", f"no open interrupt {clip(interrupt_id)} on this thread")

    async def resume(self, scope: dict[str, Any], receive: Any, send: Send, data: dict[str, Any]) -> None:
        try:
            request = build_resume(data)
        except InputError as exc:
            await send_error(send, 422, "invalid_request", str(exc))
            return
        principal = self.principal_of(scope)
        self.kernel.check_run_id(request.run_id)  # before anything is answered: the new AG-UI run's id is free
        try:
            answers, run_id, parent = self._answers(request, principal)
            run = self.kernel.resume(answers, principal=principal, door=self.door_name, run_id=run_id)
        except QuestionError as exc:
            if exc.reason == "expired" and self._all_abandoned_expired(request, principal):
                await self._abandoned(send, request, principal)
                return
            raise
        translator = Translator(
            request.thread_id,
            request.run_id,
            record=self._records(request),
            input_messages=request.messages,
            parent_run_id=parent.agui_run_id,
            carried=parent.left_open,
        )
        finish = self._finishes(request.forwarded_props, getattr(self.kernel, "store", None) is not None)
        await self._stream(scope, receive, send, run, translator, finish)

    def _all_abandoned_expired(self, request: ResumeRequest, principal: str) -> bool:
        return all(
            status == "cancelled" and self._closed_reason(interrupt_id, principal).reason == "expired"
            for interrupt_id, status, _ in request.entries
        )

    async def _abandoned(self, send: Send, request: ResumeRequest, principal: str) -> None:
        """Expired interrupts abandoned (the spec's way past them): the parked run already
        ended cancelled, so this run has nothing to do and says so."""
        parent = None
        for interrupt_id, _, _ in request.entries:
            located = self.kernel.question(interrupt_id, principal=principal)
            segment = segments.last(self.kernel.journals.get(located[0], principal)) if located is not None else None
            if segment is not None and segment.thread_id == request.thread_id:
                parent = parent or segment.agui_run_id
        translator = Translator(request.thread_id, request.run_id, parent_run_id=parent)
        await send({"type": "http.response.start", "status": 200, "headers": SSE_HEADERS})
        await send({"type": "http.response.body", "body": encode_all(translator.finish()), "more_body": False})


def with_id(frames: bytes, cursor: str) -> bytes:
    """SSE frames of one core event with the ``id:`` on the last frame (a reader that
    reconnects with it has seen every frame of that event)."""
    if not frames:
        return frames
    at = frames.rfind(b"\n\ndata: ", 0, len(frames) - 2)
    at = 0 if at < 0 else at + 2
    return frames[:at] + b"id: " + cursor.encode("ascii") + b"\n" + frames[at:]


__all__ = ["AguiApp", "with_id"]
