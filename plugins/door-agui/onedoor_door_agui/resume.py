"""Resuming interrupted runs (see :mod:`.interrupts` for the answers, :mod:`.app` for the
routes): a RunAgentInput with ``resume`` answers a parked run's questions and streams the
rest of it as a new AG-UI run."""

from __future__ import annotations

from typing import Any, Awaitable, Callable, MutableMapping

from onedoor import Answer, QuestionError
from onedoor.journal import RemoteAnswer, shared_store
from onedoor.questions import clip
from onedoor.threads import keeps_state
from onedoor_transport_http.errors import send_error
from onedoor_transport_http.journal_stream import open_source
from onedoor_transport_http.sse import SSE_HEADERS

from . import elsewhere, segments
from .convert import InputError, ResumeRequest, build_resume
from .interrupts import answer_for
from .segments import Segment
from .threaded import final_state
from .translate import Translator, encode_all

Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


class ResumeRoutes:
    """The resume half of :class:`~.app.AguiApp` (it provides ``kernel``, ``door_name``,
    ``principal_of``, ``_records``, ``_finishes``, ``_stream`` and ``_send_stream``)."""

    kernel: Any
    door_name: str
    principal_of: Any
    _records: Any
    _finishes: Any
    _stream: Any
    _send_stream: Any

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
            if exc.reason == "unknown" and shared_store(self.kernel.store) is not None:
                await self._resume_elsewhere(scope, receive, send, request, principal, exc)
                return
            raise
        translator = Translator(
            request.thread_id,
            request.run_id,
            record=self._records(request),
            input_messages=request.messages,
            parent_run_id=parent.agui_run_id,
            carried=parent.left_open,
            final_state=final_state(run) if keeps_state(self.kernel.store) and run.thread is not None else None,
        )
        finish = self._finishes(request.forwarded_props, getattr(self.kernel, "store", None) is not None)
        await self._stream(scope, receive, send, run, translator, finish)

    async def _resume_elsewhere(self, scope: dict[str, Any], receive: Any, send: Send, request: ResumeRequest,
                                principal: str, unknown: QuestionError) -> None:
        """The run is parked on another server sharing the store (:mod:`.elsewhere`): answer
        it there and stream its continuation from the journal, as a local resume's."""
        try:
            journal, parent, asked, left_open = await elsewhere.parked_segment(self.kernel.journals, request, principal)
        except QuestionError:
            raise unknown from None
        answers = elsewhere.answers_of(request, asked)
        threaded = keeps_state(self.kernel.store) and journal.thread_id is not None
        state = elsewhere.FinalState(self.kernel.threads, principal, journal.thread_id) if threaded else None
        translator = Translator(
            request.thread_id, request.run_id, record=self._records(request), input_messages=request.messages,
            parent_run_id=parent.agui_run_id, carried=left_open, final_state=state,
        )
        segment = Segment(request.run_id, request.thread_id, journal.last_seq, translator.prefix,
                          parent_run_id=parent.agui_run_id, carried=dict(left_open),
                          snapshot_base=list(request.messages))
        try:
            answered = await self.kernel.answer(answers, principal=principal, door=self.door_name, run_id=journal.run_id,
                                                names=[request.run_id],
                                                notes=elsewhere.notes_with(journal, parent, left_open, segment))
        except QuestionError as exc:
            if exc.reason == "expired" and all(status == "cancelled" for _, status, _ in request.entries):
                await self._abandoned_run(send, request, parent.agui_run_id)
                return
            raise
        if not isinstance(answered, RemoteAnswer):  # it came back here meanwhile: a local resume
            await self._stream(scope, receive, send, answered, translator, True)
            return
        source = elsewhere.EndingAware(await open_source(answered.journal, answered.after), state)
        await self._send_stream(scope, receive, send, source, lambda pair: translator.feed_sse(pair[1]), translator)

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
        await self._abandoned_run(send, request, parent)

    async def _abandoned_run(self, send: Send, request: ResumeRequest, parent: str | None) -> None:
        translator = Translator(request.thread_id, request.run_id, parent_run_id=parent)
        await send({"type": "http.response.start", "status": 200, "headers": SSE_HEADERS})
        await send({"type": "http.response.body", "body": encode_all(translator.finish()), "more_body": False})


__all__ = ["ResumeRoutes"]
