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
GET  /agui/threads...  the caller's stored threads (:mod:`.thread_routes`)
GET  /agui/runs/{id}/events  a run again, from its start or a cursor (:mod:`.reattach`)
=====================  =======================================================

With a thread store (``kernel.store``) the ``threadId`` names a stored thread of the
caller (:mod:`.threaded`): created on its first run, continued with only the input's new
messages after that. Every route acts for ``ctx.principal_of(scope)``.

The input is validated before anything streams: errors are JSON
``{"error": ..., "detail": ...}`` (400 malformed JSON, 422 invalid input or a body
that is not an object, 413 too large, 429 busy with Retry-After, 409 a runId already
running). The HTTP transport's guard has already checked Host, Origin, token and
content type, and decoded the JSON under :mod:`onedoor.wire`; its
:class:`~onedoor_transport_http.sse.EventStream` streams the run, with this door's
per-run :class:`~.translate.Translator` as the encoder. A client that goes away
cancels its run.

Questions (human in the loop): runs get a ``SuspendAsker``. A question ends the response
with the interrupt outcome and parks the run in the kernel; the door remembers, per open
interrupt, the thread, the AG-UI run that was interrupted and its open tool calls. A
resume answers (:mod:`.interrupts`) and streams the rest of the run as a new AG-UI run
(the input's ``runId``, ``parentRunId`` = the interrupted one). A resume that cannot be
taken is refused before anything streams: 404 ``unknown_interrupt`` (also another
thread's), 410 ``interrupt_expired``, 409 ``interrupt_answered``, 422 ``invalid_resume``.
Abandoning expired interrupts (every entry ``cancelled``) is not an error: it gets a
short run that ends with the cancelled outcome, so a client can move its thread on.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, MutableMapping

from onedoor import QuestionAsked, RunRefused, ServeContext, SuspendAsker
from onedoor.questions import Answer, Question, QuestionError, clip
from onedoor.wire import WireError, json_type
from onedoor_transport_http.errors import send_error, send_json, send_refusal
from onedoor_transport_http.guard import read_json
from onedoor_transport_http.sse import SSE_HEADERS, EventStream

from .convert import NO_USER_MESSAGE, InputError, ResumeRequest, build_request, build_resume, is_resume
from .interrupts import ERRORS, answer_for
from .reattach import JournalRun, LiveRun, LiveRuns, start_after, with_id
from .thread_routes import ThreadRoutes
from .threaded import ThreadRefused, open_thread, snapshot_base
from .translate import PROTOCOL_VERSION, Translator, encode_all

Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ANSWERED_MEMORY = 1024  # interrupts this door resumed, remembered for a clear 409 on a second answer


@dataclass
class Interrupted:
    """What the door keeps about one open interrupt (a parked run's question)."""

    question: Question
    thread_id: str
    principal: str
    agui_run_id: str  # the AG-UI run that ended with the interrupt: the resumed run's parentRunId
    stream: Any  # the kernel's RunStream of that response (cancel() stops the parked run)
    carried: dict[str, tuple[str, str]]  # its open tool calls, for the run that resumes it


@dataclass
class Streaming:
    """A run whose POST response is streaming here (for /cancel)."""

    thread_id: str
    principal: str
    stream: Any  # the kernel's RunStream


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
        self.runs: dict[str, Streaming] = {}  # runId -> the run streaming on it
        self.live = LiveRuns()  # runs a client can reattach to (journaled)
        self.thread_routes = ThreadRoutes(kernel, principal_of, self._running_on)
        self.interrupts: dict[str, Interrupted] = {}  # open interrupt (question) id -> where it came from
        self.answered: OrderedDict[str, str] = OrderedDict()  # interrupt id -> outcome, recently resumed here
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
            await self.thread_routes(scope, path, send)
        elif path.startswith("/runs/") and path.endswith("/events") and method in ("GET", "HEAD"):
            await self.reattach(scope, receive, send, path[len("/runs/") : -len("/events")])
        elif path == "/info" and method in ("GET", "HEAD"):
            await send_json(
                send,
                200,
                {
                    "protocolVersion": PROTOCOL_VERSION,
                    "endpoint": "POST " + (root or "") + "/",
                    "door": self.door_name,
                    "threads": getattr(self.kernel, "store", None) is not None,
                },
            )
        else:
            await send_error(send, 404, "not_found", f"no route for {method} {scope['path']}")

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

    async def cancel(self, scope: dict[str, Any], receive: Any, send: Send) -> None:
        data = await self._object_body(scope, receive, send, '{"runId": ..., "threadId": ...}')
        if data is None:
            return
        run_id = data.get("runId")
        if not isinstance(run_id, str):
            await send_error(send, 422, "invalid_request", "send {\"runId\": ..., \"threadId\": ...}")
            return
        principal = self.principal_of(scope)
        found = self._cancellable(run_id, principal)
        if found is None or data.get("threadId", found[0]) != found[0]:
            await send_error(send, 404, "not_found", f"no run {clip(run_id)} is in progress")
            return
        found[1].cancel()
        for qid in [qid for qid, i in self.interrupts.items() if i.agui_run_id == run_id and i.stream is found[1]]:
            del self.interrupts[qid]  # a parked run: its interrupts are closed now
        await send_json(send, 200, {"cancelled": True, "runId": run_id})

    def _cancellable(self, run_id: str, principal: str) -> tuple[str, Any] | None:
        """(threadId, something with cancel()) for a run of ``principal`` that is going on."""
        found = self.runs.get(run_id)
        if found is not None and found.principal == principal:
            return found.thread_id, found.stream
        for i in self.interrupts.values():  # a run waiting for answers: by the runId that was interrupted
            if i.agui_run_id == run_id and i.principal == principal:
                return i.thread_id, i.stream
        live = self.live.get(run_id, principal)  # a run whose client went away (on_disconnect finish)
        if live is not None and live.journal.running and not live.journal.done:
            return live.thread_id, live.journal
        return None

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
        if request.run_id in self.runs:
            await send_error(send, 409, "conflict", f"run {clip(request.run_id)} is already in progress")
            return
        principal = self.principal_of(scope)
        store = getattr(self.kernel, "store", None)
        thread = None
        try:
            if store is not None:
                thread = await open_thread(store, principal, request)
            elif not request.has_user:
                raise ThreadRefused(422, "invalid_request", NO_USER_MESSAGE)
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
        except ThreadRefused as exc:
            await send_error(send, exc.status, exc.code, exc.detail)
            return
        except RunRefused as exc:
            await send_refusal(send, exc)
            return
        base = snapshot_base(thread, request) if thread is not None else request.messages
        translator = Translator(
            request.thread_id,
            request.run_id,
            record=self._records(request),
            input_messages=base,
            snapshot_ids="h" if thread is not None else None,
        )
        finish = self._finishes(request.forwarded_props, thread is not None)
        await self._stream(scope, receive, send, run, translator, principal, finish)

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

    async def _stream(
        self,
        scope: dict[str, Any],
        receive: Any,
        send: Send,
        run: Any,
        translator: Translator,
        principal: str,
        finish: bool = False,
    ) -> None:
        """Stream one kernel RunStream as this AG-UI run (the door owns ``run`` from here),
        through the kernel's journal when it has one (so a client can come back)."""
        options = self.options
        source = self._journaled(run, translator, principal, finish)

        def encode(event: Any) -> bytes:
            if type(event) is QuestionAsked:  # the run is parked already: remember the interrupt before the client sees it
                self._remember(event.question, translator, run, principal)
            return translator.feed_sse(event)

        def close(error: str | None) -> bytes:
            """RUN_FINISHED (cancelled) or RUN_ERROR, unless the run already ended."""
            return encode_all(translator.finish(None if error is None else f"the AG-UI door failed: {error}"))

        stream = EventStream(source, encode, close=close, keepalive=options.keepalive, coalesce=options.coalesce)
        entry = self.runs[translator.run_id] = Streaming(translator.thread_id, principal, run)
        try:
            await stream(scope, receive, send)
        finally:
            if self.runs.get(translator.run_id) is entry:
                del self.runs[translator.run_id]

    def _journaled(self, run: Any, translator: Translator, principal: str, finish: bool) -> Any:
        """The run as the kernel's journal replays it (remembered for reattaching), or the
        run itself on a kernel without journals."""
        journals = getattr(self.kernel, "journals", None)
        if journals is None:
            return run
        try:
            journal = journals.start(run, on_disconnect="finish" if finish else "cancel")
        except ValueError:  # already journaled (never for a run this door started): read it directly
            return run
        after = journal.last_seq
        self.live.add(
            LiveRun(
                translator.run_id,
                translator.thread_id,
                principal,
                journal,
                after,
                translator.prefix,
                parent_run_id=translator.parent_run_id,
                carried=dict(translator.carried),
                snapshot_base=list(translator.input_messages),
                snapshot_ids=translator.snapshot_ids,
            )
        )
        return JournalRun(journal, run, after, finish)

    async def _running_on(self, principal: str, thread_id: str) -> dict[str, Any] | None:
        """The run going on in a thread, for the thread endpoint (the page reattaches to it)."""
        live = self.live.running_on(principal, thread_id)
        return None if live is None else {"runId": live.agui_run_id}

    async def reattach(self, scope: dict[str, Any], receive: Any, send: Send, run_id: str) -> None:
        """``GET /runs/{runId}/events``: the run's AG-UI events again (see :mod:`.reattach`)."""
        live = self.live.get(run_id, self.principal_of(scope))
        if live is None or self.kernel.journals.get(live.journal.run_id, live.principal) is not live.journal:
            await send_error(send, 404, "not_found", f"no run {clip(run_id)} to follow (unknown, or ended too long ago)")
            return
        headers = dict(scope.get("headers") or [])
        raw = _query_value(scope, "after") or headers.get(b"last-event-id", b"").decode("latin-1").strip()
        try:
            seen = start_after(live, raw or None)
        except ValueError as exc:
            await send_error(send, 422, "invalid_request", f"cursor: {exc}")
            return
        translator = Translator(
            live.thread_id,
            live.agui_run_id,
            id_prefix=live.id_prefix,
            record=True,
            input_messages=live.snapshot_base,
            parent_run_id=live.parent_run_id,
            carried=live.carried,
            snapshot_ids=live.snapshot_ids,
        )
        source = JournalRun(live.journal, live.journal, live.after, live.journal.on_disconnect == "finish")

        def encode(event: Any) -> bytes:
            frames = translator.feed_sse(event)
            return with_id(frames, live.journal.cursor(source.seq)) if source.seq > seen else b""

        def close(error: str | None) -> bytes:
            if source.seq <= seen and error is None:
                return b""
            return encode_all(translator.finish(None if error is None else f"the AG-UI door failed: {error}"))

        options = self.options
        await EventStream(source, encode, close=close, keepalive=options.keepalive, coalesce=options.coalesce)(
            scope, receive, send
        )

    # -- interrupts ------------------------------------------------------------------------
    def _remember(self, question: Question, translator: Translator, run: Any, principal: str = "local") -> None:
        if len(self.interrupts) >= 2 * self.kernel.limits.max_parked_runs:
            self._forget_closed()
        self.interrupts[question.id] = Interrupted(
            question, translator.thread_id, principal, translator.run_id, run, translator.open_calls()
        )

    def _forget_closed(self) -> None:
        """Drop interrupts whose run no longer waits (expired, cancelled, answered elsewhere)."""
        open_ids: set[str] = set()
        for run_id, principal in {(i.question.run_id, i.principal) for i in self.interrupts.values()}:
            open_ids.update(q.id for q in self.kernel.open_questions(run_id, principal=principal))
        for qid in [qid for qid in self.interrupts if qid not in open_ids]:
            del self.interrupts[qid]

    def _closed_reason(self, interrupt_id: str, principal: str) -> QuestionError:
        """Why ``interrupt_id`` cannot be answered here: the kernel's expired/answered, else unknown
        (an open question of another thread is unknown, as far as this client goes)."""
        try:
            self.kernel.check_question(interrupt_id, principal=principal)
        except QuestionError as exc:
            if exc.reason in ("expired", "answered"):
                return exc
        return QuestionError("unknown", f"no open interrupt {clip(interrupt_id)} on this thread")

    def _answers(self, request: ResumeRequest, principal: str) -> tuple[list[Answer], Interrupted]:
        """The kernel's answers for the resume entries, and the interrupt they continue from."""
        answers: list[Answer] = []
        first: Interrupted | None = None
        for interrupt_id, status, payload in request.entries:
            found = self.interrupts.get(interrupt_id)
            if found is None or found.thread_id != request.thread_id or found.principal != principal:
                raise self._closed_reason(interrupt_id, principal)
            if first is not None and found.question.run_id != first.question.run_id:
                raise QuestionError("invalid", "the entries answer interrupts of different runs; resume one run at a time")
            first = first or found
            answers.append(answer_for(found.question, status, payload))
        assert first is not None
        return answers, first

    async def resume(self, scope: dict[str, Any], receive: Any, send: Send, data: dict[str, Any]) -> None:
        try:
            request = build_resume(data)
        except InputError as exc:
            await send_error(send, 422, "invalid_request", str(exc))
            return
        if request.run_id in self.runs:
            await send_error(send, 409, "conflict", f"run {clip(request.run_id)} is already in progress")
            return
        principal = self.principal_of(scope)
        try:
            answers, parent = self._answers(request, principal)
            run = self.kernel.resume(answers, principal=principal, door=self.door_name)
        except QuestionError as exc:
            if exc.reason == "expired" and self._all_abandoned_expired(request, principal):
                await self._abandoned(send, request, principal)
                return
            status, code = ERRORS.get(exc.reason, (422, "invalid_resume"))
            await send_error(send, status, code, str(exc))
            return
        for answer in answers:
            self.interrupts.pop(answer.question_id, None)
            self.answered[answer.question_id] = answer.outcome
        while len(self.answered) > ANSWERED_MEMORY:
            self.answered.popitem(last=False)
        translator = Translator(
            request.thread_id,
            request.run_id,
            record=self._records(request),
            input_messages=request.messages,
            parent_run_id=parent.agui_run_id,
            carried=parent.carried,
        )
        finish = self._finishes(request.forwarded_props, getattr(self.kernel, "store", None) is not None)
        await self._stream(scope, receive, send, run, translator, principal, finish)

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
            found = self.interrupts.pop(interrupt_id, None)
            if found is not None and found.thread_id == request.thread_id and found.principal == principal:
                parent = parent or found.agui_run_id
        translator = Translator(request.thread_id, request.run_id, parent_run_id=parent)
        await send({"type": "http.response.start", "status": 200, "headers": SSE_HEADERS})
        await send({"type": "http.response.body", "body": encode_all(translator.finish()), "more_body": False})


def _query_value(scope: dict[str, Any], name: str) -> str:
    from urllib.parse import parse_qs

    values = parse_qs(scope.get("query_string", b"").decode("latin-1")).get(name)
    return values[-1] if values else ""


__all__ = ["AguiApp", "Interrupted"]
