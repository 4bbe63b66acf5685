"""Questions as A2A ``input-required`` messages, and the next message as their answer.

A2A has no form or approval type of its own: a task in ``input-required`` carries a
status message, and the client answers by sending the next message on the same task.
The question goes out as text (its prompt and how to answer) plus a data part (the
question as onedoor describes it: kind, choices, schema). The answer may be:

- a data part ``{"outcome": "...", "value": {...}}`` (the exact kernel answer), or a data
  part that is the value itself (an input question: ``accept`` with that value);
- text: for an approval ``yes``/``allow`` (allow once), ``always`` (allow always),
  ``no``/``reject`` (reject once), ``never`` (reject always), or an outcome's own name;
  for an input question ``decline`` or ``cancel``, else the text is the answer (the
  default form's ``answer`` field, or JSON for a form of its own).
"""

from __future__ import annotations

import json
from typing import Any

from onedoor import APPROVAL, Answer, Question

APPROVAL_WORDS = {
    "yes": "allow_once", "y": "allow_once", "allow": "allow_once", "approve": "allow_once", "ok": "allow_once",
    "always": "allow_always",
    "no": "reject_once", "n": "reject_once", "reject": "reject_once", "deny": "reject_once",
    "never": "reject_always",
}
INPUT_WORDS = ("decline", "cancel")
DEFAULT_FORM = {"answer"}


def how_to_answer(question: Question) -> str:
    if question.kind == APPROVAL:
        return "Answer yes (allow once), always, no (reject once) or never."
    if _is_default_form(question):
        return "Answer with text, or decline."
    return "Answer with a JSON object for the form in this message's data, or decline."


def question_parts(question: Question) -> list[Any]:
    """The parts of the ``input-required`` status message for ``question``."""
    from a2a.helpers import new_data_part, new_text_part

    return [new_text_part(f"{question.prompt}\n{how_to_answer(question)}"), new_data_part({"question": question.to_dict()})]


def _is_default_form(question: Question) -> bool:
    properties = (question.schema or {}).get("properties") or {}
    return set(properties) == DEFAULT_FORM


def _integers(value: Any, schema: dict[str, Any] | None) -> Any:
    """A data part's numbers are all floats (protobuf Struct): ``41.0`` back to ``41`` where
    the form wants an integer."""
    if not isinstance(value, dict):
        return value
    properties = (schema or {}).get("properties") or {}
    return {
        key: int(item) if isinstance(item, float) and item.is_integer()
        and (properties.get(key) or {}).get("type") == "integer" else item
        for key, item in value.items()
    }


def answer_from(question: Question, message: Any) -> Answer:
    """The kernel answer the A2A ``message`` gives ``question``; ValueError if it gives none."""
    from a2a.helpers import get_data_parts, get_message_text

    from .content import is_state

    for data in get_data_parts([part for part in message.parts if not is_state(part)]):
        if isinstance(data, dict) and isinstance(data.get("outcome"), str):
            value = data.get("value")
            return Answer(question.id, data["outcome"], _integers(value, question.schema) if value is not None else None)
        if question.kind != APPROVAL and isinstance(data, dict):
            return Answer(question.id, "accept", _integers(data, question.schema))
    text = get_message_text(message).strip()
    if not text:
        raise ValueError("the answer is empty: send text or a data part")
    word = text.lower()
    if question.kind == APPROVAL:
        outcome = APPROVAL_WORDS.get(word, word if word in question.choices else "")
        if not outcome:
            raise ValueError(f"{text[:60]!r} does not answer the question. {how_to_answer(question)}")
        return Answer(question.id, outcome)
    if word in INPUT_WORDS:
        return Answer(question.id, word)
    if _is_default_form(question):
        return Answer(question.id, "accept", {"answer": text})
    try:
        value = json.loads(text)
    except ValueError:
        raise ValueError(f"the answer is not a JSON object. {how_to_answer(question)}") from None
    return Answer(question.id, "accept", value)


__all__ = ["answer_from", "question_parts"]
