"""The pydantic-ai agent behind the port (imported only when a run starts).

One :class:`PydanticAIAgent` per run. It streams ``Agent.run_stream_events`` and maps
pydantic-ai's events to core events as they arrive: text and thinking deltas, a
ToolStarted when a function-tool call is about to run (arguments complete) and a
ToolFinished with its result. Door-offered tools become a toolset for this run only:
server tools call their handler, client tools are external (deferred) tools, and a run
that calls one ends with stop_reason ``pending_tools``. Cancelling the kernel's task
leaves ``run_stream_events``, which cancels the run and closes the model request.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, AsyncIterator, Callable, Iterator, Sequence

from onedoor import (
    STOP_PENDING_TOOLS,
    Event,
    Message,
    ReasoningDelta,
    RunContext,
    RunFailed,
    RunFinished,
    RunStarted,
    TextDelta,
    ToolFinished,
    ToolSpec,
    ToolStarted,
)
from onedoor.questions import Answer, Question, closing_answer

from .history import to_model_messages
from .loading import load_agent
from .options import PydanticAIOptions


class PydanticAIAgent:
    """Async agent: the kernel runs it in a task and cancels the task to stop it."""

    def __init__(self, options: PydanticAIOptions) -> None:
        self.options = options

    def _build(self) -> tuple[Any, Any]:
        """The pydantic-ai Agent for this run, and an OpenAI client to close after it."""
        from pydantic_ai import Agent

        opts = self.options
        if opts.agent:
            return load_agent(opts.agent), None
        if opts.base_url:
            from openai import AsyncOpenAI
            from pydantic_ai.models.openai import OpenAIChatModel
            from pydantic_ai.providers.openai import OpenAIProvider

            client = AsyncOpenAI(
                base_url=opts.base_url,
                api_key=opts.api_key or _env_key() or "not-needed",
                max_retries=opts.retries,
                timeout=opts.timeout,
            )
            name = opts.model.split(":", 1)[1] if opts.model.startswith(("openai:", "openai-chat:")) else opts.model
            model: Any = OpenAIChatModel(name, provider=OpenAIProvider(openai_client=client))
            return Agent(model, instructions=opts.instructions or None), client
        return Agent(opts.model, instructions=opts.instructions or None), None

    async def run(
        self, message: str, *, history: Sequence[Message] | None = None, context: RunContext | None = None
    ) -> AsyncIterator[Event]:
        run_id = context.run_id if context is not None else "pydantic-ai"
        yield RunStarted(run_id)
        agent, client = self._build()
        try:
            async for event in self._stream(agent, run_id, message, history or (), context):
                yield event
        finally:
            if client is not None:
                await client.close()

    async def _stream(
        self, agent: Any, run_id: str, message: str, history: Sequence[Message], context: RunContext | None
    ) -> AsyncIterator[Event]:
        from pydantic_ai import DeferredToolRequests

        tools = context.tools if context is not None else ()
        toolsets = build_toolsets(tools)
        kwargs: dict[str, Any] = {"message_history": to_model_messages(history) or None}
        if toolsets:
            kwargs["toolsets"] = toolsets
        if any(t.client for t in tools):
            kwargs["output_type"] = [agent.output_type, DeferredToolRequests]
        state = _RunState()
        kwargs["capabilities"] = [approvals_capability(context, state.denied)]
        translate = _translator(state)
        try:
            # An empty message continues after tool results (a client answered its tools).
            async with agent.run_stream_events(message or None, **kwargs) as events:
                async for ev in events:
                    for event in translate(ev):
                        yield event
        except Exception as exc:  # noqa: BLE001 - the run's failure, told to the door
            yield RunFailed(run_id, describe_error(exc))
            return
        for event in _ending(state, run_id):
            yield event


@dataclass
class _RunState:
    """What one run has streamed so far."""

    parts: list[str] = field(default_factory=list)  # the text deltas
    open_calls: dict[str, str] = field(default_factory=dict)  # call id -> tool name
    denied: set[str] = field(default_factory=set)  # calls not approved, or questions left unanswered
    output: Any = None  # the agent's final output


def _translator(state: _RunState) -> Callable[[Any], Iterator[Event]]:
    """A function from one pydantic-ai stream event to our events (none, one or more)."""
    from pydantic_ai import (
        AgentRunResultEvent,
        FunctionToolCallEvent,
        FunctionToolResultEvent,
        PartDeltaEvent,
        PartStartEvent,
    )
    from pydantic_ai.messages import RetryPromptPart, TextPart, TextPartDelta, ThinkingPart, ThinkingPartDelta

    def translate(ev: Any) -> Iterator[Event]:
        if isinstance(ev, PartStartEvent):
            part = ev.part
            if isinstance(part, TextPart) and part.content:
                state.parts.append(part.content)
                yield TextDelta(part.content)
            elif isinstance(part, ThinkingPart) and part.content:
                yield ReasoningDelta(part.content)
        elif isinstance(ev, PartDeltaEvent):
            delta = ev.delta
            if isinstance(delta, TextPartDelta) and delta.content_delta:
                state.parts.append(delta.content_delta)
                yield TextDelta(delta.content_delta)
            elif isinstance(delta, ThinkingPartDelta) and delta.content_delta:
                yield ReasoningDelta(delta.content_delta)
        elif isinstance(ev, FunctionToolCallEvent):
            call = ev.part
            if call.tool_call_id not in state.open_calls:
                state.open_calls[call.tool_call_id] = call.tool_name
                yield ToolStarted(call.tool_call_id, call.tool_name, _args(call))
        elif isinstance(ev, FunctionToolResultEvent):
            result = ev.part
            name = state.open_calls.pop(result.tool_call_id, None)
            if name is not None:
                failed = isinstance(result, RetryPromptPart) or result.tool_call_id in state.denied
                yield ToolFinished(result.tool_call_id, name, _jsonable(result.content), failed)
        elif isinstance(ev, AgentRunResultEvent):
            state.output = ev.result.output

    return translate


def _ending(state: _RunState, run_id: str) -> Iterator[Event]:
    """The events after the model's stream: calls left open, the output, the terminal event."""
    from pydantic_ai import DeferredToolRequests

    output, parts, open_calls = state.output, state.parts, state.open_calls
    if isinstance(output, DeferredToolRequests):
        pending = {c.tool_call_id for c in output.calls}
        for call_id in list(open_calls):
            if call_id not in pending:  # not waiting on the client: close it honestly
                yield ToolFinished(call_id, open_calls.pop(call_id), "not run", True)
        for call in output.calls:
            if call.tool_call_id not in open_calls:
                open_calls[call.tool_call_id] = call.tool_name
                yield ToolStarted(call.tool_call_id, call.tool_name, _args(call))
        yield RunFinished(run_id, "".join(parts), STOP_PENDING_TOOLS)
        return
    for call_id, name in list(open_calls.items()):
        yield ToolFinished(call_id, name, "no result", True)
    if output is not None and not isinstance(output, str):
        text = json.dumps(_jsonable(output), ensure_ascii=False)
        parts.append(text)
        yield TextDelta(text)
    elif isinstance(output, str) and not parts and output:
        parts.append(output)  # a model that did not stream its text
        yield TextDelta(output)
    yield RunFinished(run_id, "".join(parts))


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
            answer = await _ask(context, Question.approval(call.tool_call_id, call.tool_name, _args(call)))
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
    args = _args(call)
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


