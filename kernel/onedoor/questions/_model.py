"""Questions and answers: the model (see :mod:`onedoor.questions`)."""


from __future__ import annotations

import math
import os
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from ..errors import OnedoorError
from ..messages import ToolCall

APPROVAL: Literal["approval"] = "approval"
INPUT: Literal["input"] = "input"
APPROVAL_OUTCOMES = ("allow_once", "allow_always", "reject_once", "reject_always")
INPUT_OUTCOMES = ("accept", "decline", "cancel")
HOW = ("person", "policy", "expired", "cancelled")

_FIELD_TYPES = ("string", "number", "integer", "boolean")
_STRING_FORMATS = ("email", "uri", "date", "date-time")
_MAX_PROPERTIES = 32


class QuestionError(OnedoorError):
    """An answer the kernel will not take.

    ``reason``: ``unknown`` (no such open question for this caller: another caller's
    question looks exactly the same), ``expired``, ``answered`` (it already has an
    answer; the message names it) or ``invalid`` (the answer does not fit the question).
    Doors map these to their protocol's errors (HTTP 404/410/409/422, JSON-RPC
    invalid params).
    """

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


def new_question_id() -> str:
    """An id no client can guess (question ids are capabilities for resuming a run)."""
    return "q-" + os.urandom(12).hex()


@dataclass(frozen=True)
class Question:
    """What a run needs from a person. Build one with :meth:`approval` or :meth:`input`.

    The kernel fills ``id`` (if empty), ``run_id`` and ``expires_at`` (epoch seconds,
    for doors that park runs) before a door sees it.
    """

    kind: Literal["approval", "input"]
    prompt: str
    id: str = ""
    run_id: str = ""
    tool: ToolCall | None = None
    schema: dict[str, Any] | None = None
    choices: tuple[str, ...] = ()
    expires_at: float | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def approval(cls, call_id: str, name: str, arguments: Any = None, *, prompt: str = "", **metadata: Any) -> "Question":
        """May the agent run tool ``name`` with ``arguments`` (call ``call_id``)?"""
        text = prompt or f"Allow the agent to run {name}?"
        return cls(APPROVAL, text, tool=ToolCall(call_id, name, arguments), choices=APPROVAL_OUTCOMES, metadata=metadata)

    @classmethod
    def input(cls, prompt: str, schema: dict[str, Any] | None = None, **metadata: Any) -> "Question":
        """A free-form question; ``schema`` (the form subset) describes the answer's value.

        Without a schema the answer is ``{"answer": "<text>"}``.
        """
        schema = schema or {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}
        check_form_schema(schema)
        return cls(INPUT, prompt, schema=schema, choices=INPUT_OUTCOMES, metadata=metadata)

    def stamped(self, run_id: str, expires_at: float | None) -> "Question":
        return replace(self, id=self.id or new_question_id(), run_id=run_id, expires_at=expires_at)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "run_id": self.run_id, "kind": self.kind, "prompt": self.prompt}
        if self.tool is not None:
            out["tool"] = self.tool.to_dict()
        if self.schema is not None:
            out["schema"] = self.schema
        out["choices"] = list(self.choices)
        out["expires_at"] = self.expires_at
        if self.metadata:
            out["metadata"] = self.metadata
        return out

    @classmethod
    def from_dict(cls, data: Any) -> "Question":
        if not isinstance(data, dict) or data.get("kind") not in (APPROVAL, INPUT):
            raise ValueError("a question is an object whose kind is 'approval' or 'input'")
        tool = data.get("tool")
        call = ToolCall(str(tool["id"]), str(tool["name"]), tool.get("arguments")) if isinstance(tool, dict) else None
        return cls(
            kind=data["kind"],
            prompt=str(data.get("prompt", "")),
            id=str(data.get("id", "")),
            run_id=str(data.get("run_id", "")),
            tool=call,
            schema=data.get("schema"),
            choices=tuple(data.get("choices") or ()),
            expires_at=data.get("expires_at"),
            metadata=dict(data.get("metadata") or {}),
        )


@dataclass(frozen=True)
class Answer:
    """The answer to one question. ``how``: ``person`` (a client answered), ``policy``
    (the door could not ask, or an earlier ``*_always``), ``expired`` or ``cancelled``."""

    question_id: str
    outcome: str
    value: Any = None
    by: str = ""
    how: str = "person"

    @property
    def allowed(self) -> bool:
        """For approvals: the tool may run."""
        return self.outcome in ("allow_once", "allow_always")

    @property
    def accepted(self) -> bool:
        """For input questions: ``value`` holds the person's answer."""
        return self.outcome == "accept"

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"question_id": self.question_id, "outcome": self.outcome}
        if self.value is not None:
            out["value"] = self.value
        out["by"] = self.by
        out["how"] = self.how
        return out

    @classmethod
    def from_dict(cls, data: Any) -> "Answer":
        if not isinstance(data, dict):
            raise ValueError("an answer is an object with question_id and outcome")
        qid, outcome = data.get("question_id"), data.get("outcome")
        if not isinstance(qid, str) or not qid or not isinstance(outcome, str):
            raise ValueError("an answer needs a string question_id and outcome")
        how = data.get("how", "person")
        if how not in HOW:
            raise ValueError(f"unknown answer origin {how!r}")
        return cls(qid, outcome, data.get("value"), str(data.get("by", "")), how)


