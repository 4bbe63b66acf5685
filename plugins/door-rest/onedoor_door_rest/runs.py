"""How the REST door starts runs, continues suspended ones, and answers for them.

A run that asks (a tool approval, a question) gets the door's ``SuspendAsker``: its
response ends with the question (``status: needs_input`` / a ``question_asked`` event)
and the run waits, parked in the kernel, for ``POST /runs/{run_id}/answers``. Streamed runs
go through the kernel's journal, so every event carries its cursor and a client that lost
the stream picks it up at ``GET /runs/{run_id}/events``.
"""

from __future__ import annotations

import asyncio
from typing import Any

from onedoor import (
    STOP_SUSPENDED,
    Answer,
    QuestionAnswered,
    QuestionAsked,
    ReasoningDelta,
    RemoteAnswer,
    RunFailed,
    RunFinished,
    SuspendAsker,
    TextDelta,
    ToolFinished,
    ToolStarted,
)
from onedoor.events import ReplyPart, StateDelta, StateSnapshot, event_to_dict
from onedoor.journal import shared_store
from onedoor.observe import trace_meta
from onedoor_transport_http.journal_stream import JournalSource
from onedoor_transport_http.sse import cancel_on_disconnect

from . import RestOptions
from .bodies import ChatInput
from .models import AnswersRequest
from .responses import error_response, json_response
from .sse import EventStreamResponse, closing, journal_encoder


class Reply:
    """What ``/chat`` (and a JSON resume) gathers from a run's events.

    ``known_calls``: tool calls announced in an earlier response of the same run (the
    approvals being answered), so a call that finishes in this one keeps its arguments.
    """

    def __init__(self, known_calls: dict[str, tuple[str, Any]] | None = None) -> None:
        self.reasoning: list[str] = []
        self.calls: dict[str, dict[str, Any]] = {}  # call id -> ToolCallRecord JSON
        self.questions: list[dict[str, Any]] = []
        self.answers: list[dict[str, Any]] = []
        self.known_calls = known_calls or {}
        self.text: list[str] = []  # this response's text since its last part
        self.parts: list[dict[str, Any]] = []  # the reply as parts, once it holds a part that is not text
        self.state_events: list[dict[str, Any]] = []

    def add(self, event: Any) -> None:
        kind = type(event)
        if kind is TextDelta:
            self.text.append(event.text)
        elif kind is ReplyPart:
            self._flush_text()
            self.parts.append(event.part.to_dict())
        elif kind is StateSnapshot or kind is StateDelta:
            self.state_events.append(event_to_dict(event))
        elif kind is ReasoningDelta:
            self.reasoning.append(event.text)
        elif kind is ToolStarted:
            self.calls[event.call_id] = _call(event.call_id, event.name, event.arguments)
        elif kind is ToolFinished:
            record = self.calls.get(event.call_id)
            if record is None:
                _, arguments = self.known_calls.get(event.call_id, (event.name, None))
                record = self.calls[event.call_id] = _call(event.call_id, event.name, arguments)
            record.update(result=event.result, is_error=event.is_error, parts=[p.to_dict() for p in event.parts])
        elif kind is QuestionAsked:
            self.questions.append(event.question.to_dict())
        elif kind is QuestionAnswered:
            self.answers.append(event.answer.to_dict())

    def _flush_text(self) -> None:
        if self.text:
            self.parts.append({"type": "text", "text": "".join(self.text)})
            self.text.clear()

    def reply_parts(self, whole: str) -> list[dict[str, Any]] | None:
        """The reply as parts, its text included (``whole``: all of it, earlier responses' too),
        when it holds a part that is not text; None otherwise."""
        if not self.parts:
            return None
        self._flush_text()
        shown = sum(len(p["text"]) for p in self.parts if p["type"] == "text")
        earlier = whole[: max(0, len(whole) - shown)]  # the text a resumed run wrote before this response
        return ([{"type": "text", "text": earlier}] if earlier else []) + self.parts

    def response(self, outcome: Any, resume_url: str, thread_id: str | None = None, state: Any = None) -> Any:
        if isinstance(outcome, RunFailed):
            return error_response(502, "run_failed", outcome.error)
        assert isinstance(outcome, RunFinished)
        if outcome.stop_reason == "cancelled":
            return error_response(503, "cancelled", "the run was cancelled before it finished", {"Retry-After": "1"})
        body: dict[str, Any] = {
            "run_id": outcome.run_id,
            "reply": outcome.text,
            "stop_reason": outcome.stop_reason,
            "tool_calls": list(self.calls.values()),
            "reasoning": "".join(self.reasoning),
            "status": "completed",
        }
        if outcome.stop_reason == STOP_SUSPENDED:
            body.update(status="needs_input", questions=self.questions, resume_url=resume_url)
        if self.answers:
            body["answers"] = self.answers
        if thread_id is not None:
            body["thread_id"] = thread_id
        parts = self.reply_parts(outcome.text)
        if parts is not None:
            body["parts"] = parts
        body["usage"] = [u.to_dict() for u in outcome.usage]
        if state is not None:
            body["state"] = state
            body["state_events"] = self.state_events
        return json_response(body)


