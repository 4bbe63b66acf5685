"""A resume whose run is parked on another server sharing the store (``kernel.answer``).

The interrupted AG-UI run is the last segment of a run another server writes on the
resume's thread (``kernel.journals.others_on_thread``). Reading that segment from the
store gives its questions and the tool calls it left open (translated again, as its
reader got them). The answers go to the server holding the run with the new AG-UI run's
segment and runId (``names``/``notes``: that server keeps them before the continuation's
first event, so a reader finds the new run through any server); the continuation is read
here from the run's journal and translated as a local resume's stream is.
"""

from __future__ import annotations

from typing import Any

from onedoor import Answer, QuestionAsked, QuestionError, RunFailed, RunFinished, StateDelta, StateSnapshot
from onedoor.questions import Question
from onedoor.state import apply_patch

from . import segments
from .convert import ResumeRequest
from .interrupts import answer_for
from .segments import Segment
from .translate import Translator


async def parked_segment(journals: Any, request: ResumeRequest, principal: str) -> tuple[Any, Segment, dict[str, Question], Any]:
    """The journal another server holds whose interrupted AG-UI run the resume's entries
    answer, that run, its questions and the calls it left open; QuestionError("unknown")
    when no run parked elsewhere on the thread asked them."""
    wanted = {interrupt_id for interrupt_id, _, _ in request.entries}
    for journal in await journals.others_on_thread(request.thread_id, principal):
        parent = segments.last(journal)
        if parent is None or parent.thread_id != request.thread_id or not await segments.parked(journal):
            continue
        asked, left_open = await _read_segment(journal, parent)
        if wanted <= asked.keys():
            return journal, parent, asked, left_open
    # a run that asked them and went on (answered) or ended (expired): the kernel says which
    for journal in await journals.others_on_thread(request.thread_id, principal, ended=True):
        kept = segments.all_of(journal)
        if not kept or kept[-1].thread_id != request.thread_id:
            continue
        asked = {}
        for segment in kept:
            asked.update((await _read_segment(journal, segment))[0])
        if wanted <= asked.keys():
            return journal, kept[-1], asked, {}
    raise QuestionError("unknown", "no open interrupt of these ids on this thread")


async def _read_segment(journal: Any, segment: Segment) -> tuple[dict[str, Question], dict[str, tuple[str, str]]]:
    """The questions a parked segment asked, and the calls open at its interrupt (what its
    own translation's ``open_calls()`` said there)."""
    translator = Translator(segment.thread_id, segment.agui_run_id, id_prefix=segment.id_prefix,
                            parent_run_id=segment.parent_run_id, carried=segment.carried)
    asked: dict[str, Question] = {}
    left_open = dict(segment.left_open)
    reader = journal.follow(after=segment.after)
    try:
        async for _, event in reader:
            translator.feed(event)
            if type(event) is QuestionAsked:
                asked[event.question.id] = event.question
                left_open = translator.open_calls()
            if isinstance(event, (RunFinished, RunFailed)):
                break
    finally:
        await reader.aclose()
    return asked, left_open


def answers_of(request: ResumeRequest, asked: dict[str, Question]) -> list[Answer]:
    return [answer_for(asked[interrupt_id], status, payload) for interrupt_id, status, payload in request.entries]


def notes_with(journal: Any, parent: Segment, left_open: dict[str, tuple[str, str]], segment: Segment) -> dict[str, Any]:
    """The door's notes of the run once ``segment`` continues it (its parent's open calls kept)."""
    kept = segments.all_of(journal)
    if kept and kept[-1].agui_run_id == parent.agui_run_id:
        kept[-1].left_open = left_open
    return {segments.NOTE: [s.to_json() for s in kept] + [segment.to_json()]}


class FinalState:
    """``Translator(final_state=...)`` for a continuation read from the store: the state its
    events made, and (read by :meth:`refresh` before the ending is translated) the thread's."""

    def __init__(self, threads: Any, principal: str, thread_id: str) -> None:
        self.threads, self.principal, self.thread_id = threads, principal, thread_id
        self.streamed: dict[str, Any] | None = None
        self.found: tuple[dict[str, Any], int, dict[str, Any] | None] | None = None

    def seen(self, event: Any) -> None:
        if type(event) is StateSnapshot:
            self.streamed = dict(event.state)
        elif type(event) is StateDelta:
            self.streamed = apply_patch(self.streamed or {}, list(event.ops))

    async def refresh(self) -> None:
        try:
            thread = await self.threads.get(self.principal, self.thread_id)
        except Exception:  # noqa: BLE001 - no thread (deleted meanwhile): the ending says nothing of state
            self.found = None
            return
        self.found = (thread.state, thread.state_version, self.streamed)

    def __call__(self) -> tuple[dict[str, Any], int, dict[str, Any] | None] | None:
        return self.found


class EndingAware:
    """A journal source that reads the thread's state (:class:`FinalState`) before it hands
    over the continuation's ending."""

    def __init__(self, source: Any, state: FinalState | None) -> None:
        self.source, self.state = source, state

    def __getattr__(self, name: str) -> Any:
        return getattr(self.source, name)

    async def __aenter__(self) -> "EndingAware":
        await self.source.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.source.__aexit__(*exc)

    def __aiter__(self) -> Any:
        return self._read()

    async def _read(self) -> Any:
        async for pair in self.source:
            if self.state is not None:
                self.state.seen(pair[1])
                if isinstance(pair[1], (RunFinished, RunFailed)):
                    await self.state.refresh()
            yield pair


__all__ = ["EndingAware", "FinalState", "answers_of", "notes_with", "parked_segment"]
