"""Who answered the agent's questions, in the tool result.

The door passes the kernel an asker that emits events, so a run's stream carries
``QuestionAsked`` and ``QuestionAnswered`` (:mod:`onedoor.askers`). Every answer goes in
the result's ``structuredContent["answers"]`` (question, outcome, ``how``: ``person``,
``policy``, ``expired`` or ``cancelled``), and each answer no person gave gets a line in
a text block of its own, so that neither the calling model nor the person behind it
takes a policy's "no" (or "yes") for a person's:

    The agent asked to run rm; no one could be asked here (the client did not declare
    the elicitation capability), so the server's ask_fallback policy (deny) answered
    reject_once.

A question answered by a person adds no line.
"""

from __future__ import annotations

import json
from typing import Any

from onedoor.questions import APPROVAL, APPROVAL_OUTCOMES, INPUT, Answer, Question

MAX_LINES = 20  # lines of the note; the rest are counted
MAX_PROMPT = 200  # characters of a question quoted in the note

ANSWERS_SCHEMA: dict[str, Any] = {
    "type": "array",
    "description": "The agent's questions during the call and who answered them ('how': 'person', or "
    "'policy', 'expired', 'cancelled' when no person did). Present only when the agent asked.",
    "items": {
        "type": "object",
        "properties": {
            "question_id": {"type": "string"},
            "kind": {"type": "string", "enum": ["approval", "input"]},
            "prompt": {"type": "string", "description": "The question as the agent put it."},
            "tool": {"type": "string", "description": "Approvals: the tool the agent asked to run."},
            "outcome": {"type": "string", "description": "allow_once, allow_always, reject_once, reject_always, "
                        "accept, decline or cancel."},
            "value": {"description": "An accepted input question: the answer."},
            "how": {"type": "string", "enum": ["person", "policy", "expired", "cancelled"]},
            "by": {"type": "string", "description": "Who answered, when known (e.g. mcp:CLIENT)."},
        },
        "required": ["question_id", "kind", "outcome", "how"],
    },
}


def _clip(text: str, limit: int = MAX_PROMPT) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _asked(question: Question | None) -> str:
    """What the agent asked, for a sentence: ``to run rm`` or ``"Colour?"``."""
    if question is None:
        return "a question"
    if question.kind == APPROVAL:
        return f"to run {question.tool.name}" if question.tool is not None else "for an approval"
    return json.dumps(_clip(question.prompt or "a question"), ensure_ascii=False)


class AnswerLog:
    """The questions and answers of one run, read from its stream.

    ``cannot_ask``: why the client cannot be asked (the door's ``ask_fallback`` policy
    answers), or None when it is asked by elicitation.
    """

    def __init__(self, cannot_ask: str | None, policy: str) -> None:
        self.cannot_ask = cannot_ask
        self.policy = policy
        self.questions: dict[str, Question] = {}
        self.answers: list[Answer] = []

    def asked(self, question: Question) -> None:
        self.questions[question.id] = question

    def answered(self, answer: Answer) -> None:
        self.answers.append(answer)

    def records(self) -> list[dict[str, Any]]:
        """``structuredContent["answers"]``: one object per answer, in order."""
        out = []
        for answer in self.answers:
            question = self.questions.get(answer.question_id)
            record: dict[str, Any] = {"question_id": answer.question_id}
            if question is not None:  # (the kernel sends QuestionAsked before each answer)
                record["kind"] = question.kind
                record["prompt"] = question.prompt
                if question.tool is not None:
                    record["tool"] = question.tool.name
            else:
                record["kind"] = APPROVAL if answer.outcome in APPROVAL_OUTCOMES else INPUT
            record["outcome"] = answer.outcome
            if answer.value is not None:
                record["value"] = answer.value
            record["how"] = answer.how
            if answer.by:
                record["by"] = answer.by
            out.append(record)
        return out

    def note(self) -> str | None:
        """The text block naming each answer no person gave (None if a person gave all)."""
        lines = [self._line(answer) for answer in self.answers if answer.how != "person"]
        if not lines:
            return None
        if len(lines) > MAX_LINES:
            lines = [*lines[:MAX_LINES], f"({len(lines) - MAX_LINES} more questions were answered the same way.)"]
        return "\n".join(lines)

    def _line(self, answer: Answer) -> str:
        asked = f"The agent asked {_asked(self.questions.get(answer.question_id))}"
        if answer.how == "policy" and self.cannot_ask is not None:
            if self.policy == "fail":
                return (f"{asked}; no one could be asked here ({self.cannot_ask}), so the server's ask_fallback "
                        "policy (fail) ended the run.")
            return (f"{asked}; no one could be asked here ({self.cannot_ask}), so the server's ask_fallback "
                    f"policy ({self.policy}) answered {answer.outcome}.")
        if answer.how == "policy":
            return f"{asked}; the client's answer could not be used, so the server answered {answer.outcome}."
        if answer.how == "expired":
            return f"{asked}; no answer came in time, so the question expired and was answered {answer.outcome}."
        return f"{asked}; the run was cancelled before an answer came, so it was answered {answer.outcome}."


__all__ = ["ANSWERS_SCHEMA", "AnswerLog"]
