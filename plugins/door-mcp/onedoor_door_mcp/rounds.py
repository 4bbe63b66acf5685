"""The agent's questions as multi-round-trip requests (MCP 2026-07-28).

A 2026-07-28 request has no channel for a request from the server, so a client that
declared form-mode elicitation is asked in the call's result. The run gets a
``SuspendAsker`` and goes through the kernel's journal; when it asks, its response ends
with the question and the run waits, parked in the kernel, while ``tools/call`` answers
``resultType: "input_required"``: ``inputRequests`` holds one ``elicitation/create`` per
open question (keyed by the question's id; the same form as :mod:`.elicit` sends) and
``requestState`` names the parked run (its id, the questions, where its journal was). The
SDK seals the state (:mod:`.keys`) bound to the tool's name, its arguments and the
caller's principal.

The client retries the same call with ``inputResponses`` and the state: each response is
mapped to an answer as an elicitation reply is (:func:`.elicit.answer_for`), the answers go
to ``kernel.answer`` (which, with a store that shares journals, carries them to the server
holding the run) and the call reads the run on, through its journal (this server's, or
another server's through the store), to its end (the tool result) or its next questions
(another ``input_required``). The result is built from every round's
events; progress goes out for the new ones only.

A retry the door cannot take is answered -32602 with ``data.reason``, and nothing is
answered: ``missing_request_state``, ``invalid_request_state``, ``missing_input_response``,
``unknown_input_response``, ``not_elicitation``, ``invalid_answer`` (a decision that is not
a choice, content outside the form: the run still waits, a corrected retry is taken),
``unknown_question`` (an unknown run, another principal's, or one that ended),
``expired_question``, ``answered_question``, ``not_resumed`` (the kernel refused, e.g. it
is draining). Declining or cancelling are answers, as with elicitation (approvals:
``reject_once``; questions: ``decline`` / ``cancel``).
"""

from __future__ import annotations

import asyncio
import json
from contextlib import aclosing
from dataclasses import dataclass
from typing import Any, Callable

from onedoor import (
    STOP_SUSPENDED,
    CursorExpired,
    Kernel,
    QuestionError,
    RemoteAnswer,
    RunFinished,
    RunRefused,
    SuspendAsker,
)
from onedoor.journal import RemoteJournal
from onedoor.wire.jsonrpc import INVALID_PARAMS

from .answers import AnswerLog
from .elicit import answer_for, request_for
from .reading import Reading
from .sdk import NOT_ELICITATION, InputRequired, InputRound, Outcome, Peer, Progress, ProtocolError

STATE_VERSION = 1
REMOTE_WAIT = 30.0  # seconds a retry waits for another server's run to write on after the answers
QUESTION_REASONS = {"unknown": "unknown_question", "expired": "expired_question", "answered": "answered_question",
                    "invalid": "invalid_answer"}
Finish = Callable[[Outcome, Any, AnswerLog, "str | None"], Outcome]  # (outcome, stream or None, answers, thread id)


def refusal(reason: str, message: str) -> ProtocolError:
    """A retry the door does not take: -32602 with ``data.reason``."""
    return ProtocolError(INVALID_PARAMS, message, {"reason": reason})


@dataclass(frozen=True)
class Asked:
    """A question as the state keeps it: what mapping an answer needs (:func:`.elicit.answer_for`)."""

    id: str
    kind: str
    choices: tuple[str, ...] = ()


@dataclass(frozen=True)
class RoundState:
    """What ``requestState`` says (sealed by the SDK): the parked run, the journal number of
    the ending that asked, its open questions and the run's thread."""

    run_id: str
    seq: int
    questions: tuple[Asked, ...]
    thread: str | None = None

    def encode(self) -> str:
        questions = [[q.id, q.kind, list(q.choices)] for q in self.questions]
        return json.dumps({"v": STATE_VERSION, "run": self.run_id, "seq": self.seq, "q": questions,
                           "thread": self.thread}, separators=(",", ":"))

    @classmethod
    def decode(cls, text: str) -> RoundState:
        """The state ``encode`` made; ValueError for anything else."""
        try:
            data = json.loads(text)
            run_id, seq, raw, thread = data["run"], data["seq"], data["q"], data.get("thread")
            questions = tuple(Asked(str(q[0]), str(q[1]), tuple(str(c) for c in q[2])) for q in raw)
        except (ValueError, KeyError, TypeError, IndexError):
            raise ValueError("not a state this server made") from None
        if data.get("v") != STATE_VERSION or not isinstance(run_id, str) or type(seq) is not int or not questions:
            raise ValueError("not a state this server made")
        return cls(run_id, seq, questions, thread if isinstance(thread, str) else None)