def build_toolsets(tools: Sequence[ToolSpec]) -> list[Any]:
    """Door-offered tools as pydantic-ai toolsets for one run."""
    if not tools:
        return []
    from pydantic_ai import ExternalToolset, FunctionToolset, Tool
    from pydantic_ai.tools import ToolDefinition

    server = [t for t in tools if not t.client and t.handler is not None]
    client = [t for t in tools if t.client]
    out: list[Any] = []
    if server:
        out.append(FunctionToolset([
            Tool.from_schema(_caller(t), name=t.name, description=t.description or None, json_schema=_schema(t))
            for t in server
        ]))
    if client:
        out.append(ExternalToolset([
            ToolDefinition(name=t.name, description=t.description or None, parameters_json_schema=_schema(t))
            for t in client
        ]))
    return out


def _schema(tool: ToolSpec) -> dict[str, Any]:
    schema = dict(tool.parameters or {})
    schema.setdefault("type", "object")
    schema.setdefault("properties", {})
    return schema


def _caller(tool: ToolSpec) -> Any:
    async def call(**arguments: Any) -> Any:
        return await tool.handler(arguments)

    call.__name__ = tool.name
    return call


def _args(call: Any) -> Any:
    try:
        return call.args_as_dict()
    except Exception:  # noqa: BLE001 - malformed JSON from the model: pass it on as text
        return call.args


def _jsonable(value: Any) -> Any:
    try:
        json.dumps(value)
        return value
    except (TypeError, ValueError):
        pass
    try:
        from pydantic_core import to_jsonable_python

        return to_jsonable_python(value)
    except Exception:  # noqa: BLE001
        return str(value)


def _env_key() -> str:
    import os

    return os.environ.get("OPENAI_API_KEY", "")


def describe_error(exc: BaseException) -> str:
    """A one-line, useful message for a failed run (never the API key)."""
    from pydantic_ai import ModelAPIError, ModelHTTPError

    if isinstance(exc, ModelHTTPError):
        detail = _body_message(exc.body) or str(exc)
        return f"the model provider answered HTTP {exc.status_code} ({exc.model_name}): {detail}"
    if isinstance(exc, ModelAPIError):
        return f"the model provider failed ({exc.model_name}): {exc.message}"
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _body_message(body: Any) -> str:
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return error["message"]
        if isinstance(body.get("message"), str):
            return body["message"]
    if isinstance(body, str):
        return body
    return ""