def _call(call_id: str, name: str, arguments: Any) -> dict[str, Any]:
    """A tool call as ToolCallRecord JSON, before its result."""
    return {"call_id": call_id, "name": name, "arguments": arguments, "result": None, "is_error": False, "parts": []}


def resume_url(request: Any, run_id: str) -> str:
    return f"{request.scope.get('root_path', '')}/runs/{run_id}/answers"


class Runs:
    """The door's runs: started, resumed, answered as JSON or as events."""

    def __init__(self, kernel: Any, options: RestOptions) -> None:
        self.kernel = kernel
        self.options = options
        self.asker = SuspendAsker(ttl=options.question_ttl or None, fallback=options.ask_fallback)

    def start(self, given: ChatInput, principal: str, headers: Any) -> Any:
        """A run of a stateless chat (the caller keeps the history)."""
        return self.kernel.run(given.message, history=given.history or [], door="rest", asker=self.asker,
                               principal=principal, state=given.state, meta=trace_meta(headers))

    def start_on_thread(self, given: ChatInput, thread: Any, principal: str, headers: Any) -> Any:
        """A turn on a stored thread: the kernel reads its history and keeps the turn in it."""
        return self.kernel.run(given.message, thread=thread, door="rest", asker=self.asker, principal=principal,
                               state=given.state, state_version=given.state_version, meta=trace_meta(headers))

    async def answer(self, run_id: str, body: AnswersRequest, principal: str) -> tuple[Any, dict[str, tuple[str, Any]]]:
        """The run's next response, after the answers, and the tool calls being approved;
        QuestionError (nothing answered) if an answer names a question that is not this
        run's (or the run is another principal's), or the kernel refuses the answers. A run
        parked on another server sharing the store: a :class:`RemoteAnswer` (its journal)."""
        answers = [Answer(a.question_id, a.outcome, a.value) for a in body.answers]
        waiting = self.waiting(run_id, principal)  # (before the answers close them)
        got = await self.kernel.answer(answers, principal=principal, door="rest", run_id=run_id)
        asked = got.questions if isinstance(got, RemoteAnswer) else waiting
        return got, {q.tool.id: (q.tool.name, q.tool.arguments) for q in asked if q.tool is not None}

    def waiting(self, run_id: str, principal: str) -> list[Any]:
        """The open questions of a suspended run of ``principal``."""
        return list(self.kernel.open_questions(run_id, principal=principal))

    async def reply_json(self, run: Any, request: Any, known_calls: dict[str, tuple[str, Any]] | None = None) -> Any:
        """Read this response of the run to its end and answer JSON (with on_disconnect
        "finish", a client going away does not stop the run: it ends into its thread). With a
        store that shares journals the run goes through its journal, so that another server
        can answer its questions; a run another server holds is read from its journal."""
        if isinstance(run, RemoteAnswer):
            return await self._remote_json(run, request, known_calls)
        watcher = asyncio.get_running_loop().create_task(self._watch(request, run))
        reply = Reply(known_calls)
        event: Any = None
        try:
            if shared_store(self.kernel.store) is not None:
                journal = self.kernel.journals.start(run, on_disconnect=self.options.on_disconnect)
                async for _, event in journal.follow(journal.last_seq):
                    reply.add(event)
            else:
                async with run:
                    async for event in run:
                        reply.add(event)
        finally:
            watcher.cancel()
        # a suspended response's ending is its last event (the run itself has no outcome yet)
        outcome = event if type(event) in (RunFinished, RunFailed) else run.outcome
        thread = run.thread
        return reply.response(outcome, resume_url(request, run.run_id), thread.id if thread is not None else None,
                              run.state)

    async def _remote_json(self, answered: RemoteAnswer, request: Any, known_calls: Any) -> Any:
        """The JSON reply of a run another server holds, read from its journal after the answers."""
        reply, event = Reply(known_calls), None
        async for _, event in answered.journal.follow(answered.after):
            reply.add(event)
        if type(event) not in (RunFinished, RunFailed):  # the store was out too long to read the rest
            return error_response(503, "cancelled", "the run's events could not be read; read its events again",
                                  {"Retry-After": "1"})
        return reply.response(event, resume_url(request, answered.run_id), answered.journal.thread_id)

    async def _watch(self, request: Any, run: Any) -> None:
        if self.options.on_disconnect == "cancel":
            await cancel_on_disconnect(request.receive, run)

    def reply_stream(self, run: Any) -> Any:
        """The run as SSE, journaled: every event carries its cursor, and a client that lost
        the stream can pick it up again at GET /runs/{run_id}/events."""
        if isinstance(run, RemoteAnswer):  # another server holds the run: its journal, from the answers on
            return self.follow_stream(JournalSource(run.journal, after=run.after))
        journal = self.kernel.journals.start(run, on_disconnect=self.options.on_disconnect)
        # a resumed run goes on in the journal of its first response: this one sends what comes next
        # (the kernel's task has not run yet, so last_seq is where the earlier responses ended)
        return self.follow_stream(JournalSource(journal, after=journal.last_seq))

    def follow_stream(self, source: JournalSource) -> Any:
        return EventStreamResponse(
            source, keepalive=self.options.keepalive, encode=journal_encoder(source.journal), close=closing(source)
        )


__all__ = ["Reply", "Runs", "resume_url"]
