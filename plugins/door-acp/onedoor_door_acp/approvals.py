"""A run's questions, asked of the editor: tool approvals and free-form questions.

The door passes ``asker=LiveAsker(turn.ask)`` to ``kernel.run`` (:mod:`onedoor.questions.askers`):
a backend asks with ``await context.ask(Question.approval(...))`` (or ``Question.input``,
or ``context.request_approval`` / the ``*_sync`` twins) and waits while the door asks
within the turn.

Approvals go out as ``session/request_permission``. The four options are the kernel's
four outcomes, one to one (ACP ``PermissionOptionKind``: ``allow_once``,
``allow_always``, ``reject_once``, ``reject_always``; each option's id is its kind). The
call is shown first (``tool_call``, status pending) unless the backend announced it
already. "Always" answers are kept in the session's settings (saved, so they hold for
later turns and after ``session/load``); the kernel also remembers them for the rest of
the run. A reply the door cannot read (an unknown option id, wrong types, an error) is
"no", logged in one line; so is a cancel while the question is open.

Free-form questions go out as ``elicitation/create`` (form mode, scoped to the session,
the question's schema as ``requestedSchema``) to a client that declared
``clientCapabilities.elicitation.form``; the reply's action (accept with ``content``,
decline, cancel) is the answer. A client without it gets the door's ``ask_fallback``:
``deny`` and ``allow`` both decline (nobody typed an answer), ``fail`` ends the prompt
with a JSON-RPC error naming the question.
"""

from __future__ import annotations

import logging
from typing import Any

from onedoor.questions import Answer, Question, policy_answer

from .translate import tool_start

log = logging.getLogger("onedoor.door.acp")

OPTIONS = [
    {"optionId": "allow_once", "name": "Allow once", "kind": "allow_once"},
    {"optionId": "allow_always", "name": "Always allow", "kind": "allow_always"},
    {"optionId": "reject_once", "name": "Reject", "kind": "reject_once"},
    {"optionId": "reject_always", "name": "Always reject", "kind": "reject_always"},
]
OUTCOMES = frozenset(o["optionId"] for o in OPTIONS)
REJECTED = "The user rejected this tool call."
CANCELLED = "The turn was cancelled before the tool ran."
FAILED = "The permission request failed."
UNREADABLE = "The editor's answer could not be read; the tool did not run."
ELICITATION_ACTIONS = frozenset({"accept", "decline", "cancel"})


class TurnCancelled(Exception):
    """The turn was cancelled while a request to the editor was open."""


def permission_choice(reply: Any) -> str | None:
    """The outcome a ``session/request_permission`` reply names: one of the four option
    ids, ``"cancelled"``, or None for a reply that is not one of those."""
    outcome = reply.get("outcome") if isinstance(reply, dict) else None
    if not isinstance(outcome, dict):
        return None
    if outcome.get("outcome") == "cancelled":
        return "cancelled"
    choice = outcome.get("optionId")
    if outcome.get("outcome") == "selected" and isinstance(choice, str) and choice in OUTCOMES:
        return choice
    return None


async def ask_approval(turn: Any, question: Question) -> Answer:
    """One approval question, asked of the editor (on the event loop, by the Turn)."""
    assert question.tool is not None
    call_id, name, arguments = question.tool.id, question.tool.name, question.tool.arguments
    session = turn.session
    settings = session.settings
    if turn.door.options.permissions == "allow":
        return Answer(question.id, "allow_once", by="acp", how="policy")
    if name in settings.get("always_allow", ()):  # an earlier "always allow" in this session
        return Answer(question.id, "allow_always", by="acp", how="policy")
    if call_id not in turn.announced:  # libraries that announce first already showed it
        turn.announced.add(call_id)
        await turn.notify(tool_start(call_id, name, arguments))
    if name in settings.get("always_reject", ()):
        await turn.reject(call_id, name, arguments)
        return Answer(question.id, "reject_always", by="acp", how="policy")
    start = tool_start(call_id, name, arguments)
    params = {
        "sessionId": session.id,
        "toolCall": {"toolCallId": call_id, "title": start["title"], "kind": start["kind"], "status": "pending",
                     "rawInput": arguments},
        "options": OPTIONS,
    }
    try:
        reply = await turn.request("session/request_permission", params)
    except TurnCancelled:
        await turn.reject(call_id, name, arguments, reason=CANCELLED)
        return Answer(question.id, "reject_once", how="cancelled")
    except Exception as exc:  # noqa: BLE001 - the editor errored or went away: the answer is no
        log.info("acp: the permission request for %s failed: %s", name, exc)
        await turn.reject(call_id, name, arguments, reason=FAILED)
        return Answer(question.id, "reject_once", how="policy")
    choice = permission_choice(reply)
    if choice is None:
        log.warning("acp: unreadable answer to a permission request, taken as reject: %.200r", reply)
        await turn.reject(call_id, name, arguments, reason=UNREADABLE)
        return Answer(question.id, "reject_once", how="policy")
    if choice == "cancelled":
        await turn.reject(call_id, name, arguments, reason=CANCELLED)
        return Answer(question.id, "reject_once", how="cancelled")
    if choice in ("allow_always", "reject_always"):
        key = "always_allow" if choice == "allow_always" else "always_reject"
        names = list(settings.get(key, ()))
        if name not in names:
            settings[key] = names + [name]
            turn.door.sessions.save(session)
    if choice not in ("allow_once", "allow_always"):
        await turn.reject(call_id, name, arguments)
    return Answer(question.id, choice, by="acp")


def can_elicit(client_capabilities: Any) -> bool:
    """True if the client declared form elicitation (``elicitation: {form: {}}``)."""
    elicitation = getattr(client_capabilities, "elicitation", None)
    return getattr(elicitation, "form", None) is not None


async def ask_input(turn: Any, question: Question) -> Answer:
    """One free-form question: ``elicitation/create`` if the client takes it, else the fallback."""
    if not can_elicit(turn.door.client_capabilities):
        return fallback_answer(turn, question)
    params: dict[str, Any] = {
        "sessionId": turn.session.id,
        "mode": "form",
        "message": question.prompt,
        "requestedSchema": question.schema,
    }
    try:
        reply = await turn.request("elicitation/create", params)
    except TurnCancelled:
        return Answer(question.id, "cancel", how="cancelled")
    except Exception as exc:  # noqa: BLE001 - the editor errored or went away: no answer
        log.info("acp: the elicitation request failed: %s", exc)
        return Answer(question.id, "decline", how="policy")
    action = reply.get("action") if isinstance(reply, dict) else None
    if not isinstance(action, str) or action not in ELICITATION_ACTIONS:
        log.warning("acp: unreadable answer to an elicitation request, taken as decline: %.200r", reply)
        return Answer(question.id, "decline", how="policy")
    if action == "accept":
        content = reply.get("content")
        return Answer(question.id, "accept", {} if content is None else content, by="acp")
    return Answer(question.id, action, by="acp")


def fallback_answer(turn: Any, question: Question) -> Answer:
    """The answer by the door's ``ask_fallback`` (the client cannot be asked)."""
    policy = turn.door.options.ask_fallback
    if policy == "fail":
        turn.fail(f"the run asked a question this client cannot answer ({question.prompt}); "
                  "it does not declare elicitation and the door's ask_fallback is 'fail'")
        return Answer(question.id, "cancel", by="acp", how="policy")
    answer = policy_answer(question, policy)
    return Answer(answer.question_id, answer.outcome, answer.value, "acp", "policy")
