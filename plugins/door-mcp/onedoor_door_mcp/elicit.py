"""The agent's questions as MCP elicitation (form mode), and the client's replies as answers.

A run's question (:mod:`onedoor.questions`) becomes one ``elicitation/create`` request,
sent on the ``tools/call`` that runs the agent:

approval  ``message``: the question, the tool's name and its arguments (as JSON);
          ``requestedSchema``: one required string field ``decision`` whose values are
          the question's choices (``allow_once``, ``allow_always``, ``reject_once``,
          ``reject_always``), given both as ``enum`` and as titled ``oneOf`` options.
input     ``message``: the question; ``requestedSchema``: the question's own schema
          (the kernel's form subset is MCP's).

``_meta["onedoor/question"]`` carries the question's id, kind, run id and tool call, for
clients that show more than the form. The reply's ``action``:

========  ===================================  ============================
action    approval                             input
========  ===================================  ============================
accept    ``content.decision`` (the outcome)   ``accept``, value ``content``
decline   ``reject_once``                      ``decline``
cancel    ``reject_once``                      ``cancel``
========  ===================================  ============================

The kernel checks each answer against its question (``check_answer``): content that
does not fit (a decision that is not a choice, a value outside the form) is answered
no, as is a reply the SDK cannot read, an error reply, or a connection that closes.
"""

from __future__ import annotations

import json
from typing import Any

from onedoor import APPROVAL, Answer, LiveAsker, Question

DECISION = "decision"
META_KEY = "onedoor/question"
MAX_ARGUMENTS_TEXT = 4000  # characters of the tool's arguments shown in the message
MAX_META_ARGUMENTS = 16384  # larger arguments are left out of _meta (they are in the message)

CHOICE_TITLES = {
    "allow_once": "Allow once",
    "allow_always": "Always allow this tool (for this request)",
    "reject_once": "Reject",
    "reject_always": "Always reject this tool (for this request)",
}


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def _clip(text: str, limit: int) -> str:
    """At most about ``limit`` characters: the start and the end, the cut marked (what a
    person approves must not hide its dangerous tail)."""
    if len(text) <= limit:
        return text
    tail = limit // 4
    return f"{text[: limit - tail]} … {len(text) - limit} characters not shown … {text[-tail:]}"


def approval_schema(question: Question) -> dict[str, Any]:
    choices = list(question.choices)
    name = question.tool.name if question.tool is not None else "the tool"
    return {
        "type": "object",
        "properties": {
            DECISION: {
                "type": "string",
                "title": f"Run {name}?",
                "description": "Allow or reject this tool call; 'always' applies to this tool for the rest of the request.",
                "enum": choices,
                "oneOf": [{"const": choice, "title": CHOICE_TITLES.get(choice, choice)} for choice in choices],
            }
        },
        "required": [DECISION],
    }


def request_for(question: Question) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """``(message, requestedSchema, _meta)`` of the elicitation that asks ``question``."""
    about: dict[str, Any] = {"id": question.id, "kind": question.kind, "run_id": question.run_id}
    if question.kind == APPROVAL:
        tool = question.tool
        message = question.prompt
        if tool is not None:
            arguments = _json(tool.arguments)
            message += f"\n\nTool: {tool.name}\nArguments: {_clip(arguments, MAX_ARGUMENTS_TEXT)}"
            about["tool"] = {"id": tool.id, "name": tool.name}
            if len(arguments) <= MAX_META_ARGUMENTS:
                about["tool"]["arguments"] = tool.arguments
        return message, approval_schema(question), {META_KEY: about}
    return question.prompt or "The agent needs an answer.", dict(question.schema or {}), {META_KEY: about}


def answer_for(question: Question, action: Any, content: Any, by: str = "") -> Answer:
    """The client's reply as an answer to ``question`` (not yet checked: the kernel does).

    ValueError for an action that is none of accept / decline / cancel.
    """
    if action not in ("accept", "decline", "cancel"):
        raise ValueError(f"the client answered with the unknown action {str(action)[:100]!r}")
    if question.kind == APPROVAL:
        if action != "accept":
            return Answer(question.id, "reject_once", by=by)
        decision = content.get(DECISION) if isinstance(content, dict) else None
        if decision not in question.choices:  # (the kernel would refuse it too; this keeps the log short)
            raise ValueError(f"an accepted approval needs {DECISION!r} among the choices; got {_clip(_json(content), 200)}")
        return Answer(question.id, decision, by=by)
    if action == "accept":
        return Answer(question.id, "accept", content, by=by)
    return Answer(question.id, action, by=by)


def live_asker(peer: Any) -> LiveAsker:
    """A LiveAsker that asks ``peer`` (an :class:`~onedoor_door_mcp.sdk.Peer`) by elicitation."""
    by = f"mcp:{peer.client_name}" if peer.client_name else "mcp"

    async def ask(question: Question) -> Answer:
        message, schema, meta = request_for(question)
        action, content = await peer.elicit(message, schema, meta)
        return answer_for(question, action, content, by)

    return LiveAsker(ask)


__all__ = ["DECISION", "META_KEY", "answer_for", "approval_schema", "live_asker", "request_for"]
