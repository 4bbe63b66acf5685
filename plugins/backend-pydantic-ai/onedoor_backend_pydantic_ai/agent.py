"""The pydantic-ai agent behind the port (imported only when a run starts).

One :class:`PydanticAIAgent` per run. It streams ``Agent.run_stream_events`` and maps
pydantic-ai's events to core events as they arrive: text and thinking deltas, a
ToolStarted when a function-tool call is about to run (arguments complete) and a
ToolFinished with its result. Door-offered tools become a toolset for this run only:
server tools call their handler, client tools are external (deferred) tools, and a run
that calls one ends with stop_reason ``pending_tools``. Cancelling the kernel's task
leaves ``run_stream_events``, which cancels the run and closes the model request.

A message with parts goes as pydantic-ai user content (:mod:`.content`); the run's shared
state goes into the agent's state deps and comes back from its tools (:mod:`.state`);
each model response's usage is reported as it arrives (:mod:`.usage`).
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
    ToolStarted,
)
from onedoor.events import ReplyPart, UsageReported
from onedoor.usage import ModelUsage

from .agent_support import args_of, describe_error, jsonable
from .approvals import approvals_capability
from .content import unsendable, user_content
from .history import to_model_messages
from .loading import load_agent
from .models import accepted_kinds, build_model
from .options import PydanticAIOptions
from .results import part_of_file, parts_of_result
from .state import StateBridge
from .toolsets import build_toolsets
from .usage import UsageMeter


class PydanticAIAgent:
    """Async agent: the kernel runs it in a task and cancels the task to stop it."""

    def __init__(self, options: PydanticAIOptions) -> None:
        self.options = options

    def _build(self) -> tuple[Any, Any, Any]:
        """The pydantic-ai Agent for this run, the model to run it on instead of its own
        (None: its own), and an OpenAI client to close after the run."""
        from pydantic_ai import Agent

        opts = self.options
        if opts.agent:
            agent = load_agent(opts.agent)
            if not opts.model:
                return agent, None, None
            model, client = build_model(opts)
            return agent, model, client
        model, client = build_model(opts)
        return Agent(model, instructions=opts.instructions or None), None, client

    async def run(
        self, message: str, *, history: Sequence[Message] | None = None, context: RunContext | None = None
    ) -> AsyncIterator[Event]:
        run_id = context.run_id if context is not None else "pydantic-ai"
        yield RunStarted(run_id)
        agent, model, client = self._build()
        try:
            async for event in self._stream(agent, model, run_id, message, history or (), context):
                yield event
        finally:
            if client is not None:
                await client.close()

    async def _stream(
        self, agent: Any, model: Any, run_id: str, message: str, history: Sequence[Message], context: RunContext | None
    ) -> AsyncIterator[Event]:
        from pydantic_ai import DeferredToolRequests

        kinds = accepted_kinds(self.options)
        parts = context.content if context is not None else ()
        problem = unsendable(model if model is not None else getattr(agent, "model", None), parts)
        try:
            bridge = StateBridge.for_run(agent, self.options.deps, context.state if context is not None else None)
        except (ValueError, RuntimeError) as exc:
            problem = problem or str(exc)
        if problem:
            yield RunFailed(run_id, problem)
            return
        tools = context.tools if context is not None else ()
        toolsets = build_toolsets(tools)
        kwargs: dict[str, Any] = {"message_history": to_model_messages(history, kinds) or None}
        if model is not None:
            kwargs["model"] = model
        if bridge.deps is not None:
            kwargs["deps"] = bridge.deps
        if toolsets:
            kwargs["toolsets"] = toolsets
        if any(t.client for t in tools):
            kwargs["output_type"] = [agent.output_type, DeferredToolRequests]
        state = _RunState()
        meter = UsageMeter(context.report_usage if context is not None and context.emit is not None else None)
        kwargs["capabilities"] = [approvals_capability(context, state.denied), meter.capability()]
        translate = _translator(state, bridge)
        # An empty message continues after tool results (a client answered its tools).
        prompt = user_content(parts, kinds) if parts else (message or None)
        try:
            async with agent.run_stream_events(prompt, **kwargs) as events:
                async for ev in events:
                    fresh = meter.take()  # a response just ended: its usage comes before what follows it
                    if fresh:
                        yield UsageReported(fresh)
                    for event in translate(ev):
                        yield event
        except Exception as exc:  # noqa: BLE001 - the run's failure, told to the door
            yield RunFailed(run_id, describe_error(exc), meter.take())
            return
        for event in bridge.deps_changes():
            yield event
        for event in _ending(state, run_id, meter.rest(state.run_usage)):
            yield event


@dataclass
class _RunState:
    """What one run has streamed so far."""

    parts: list[str] = field(default_factory=list)  # the text deltas
    open_calls: dict[str, str] = field(default_factory=dict)  # call id -> tool name
    denied: set[str] = field(default_factory=set)  # calls not approved, or questions left unanswered
    output: Any = None  # the agent's final output
    run_usage: Any = None  # the run's RunUsage, when it finished


def _translator(state: _RunState, bridge: StateBridge) -> Callable[[Any], Iterator[Event]]:
    """A function from one pydantic-ai stream event to our events (none, one or more)."""
    from pydantic_ai import (
        AgentRunResultEvent,
        FunctionToolCallEvent,
        FunctionToolResultEvent,
        PartDeltaEvent,
        PartStartEvent,
    )
    from pydantic_ai.messages import FilePart, RetryPromptPart, TextPart, TextPartDelta, ThinkingPart, ThinkingPartDelta

    def translate(ev: Any) -> Iterator[Event]:
        if isinstance(ev, PartStartEvent):
            part = ev.part
            if isinstance(part, TextPart) and part.content:
                state.parts.append(part.content)
                yield TextDelta(part.content)
            elif isinstance(part, ThinkingPart) and part.content:
                yield ReasoningDelta(part.content)
            elif isinstance(part, FilePart) and (made := part_of_file(part.content)) is not None:
                yield ReplyPart(made)
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
                yield ToolStarted(call.tool_call_id, call.tool_name, args_of(call))
        elif isinstance(ev, FunctionToolResultEvent):
            result = ev.part
            name = state.open_calls.pop(result.tool_call_id, None)
            if name is not None:
                failed = isinstance(result, RetryPromptPart) or result.tool_call_id in state.denied
                yield ToolFinished(result.tool_call_id, name, jsonable(result.content), failed, parts_of_result(result.content))
            if not isinstance(result, RetryPromptPart):
                yield from bridge.after_tool(result)
        elif isinstance(ev, AgentRunResultEvent):
            state.output = ev.result.output
            state.run_usage = ev.result.usage

    return translate


def _ending(state: _RunState, run_id: str, usage: tuple[ModelUsage, ...]) -> Iterator[Event]:
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
                yield ToolStarted(call.tool_call_id, call.tool_name, args_of(call))
        yield RunFinished(run_id, "".join(parts), STOP_PENDING_TOOLS, usage)
        return
    for call_id, name in list(open_calls.items()):
        yield ToolFinished(call_id, name, "no result", True)
    if output is not None and not isinstance(output, str):
        text = json.dumps(jsonable(output), ensure_ascii=False)
        parts.append(text)
        yield TextDelta(text)
    elif isinstance(output, str) and not parts and output:
        parts.append(output)  # a model that did not stream its text
        yield TextDelta(output)
    yield RunFinished(run_id, "".join(parts), usage=usage)