def closing_answer(question: Question, how: str, by: str = "") -> Answer:
    """The answer a question gets when nobody will answer it: no, or cancel."""
    outcome = "reject_once" if question.kind == APPROVAL else "cancel"
    return Answer(question.id, outcome, None, by, how)


def policy_answer(question: Question, policy: str) -> Answer:
    """``allow``: approvals allowed once, input declined; ``deny``: rejected/declined."""
    if question.kind == APPROVAL:
        return Answer(question.id, "allow_once" if policy == "allow" else "reject_once", how="policy")
    return Answer(question.id, "decline", how="policy")


def check_answer(question: Question, answer: Answer) -> Answer:
    """The answer if it fits the question; QuestionError("invalid") if not."""
    if answer.question_id != question.id:
        raise QuestionError("invalid", "the answer names another question")
    if answer.outcome not in question.choices:
        raise QuestionError("invalid", f"outcome must be one of {', '.join(question.choices)}; got {clip(answer.outcome)}")
    if question.kind == INPUT and answer.outcome == "accept":
        problem = form_problem(question.schema or {}, answer.value)
        if problem:
            raise QuestionError("invalid", f"the answer does not fit the question's schema: {problem}")
    elif answer.value is not None and question.kind == APPROVAL:
        raise QuestionError("invalid", "an approval carries no value")
    return answer


# -- the form subset of JSON Schema -----------------------------------------------------
def check_form_schema(schema: Any) -> None:
    """Raise ValueError unless ``schema`` is a flat object form every door can render."""
    if not isinstance(schema, dict) or schema.get("type") != "object":
        raise ValueError("a question's schema must be an object schema ({'type': 'object', ...})")
    props = schema.get("properties")
    if not isinstance(props, dict) or not props or len(props) > _MAX_PROPERTIES:
        raise ValueError(f"a question's schema needs 1 to {_MAX_PROPERTIES} properties")
    for name, prop in props.items():
        if not isinstance(prop, dict) or prop.get("type") not in _FIELD_TYPES:
            raise ValueError(f"property {name!r} must have a type among {', '.join(_FIELD_TYPES)}")
        enum = prop.get("enum")
        if enum is not None and (prop["type"] != "string" or not isinstance(enum, list) or not enum
                                 or not all(isinstance(v, str) for v in enum)):
            raise ValueError(f"property {name!r}: enum must be a non-empty list of strings on a string")
        if prop.get("format") is not None and prop.get("format") not in _STRING_FORMATS:
            raise ValueError(f"property {name!r}: format must be one of {', '.join(_STRING_FORMATS)}")
        for bound in ("minLength", "maxLength", "minimum", "maximum"):
            if bound in prop and (isinstance(prop[bound], bool) or not isinstance(prop[bound], (int, float))):
                raise ValueError(f"property {name!r}: {bound} must be a number")
    required = schema.get("required", [])
    if not isinstance(required, list) or any(r not in props for r in required):
        raise ValueError("required must list properties of the schema")


def form_problem(schema: dict[str, Any], value: Any) -> str:
    """Why ``value`` does not fit the form ``schema`` ('' if it does)."""
    if not isinstance(value, dict):
        return "the value must be an object"
    props: dict[str, Any] = schema.get("properties") or {}
    for name in schema.get("required") or ():
        if name not in value:
            return f"{name!r} is required"
    for name, item in value.items():
        prop = props.get(name)
        if prop is None:
            return f"{clip(name)} is not a field of the form"
        problem = _field_problem(prop, item)
        if problem:
            return f"{clip(name)} {problem}"
    return ""


def _field_problem(prop: dict[str, Any], item: Any) -> str:
    kind = prop.get("type")
    if kind == "string":
        if not isinstance(item, str):
            return "must be a string"
        if prop.get("enum") and item not in prop["enum"]:
            return f"must be one of {', '.join(prop['enum'])}"
        if len(item) < prop.get("minLength", 0) or len(item) > prop.get("maxLength", math.inf):
            return "has the wrong length"
        return ""
    if kind == "boolean":
        return "" if isinstance(item, bool) else "must be true or false"
    if isinstance(item, bool) or not isinstance(item, (int, float)) or (kind == "integer" and not _whole(item)):
        return f"must be {'an integer' if kind == 'integer' else 'a number'}"
    if item < prop.get("minimum", -math.inf) or item > prop.get("maximum", math.inf):
        return "is out of range"
    return ""


def clip(value: Any, limit: int = 80) -> str:
    """A client's value in an error message: its repr, cut short (a hostile value can be huge)."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _whole(number: int | float) -> bool:
    return isinstance(number, int) or number.is_integer()


__all__ = [
    "APPROVAL", "APPROVAL_OUTCOMES", "Answer", "HOW", "INPUT", "INPUT_OUTCOMES", "Question", "QuestionError",
    "check_answer", "check_form_schema", "clip", "closing_answer", "form_problem", "new_question_id", "policy_answer",
]