class Rounds:
    """Runs whose questions go to the client in the call's result (see the module's docstring)."""

    def __init__(self, kernel: Kernel, *, door: str, progress_tools: bool, fallback: str) -> None:
        self.kernel = kernel
        self.door = door
        self.progress_tools = progress_tools
        self.fallback = fallback
        self.asker = SuspendAsker(fallback=fallback)  # (past max_parked_runs, the fallback policy answers)

    def answer_log(self) -> AnswerLog:
        return AnswerLog(None, self.fallback)

    async def first(
        self, run: Any, progress: Progress | None, answers: AnswerLog, thread_id: str | None, peer: Peer | None,
        finish: Finish,
    ) -> Outcome | InputRequired:
        """Read a new run (started with :attr:`asker`) to its end or its first questions."""
        journal = self.kernel.journals.start(run, on_disconnect="cancel")
        reading = Reading(run.run_id, progress, answers, self.progress_tools)
        return await self._follow(journal, 0, reading, run, thread_id, peer, finish)

    async def retry(
        self, retry: InputRound, principal: str, progress: Progress | None, peer: Peer, finish: Finish,
    ) -> Outcome | InputRequired:
        """Answer a parked run with a retried call's input responses, and read it on."""
        if retry.state is None:
            raise refusal("missing_request_state", "inputResponses came without the requestState they answer")
        try:
            state = RoundState.decode(retry.state)
        except ValueError as exc:
            raise refusal("invalid_request_state", f"Invalid requestState: {exc}") from None
        answers = self._answers(state, retry.responses or {}, f"mcp:{peer.client_name}" if peer.client_name else "mcp")
        try:
            got = await self.kernel.answer(answers, principal=principal, door=self.door, run_id=state.run_id)
        except QuestionError as exc:
            raise refusal(QUESTION_REASONS.get(exc.reason, "invalid_answer"), f"The answers were not taken: {exc}") from None
        except RunRefused as exc:
            raise refusal("not_resumed", f"The run could not go on ({exc.reason}): {exc}") from None
        if isinstance(got, RemoteAnswer):  # another server holds the run: read it on through the shared journal
            journal: Any = got.journal
            stream: Any = None
        else:  # the resumed run goes on in its journal here
            journal, stream = self.kernel.journals.start(got, on_disconnect="cancel"), got
        reading = Reading(state.run_id, progress, self.answer_log(), self.progress_tools)
        return await self._follow(journal, state.seq, reading, stream, state.thread, peer, finish)

    @staticmethod
    def _answers(state: RoundState, responses: dict[str, tuple[str, Any]], by: str) -> list[Any]:
        """The answers the responses give, one per open question; a refusal for a response
        missing, unknown or unusable (nothing is answered then)."""
        ids = {q.id for q in state.questions}
        unknown = sorted(key for key in responses if key not in ids)
        if unknown:
            raise refusal("unknown_input_response", f"inputResponses has keys no question of this round has: "
                          f"{', '.join(repr(k[:80]) for k in unknown[:5])}")
        answers = []
        for question in state.questions:
            if question.id not in responses:
                raise refusal("missing_input_response", f"inputResponses has no response for question {question.id!r}")
            action, content = responses[question.id]
            if action == NOT_ELICITATION:
                raise refusal("not_elicitation", f"the response for question {question.id!r} is a {content}, "
                              "not an elicitation result")
            try:
                answers.append(answer_for(question, action, content, by))  # type: ignore[arg-type]
            except ValueError as exc:
                raise refusal("invalid_answer", f"The answer to question {question.id!r} was not taken: {exc}") from None
        return answers

    async def _follow(
        self, journal: Any, seen: int, reading: Reading, stream: Any, thread_id: str | None, peer: Peer | None,
        finish: Finish,
    ) -> Outcome | InputRequired:
        """Read the run's journal from its start (the earlier rounds' events count for the
        result; progress goes out only after ``seen``) to its end or its next questions."""
        loop = asyncio.get_running_loop()
        deadline, pause, seq = loop.time() + REMOTE_WAIT, 0.02, 0
        gone = peer.gone if peer is not None else None
        watcher = asyncio.ensure_future(_cancel_when(gone, journal)) if gone is not None else None
        try:
            while True:
                ended: Any = None
                outcome: Outcome | None = None
                try:
                    async with aclosing(journal.follow(after=seq)) as events:
                        async for seq, event in events:
                            taken = await reading.take(event, live=seq > seen)
                            if taken is not None:
                                ended, outcome = event, taken
                except CursorExpired:
                    if seq >= seen:  # (the earlier rounds may be gone: the new events are what counts)
                        return Outcome("The run's events are no longer kept; read its thread instead.", is_error=True)
                    seq = seen
                    continue
                if ended is None:
                    if isinstance(journal, RemoteJournal) and not journal.done and loop.time() < deadline:
                        # another server drives the run: its next events are not in the store yet
                        await asyncio.sleep(pause)
                        pause = min(pause * 2, 0.5)
                        continue
                    return Outcome("The agent run ended without a result.", is_error=True)
                if isinstance(ended, RunFinished) and ended.stop_reason == STOP_SUSPENDED:
                    if seq <= seen:  # an earlier round's ending: its answers are in the journal next
                        continue
                    return self._asking(journal, seq, reading, thread_id)
                assert outcome is not None
                return finish(outcome, stream, reading.answers, thread_id)
        finally:
            if watcher is not None:
                watcher.cancel()

    def _asking(self, journal: Any, seq: int, reading: Reading, thread_id: str | None) -> InputRequired | Outcome:
        """The ``input_required`` result for the questions the run waits for now."""
        questions = self.kernel.open_questions(journal.run_id, principal=journal.principal) or reading.asked
        if not questions:
            return Outcome("The agent run stopped for answers, but no question of it is open.", is_error=True)
        requests = {q.id: request_for(q) for q in questions}
        state = RoundState(journal.run_id, seq, tuple(Asked(q.id, q.kind, tuple(q.choices)) for q in questions), thread_id)
        return InputRequired(requests, state.encode())


async def _cancel_when(gone: Any, journal: Any) -> None:
    """Cancel the run once its HTTP client has disconnected (``gone`` is set)."""
    await gone.wait()
    journal.cancel()


__all__ = ["Asked", "Rounds", "RoundState", "refusal"]
