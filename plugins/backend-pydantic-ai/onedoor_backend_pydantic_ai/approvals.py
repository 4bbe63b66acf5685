"""Approvals and questions: pydantic-ai's deferred tool calls answered through the kernel."""

from __future__ import annotations

from typing import Any

from onedoor import RunContext
from onedoor.questions import Answer, Question, closing_answer

from .agent_support import args_of


def approvals_capability(context: RunContext | None, denied: set[str]) -> Any:
    """Deferred tool calls the kernel can answer, asked through ``context.ask`` (see :mod:`onedoor.askers`).

    - An *approval* (a tool with ``requires_approval=True``, or one that raised
      ``ApprovalRequired``) is a ``Question.approval``: ``allow_*`` runs the call, ``reject_*``
      answers the model with ``ToolDenied`` naming the outcome. ``*_always`` is remembered
      by the kernel for the rest of the run, per tool name, so the next call of that tool
      is not asked again.
    - A *question* (a tool that raised ``CallDeferred(kind="question", metadata=...)``) is a
      ``Question.input``: see :func:`question_for`. ``accept`` makes the answer the tool's
      result; ``decline``/``cancel`` a failed result naming the outcome.

    Without a context every answer is no. External (client) calls are left pending: they
    end the run with stop_reason ``pending_tools``.
    """
    from pydantic_ai import DeferredToolResults, ToolDenied
    from pydantic_ai.capabilities import HandleDeferredToolCalls

    async def handle(_ctx: Any, requests: Any) -> Any:
        approvals: dict[str, Any] = {}
        calls: dict[str, Any] = {}
        for call in requests.approvals:
            answer = await _ask(context, Question.approval(call.tool_call_id, call.tool_name, args_of(call)))
            if answer.allowed:
                approvals[call.tool_call_id] = True
            else:
                denied.add(call.tool_call_id)
                approvals[call.tool_call_id] = ToolDenied(f"The tool call was not approved ({answer.outcome}).")
        for call in _question_calls(requests):
            result = await _answer_question(context, call, requests.metadata.get(call.tool_call_id))
            if isinstance(result, Exception):
                denied.add(call.tool_call_id)
            calls[call.tool_call_id] = result
        if not approvals and not calls:
            return None
        return DeferredToolResults(approvals=approvals, calls=calls)

    return HandleDeferredToolCalls(handler=handle)


async def _ask(context: RunContext | None, question: Question) -> Answer:
    if context is None:
        return closing_answer(question, "policy")
    return await context.ask(question)


def _question_calls(requests: Any) -> list[Any]:
    """The pending calls that ask the user something (pydantic-ai versions with ``CallDeferred(kind=...)``)."""
    kind = getattr(requests, "kind", None)
    if kind is None:
        return []
    return [call for call in requests.calls if kind(call.tool_call_id) == "question"]


def question_for(call: Any, metadata: Any) -> Question:
    """The input question a tool's ``CallDeferred(kind="question", metadata=...)`` asks.

    ``metadata["prompt"]`` (or ``"question"``; else the call's ``question``/``prompt``
    argument) is the text; ``metadata["schema"]`` a form schema (flat object of strings,
    numbers, integers, booleans, enums) for the answer. Without a schema the answer is
    free text. ValueError if the schema is not a form every door can show.
    """
    meta = metadata if isinstance(metadata, dict) else {}
    args = args_of(call)
    args = args if isinstance(args, dict) else {}
    prompt = next(
        (str(v) for v in (meta.get("prompt"), meta.get("question"), args.get("question"), args.get("prompt")) if v),
        f"The agent's tool {call.tool_name} needs your answer.",
    )
    return Question.input(prompt, meta.get("schema"), tool_call_id=call.tool_call_id, tool_name=call.tool_name)


async def _answer_question(context: RunContext | None, call: Any, metadata: Any) -> Any:
    """The tool's result: the answer's value (its text without a schema), or a ToolFailed."""
    from pydantic_ai.exceptions import ToolFailed

    try:
        question = question_for(call, metadata)
    except ValueError as exc:
        return ToolFailed(f"This question cannot be asked: {exc}")
    answer = await _ask(context, question)
    if not answer.accepted:
        return ToolFailed(f"The user gave no answer ({answer.outcome}).")
    value = answer.value
    has_schema = isinstance(metadata, dict) and metadata.get("schema")
    return value.get("answer", value) if isinstance(value, dict) and not has_schema else value


__all__ = ["approvals_capability", "question_for"]
