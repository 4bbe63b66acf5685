"""The kernel's questions as AG-UI 1.0 interrupts, and resume entries as answers.

A run that asks a question ends its response with ``RUN_FINISHED`` whose ``outcome`` is
``{"type": "interrupt", "interrupts": [Interrupt]}``; the run stays parked in the kernel
until a later ``RunAgentInput`` carries ``resume`` entries answering it.

One question, one ``Interrupt``:

==============  ===========================================================================
id              the question's id (unguessable: it is what a resume must name)
reason          ``tool_approval`` (may the agent run this tool call?) or ``input_required``
message         the question's prompt
toolCallId      approvals: the tool call, streamed just before (TOOL_CALL_START/ARGS/END)
responseSchema  input: the question's form (a flat object schema); approvals: a one-field
                form, ``{"outcome": one of the choices}``
expiresAt       ISO 8601 UTC; after it the question is closed and the run ends cancelled
metadata        ``kind`` (``approval``/``input``), ``choices``, and for approvals
                ``toolName`` and ``arguments``; ``details``: the backend's own metadata
==============  ===========================================================================

Resume entries -> :class:`~onedoor.questions.Answer`:

========  =========================================================  =================
kind      entry                                                      outcome
========  =========================================================  =================
approval  resolved, ``{"outcome": "allow_once"}`` (any choice)        that choice
approval  resolved, ``{"approved": true|false, "always": bool?}``     allow/reject once
                                                                     (always: ``*_always``)
approval  resolved, ``true`` / ``false``                             allow/reject once
approval  cancelled                                                  ``reject_once``
input     resolved, the form's value (an object)                     ``accept``
input     resolved, no payload (or null)                             ``decline``
input     cancelled                                                  ``cancel``
========  =========================================================  =================

Anything else is refused with the ``invalid`` reason. Every refusal happens before the
resumed run starts, as an HTTP error from the transport's table (``invalid_answer``,
``unknown_question``, ``question_expired``, ``already_answered``).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from onedoor import APPROVAL, Answer, Question, QuestionError

REASONS = {APPROVAL: "tool_approval", "input": "input_required"}

_APPROVAL_KEYS = {"outcome"}, {"approved"}, {"approved", "always"}


def iso_time(epoch: float) -> str:
    """Epoch seconds as ISO 8601 UTC with milliseconds (``2026-12-01T10:00:00.000Z``)."""
    return datetime.fromtimestamp(epoch, tz=UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def approval_schema(choices: tuple[str, ...]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"outcome": {"type": "string", "enum": list(choices), "title": "Decision"}},
        "required": ["outcome"],
    }


def question_to_interrupt(question: Question) -> dict[str, Any]:
    """The AG-UI ``Interrupt`` (camelCase JSON object) for one of the kernel's questions."""
    metadata: dict[str, Any] = {"kind": question.kind, "choices": list(question.choices)}
    interrupt: dict[str, Any] = {
        "id": question.id,
        "reason": REASONS.get(question.kind, question.kind),
        "message": question.prompt,
    }
    if question.kind == APPROVAL:
        if question.tool is not None:
            interrupt["toolCallId"] = question.tool.id
            metadata["toolName"] = question.tool.name
            metadata["arguments"] = question.tool.arguments
        interrupt["responseSchema"] = approval_schema(question.choices)
    elif question.schema is not None:
        interrupt["responseSchema"] = question.schema
    if question.expires_at is not None:
        interrupt["expiresAt"] = iso_time(question.expires_at)
    if question.metadata:
        metadata["details"] = question.metadata
    interrupt["metadata"] = metadata
    return interrupt


def answer_for(question: Question, status: str, payload: Any) -> Answer:
    """The answer a resume entry (``status``, ``payload``) gives ``question``.

    Raises QuestionError("invalid") for a payload this door does not understand; the
    kernel checks the result against the question (choices, the form's schema).
    """
    if status == "cancelled":
        return Answer(question.id, "reject_once" if question.kind == APPROVAL else "cancel")
    if status != "resolved":
        raise QuestionError("invalid", f"a resume entry's status is 'resolved' or 'cancelled', not {status!r}")
    if question.kind == APPROVAL:
        return Answer(question.id, _approval_outcome(payload))
    if payload is None:
        return Answer(question.id, "decline")
    return Answer(question.id, "accept", payload)


def _approval_outcome(payload: Any) -> str:
    if isinstance(payload, bool):
        return "allow_once" if payload else "reject_once"
    if isinstance(payload, dict) and set(payload) in _APPROVAL_KEYS:
        if "outcome" in payload:
            outcome = payload["outcome"]
            if isinstance(outcome, str):
                return outcome  # the kernel checks it is one of the question's choices
        else:
            approved, always = payload["approved"], payload.get("always", False)
            if isinstance(approved, bool) and isinstance(always, bool):
                return f"{'allow' if approved else 'reject'}_{'always' if always else 'once'}"
    raise QuestionError(
        "invalid",
        'an approval is answered with payload {"approved": true|false} (optionally "always": true), '
        '{"outcome": "allow_once"|"allow_always"|"reject_once"|"reject_always"}, or status "cancelled"',
    )


__all__ = ["REASONS", "answer_for", "approval_schema", "iso_time", "question_to_interrupt"]
