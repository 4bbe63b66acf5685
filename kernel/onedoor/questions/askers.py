"""How a door answers a run's questions: pass one of these to ``kernel.run(asker=...)``.

``LiveAsker(ask)``
    The door asks within the run: ``ask`` is ``async (Question) -> Answer`` (ACP
    ``session/request_permission``, MCP elicitation, a terminal prompt). The backend
    waits meanwhile and the run's idle timeout is paused; a question still unanswered
    after ``Limits.question_ttl`` is answered no (``how="expired"``), and one open when
    the run is cancelled or times out is answered no at once. ``ask`` may also return a bool
    (approvals: allow once / reject once) or an outcome string; if it raises, or returns
    an answer that does not fit the question, the answer is no (``reject_once`` /
    ``decline``), logged.

``SuspendAsker(ttl=None)``
    The door ends its response with the question: the stream yields ``QuestionAsked``
    and then ``RunFinished(stop_reason="suspended")``, and the run is *parked* in the
    kernel, still holding its slot, until ``kernel.resume(answers)`` hands back a new
    stream for the same run (AG-UI interrupts, REST). A parked run expires ``ttl``
    seconds after the question (default ``Limits.question_ttl``): the question is
    answered ``cancel``/``reject_once`` with ``how="expired"`` and the run ends
    cancelled. When ``Limits.max_parked_runs`` runs are parked already (default 32, well
    below ``max_concurrent_runs``, so that clients who never answer cannot take every run
    slot), the question is answered by ``fallback`` (a policy, default ``deny``) instead.
    A run id in use (running or parked) cannot start another run. The stream's
    ``suspended`` is True once its response ended this way: its end, or its client going
    away, must not cancel the parked run (``cancel()`` still does, on purpose).

``PolicyAsker(policy)``
    The door cannot ask (a client without elicitation, stdin that is not a TTY):
    ``deny`` (approvals rejected, questions declined), ``allow`` (approvals allowed once,
    questions declined: there is nobody to type an answer) or ``fail`` (the run ends
    with RunFailed naming the question).

With an asker, the run's stream carries ``QuestionAsked`` before each question reaches
the door's side and ``QuestionAnswered`` once it is answered, whoever answered it. A door
that passes no asker gets neither event, and every question is answered no; the older
``approver=`` of ``kernel.run`` is wrapped in a ``LiveAsker``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Literal, get_args

from ._model import APPROVAL, Answer, Question, policy_answer

AskFallback = Literal["deny", "allow", "fail"]  # the type of every door's ``ask_fallback`` option
POLICIES: tuple[str, ...] = get_args(AskFallback)


def check_policy(value: Any, name: str = "ask_fallback") -> str:
    """``value`` if it is a policy; ValueError naming ``name`` otherwise (for Options checks)."""
    if value not in POLICIES:
        raise ValueError(f"{name} must be one of {', '.join(POLICIES)}; got {value!r}")
    return str(value)


@dataclass(frozen=True)
class LiveAsker:
    ask: Callable[[Question], Awaitable[Any]]
    emit_events: bool = True


@dataclass(frozen=True)
class SuspendAsker:
    ttl: float | None = None
    fallback: str = "deny"


@dataclass(frozen=True)
class PolicyAsker:
    policy: str = "deny"
    emit_events: bool = True

    def __post_init__(self) -> None:
        check_policy(self.policy, "policy")


Asker = LiveAsker | SuspendAsker | PolicyAsker


def from_approver(approver: Callable[[str, str, Any], Awaitable[Any]]) -> LiveAsker:
    """The pre-questions ``approver(call_id, name, arguments) -> bool`` as a silent LiveAsker."""

    async def ask(question: Question) -> Answer:
        if question.kind != APPROVAL or question.tool is None:
            return policy_answer(question, "deny")
        tool = question.tool
        allowed = bool(await approver(tool.id, tool.name, tool.arguments))
        return Answer(question.id, "allow_once" if allowed else "reject_once")

    return LiveAsker(ask, emit_events=False)


SILENT_DENY = PolicyAsker("deny", emit_events=False)


def coerce_answer(question: Question, raw: Any) -> Answer:
    """What a live asker returned, as an Answer for ``question`` (not yet checked)."""
    if isinstance(raw, Answer):
        return raw if raw.question_id == question.id else Answer(question.id, raw.outcome, raw.value, raw.by, raw.how)
    if isinstance(raw, bool):
        if question.kind == APPROVAL:
            return Answer(question.id, "allow_once" if raw else "reject_once")
        return Answer(question.id, "decline")
    if isinstance(raw, str):
        return Answer(question.id, raw)
    raise TypeError(f"an asker returned {type(raw).__name__}; expected an Answer, a bool or an outcome string")


__all__ = ["AskFallback", "Asker", "LiveAsker", "POLICIES", "check_policy", "PolicyAsker", "SuspendAsker", "coerce_answer", "from_approver"]
