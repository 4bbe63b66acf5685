"""The ``ask`` tool: one MCP tool call is one agent run.

Text deltas and tool calls go out as progress notifications while the run goes on
(only when the client sent a progress token). ``notifications/cancelled`` cancels the
SDK's handler task; the run itself is consumed in a task of its own, so a cancelled
call can still stop the backend properly (``run.cancel()``, then wait for the end).

The message may carry ``attachments`` (:mod:`.attachments`), checked by the kernel before
any run; the agent's output parts come back as MCP content blocks after the reply's text
(:mod:`.blocks`). The result's ``structuredContent`` (:mod:`.schema`) and its
``_meta["onedoor/usage"]`` carry the run's token usage; on a stored thread the
structured content also holds the thread's shared state as stored after the call. The
request's W3C trace context (``traceparent`` / ``tracestate`` in its ``_meta``) goes to the
kernel with the run, for observers.

The agent's questions (tool approvals, free-form questions) go to the client as
elicitation within the call when it declared the capability (:mod:`.elicit`); the run
waits meanwhile, so no progress goes out until the answer came. On a 2026-07-28
request, where the server cannot send the client a request, they go out in the call's
result instead (``input_required``) and come back in a retried call (:mod:`.rounds`).
Otherwise the door's ``ask_fallback`` policy answers them. The result lists every answer and says in words
which ones no person gave (:mod:`.answers`).

A call may run on a stored thread (``thread`` / ``new_thread``, :mod:`.threads`), owned
by the caller's principal (the HTTP request's, else ``local``): the kernel reads the
history from the thread and appends the call's turn; the result names the thread.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from onedoor import Asker, Kernel, Part, PolicyAsker, RunRefused, ServeContext, trace_meta
from onedoor.run.admission import check_content
from onedoor.threads import keeps_state
from onedoor.wire.jsonrpc import INVALID_PARAMS

from .answers import AnswerLog
from .attachments import to_parts
from .elicit import live_asker
from .reading import Reading
from .rounds import Rounds, refusal
from .schema import ROLES, input_schema, output_schema
from .sdk import InputRequired, Outcome, Peer, Progress, ProtocolError, current_session
from .threads import check_thread_arguments, discard_unused, open_thread, thread_note

ARGUMENTS = {"message", "attachments", "history", "thread", "new_thread"}
REFUSED_META = "onedoor/refused"  # key in a refused call's _meta: the kernel's reason


@dataclass(frozen=True)
class AskRequest:
    """The checked arguments of one call."""

    message: str
    history: list[dict[str, Any]]
    thread: str | None = None  # continue this stored thread
    new_thread: bool = False  # start a stored thread
    attachments: list[dict[str, Any]] = field(default_factory=list)  # onedoor part dicts, after the message's text


def refused(exc: RunRefused) -> Outcome:
    """A run the kernel refused (before it started), as the tool error the calling model reads."""
    hint = f" (retry after {exc.retry_after:g} s)" if exc.retry_after else ""
    return Outcome(f"The agent refused the request ({exc.reason}): {exc}{hint}", is_error=True,
                   meta={REFUSED_META: exc.reason})


class AskTool:
    """Runs the agent for one ``tools/call``; knows nothing about the SDK version."""

    def __init__(
        self, kernel: Kernel, *, name: str, description: str, door: str = "mcp", progress_tools: bool = True,
        ask_fallback: str = "deny",
    ) -> None:
        self.kernel = kernel
        self.name = name
        self.description = description
        self.door = door
        self.progress_tools = progress_tools
        self.ask_fallback = ask_fallback
        self.active: set[Any] = set()  # runs in progress
        self.rounds = Rounds(kernel, door=door, progress_tools=progress_tools, fallback=ask_fallback)
        self.closing = False

    def cancel_all(self) -> None:
        """The session is ending: cancel every run in progress and refuse new ones."""
        self.closing = True
        for run in list(self.active):
            run.cancel()

    def definitions(self) -> list[dict[str, Any]]:
        return [
            {
                "name": self.name,
                "title": "Ask the agent",
                "description": self.description,
                "inputSchema": input_schema(self.kernel.backend.accepts),
                "outputSchema": output_schema(),
                "annotations": {"title": "Ask the agent", "readOnlyHint": False, "openWorldHint": True},
            }
        ]

    @staticmethod
    def check_arguments(arguments: Any) -> AskRequest:
        """The call's arguments, checked; ValueError with a message for the caller."""
        if not isinstance(arguments, dict):
            raise ValueError("arguments must be an object with a 'message' string")
        unknown = sorted(set(arguments) - ARGUMENTS)
        if unknown:
            raise ValueError(
                f"unknown argument(s): {', '.join(unknown)}; expected 'message' and optional 'attachments', "
                "'history', 'thread' or 'new_thread'"
            )
        message = arguments.get("message")
        if not isinstance(message, str) or not message.strip():
            raise ValueError("'message' is required and must be a non-empty string")
        history = arguments.get("history")
        if history is None:
            history = []
        if not isinstance(history, list):
            raise ValueError("'history' must be an array of {role, content} objects")
        for index, item in enumerate(history):
            if not isinstance(item, dict) or item.get("role") not in ROLES or not isinstance(item.get("content"), str):
                raise ValueError(
                    f"history[{index}] must be an object with 'role' ({', '.join(ROLES)}) and 'content' (a string)"
                )
        thread, new_thread = check_thread_arguments(arguments)
        return AskRequest(message, history, thread, new_thread, to_parts(arguments.get("attachments")))

    def message_of(self, request: AskRequest) -> str | list[Part]:
        """What goes to ``kernel.run``: the text, or the text and the attachments as checked
        parts (RunRefused before anything runs: ``invalid``, ``too_large``, ``unsupported_content``)."""
        if not request.attachments:
            return request.message
        backend = self.kernel.backend
        _text, parts = check_content(
            self.kernel.limits, [{"type": "text", "text": request.message}, *request.attachments],
            backend.accepts, backend.name,
        )
        return list(parts)

    def asker_for(self, peer: Peer | None) -> Asker:
        """Elicitation for a client that declared it; the ``ask_fallback`` policy otherwise."""
        return self._asking(peer)[0]

    def _asking(self, peer: Peer | None) -> tuple[Asker, AnswerLog]:
        """The run's asker, and the log of its answers (which knows why the client cannot be asked)."""
        cannot_ask = "nobody is connected who can answer" if peer is None else peer.why_not_asked
        if peer is not None and cannot_ask is None:
            return live_asker(peer), AnswerLog(None, self.ask_fallback)
        return PolicyAsker(self.ask_fallback), AnswerLog(cannot_ask, self.ask_fallback)

    async def call(
        self, name: str, arguments: Any, progress: Progress | None, peer: Peer | None = None,
    ) -> Outcome | InputRequired:
        if name != self.name:
            raise ProtocolError(INVALID_PARAMS, f"Unknown tool: {name!r}; this server offers {self.name!r}")
        try:
            request = self.check_arguments(arguments if arguments is not None else {})
        except ValueError as exc:  # a tool execution error, so the calling model can correct itself
            return Outcome(f"Invalid arguments for {self.name!r}: {exc}", is_error=True)
        if self.closing:
            return Outcome("The session is closing; the call was not run.", is_error=True)
        principal = ServeContext.principal_of(peer.scope if peer is not None else None)
        if peer is not None and peer.retry is not None:  # the answers to a run's questions (2026-07-28)
            if not peer.rounds:
                raise refusal("not_a_retry", "inputResponses and requestState are for MCP 2026-07-28 requests")
            return await self.rounds.retry(peer.retry, principal, progress, peer, self._finish)
        try:
            message = self.message_of(request)
        except RunRefused as exc:
            return refused(exc)
        thread = None
        if request.thread is not None or request.new_thread:
            try:
                thread = await open_thread(self.kernel.threads, principal, request.thread, request.new_thread)
            except ValueError as exc:
                return Outcome(f"Cannot use the thread: {exc}", is_error=True)
        by_rounds = peer is not None and peer.rounds and peer.can_elicit
        asker, answers = (self.rounds.asker, self.rounds.answer_log()) if by_rounds else self._asking(peer)
        try:
            run = self.kernel.run(
                message, history=None if thread is not None else request.history, thread=thread,
                principal=principal, door=self.door, asker=asker, meta=trace_meta(peer.meta if peer is not None else None),
            )
        except RunRefused as exc:
            if thread is not None and request.new_thread:
                await discard_unused(self.kernel.threads, principal, thread)
            return refused(exc)
        thread_id = thread.id if thread is not None else None
        if by_rounds:  # (a run parked for answers is no longer the session's: a retry may come on another)
            self.active.add(run)
            try:
                return await self.rounds.first(run, progress, answers, thread_id, peer, self._finish)
            finally:
                self.active.discard(run)
        return await self._read(run, progress, answers, thread_id, peer)

    async def _read(
        self, run: Any, progress: Progress | None, answers: AnswerLog, thread_id: str | None, peer: Peer | None,
    ) -> Outcome:
        """Read ``run`` to its end (its questions asked by elicitation or answered by policy)."""
        self.active.add(run)
        session = current_session()
        if session is not None:
            session.add(run.cancel)
        consumer = asyncio.ensure_future(self._consume(run, progress, answers, thread_id))
        gone = peer.gone if peer is not None else None
        watcher = asyncio.ensure_future(_cancel_when(gone, run)) if gone is not None else None

        def done(_: Any) -> None:
            self.active.discard(run)
            if session is not None:
                session.discard(run.cancel)
            if watcher is not None:
                watcher.cancel()

        consumer.add_done_callback(done)
        try:
            return await asyncio.shield(consumer)
        except BaseException:
            # Cancelled by the client (notifications/cancelled) or the session closing:
            # stop the backend for real and wait for it before letting go.
            run.cancel()
            await _wait_shielded(consumer)
            raise

    async def _consume(self, run: Any, progress: Progress | None, answers: AnswerLog, thread_id: str | None) -> Outcome:
        return self._finish(await self._events(run, progress, answers), run, answers, thread_id)

    def _finish(self, outcome: Outcome, run: Any, answers: AnswerLog, thread_id: str | None) -> Outcome:
        """The outcome with what every result says: the thread, its state (``run``: the stream
        read last, None when another server ran it), who answered the agent's questions."""
        if thread_id is not None:  # the thread is named on every outcome, so the caller can go on
            outcome.notes = (*outcome.notes, thread_note(thread_id))
            if outcome.structured is not None:
                outcome.structured["thread"] = thread_id
        if outcome.structured is not None and run is not None:
            outcome.structured.update(self._state_of(run, thread_id is not None))
        if answers.answers:  # who answered the agent's questions, on every outcome
            note = answers.note()
            if note is not None:
                outcome.notes = (*outcome.notes, note)
            if outcome.structured is not None:
                outcome.structured["answers"] = answers.records()
        return outcome

    def _state_of(self, run: Any, on_thread: bool) -> dict[str, Any]:
        """The state for the structured content: the thread's as stored after the run (it
        went before the terminal event), or the run's own on a call without a thread."""
        if on_thread:
            thread = run.thread
            if thread is None or not keeps_state(self.kernel.store):
                return {}
            return {"state": thread.state, "state_version": thread.state_version}
        return {"state": run.state} if run.state is not None else {}

    async def _events(self, run: Any, progress: Progress | None, answers: AnswerLog) -> Outcome:
        reading = Reading(run.run_id, progress, answers, self.progress_tools)
        async with run:
            async for event in run:
                outcome = await reading.take(event, cancelled=run.cancelled)
                if outcome is not None:
                    return outcome
        return Outcome("The agent run ended without a result.", is_error=True)


async def _cancel_when(gone: Any, run: Any) -> None:
    """Cancel ``run`` once its HTTP client has disconnected (``gone`` is set)."""
    await gone.wait()
    run.cancel()


async def _wait_shielded(task: asyncio.Future) -> None:
    """Wait for ``task`` even while the caller is being cancelled."""
    import anyio

    with anyio.CancelScope(shield=True):
        try:
            await asyncio.wait({task})
        except BaseException:  # noqa: BLE001
            pass
    if task.done() and not task.cancelled():
        task.exception()  # mark retrieved
