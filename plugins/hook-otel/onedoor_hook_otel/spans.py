"""The spans: a SERVER span per request a door serves, ``invoke_agent {backend}`` per run,
``execute_tool {name}`` per tool call and ``ask_person {kind}`` while a question waits for
its answer.

Parents: a request's span is a child of the span current where the door serves it, unless
the request carries W3C trace context of another trace (the client's ``traceparent``),
which it then continues. A run's span follows the same rule with the run's ``meta``: a
run started inside a request is the request span's child, and a run whose door passed on
a client's ``traceparent`` (an MCP ``_meta``) continues the client's trace. The run's span
is made current in the backend's own context (``onedoor_backend_starting``), on its
worker thread or task, so the spans a library makes there nest under it.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

from . import names as n

MAX_CONTENT_CHARS = 64 * 1024  # one captured message or tool argument, at most


def _json(value: Any) -> str:
    try:
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= MAX_CONTENT_CHARS else text[:MAX_CONTENT_CHARS] + "…"


@dataclass
class RunSpans:
    """What a run's observers keep between its hooks."""

    span: Any
    started: float  # time.perf_counter()
    first_chunk: float | None = None
    tools: dict[str, tuple[Any, float]] = field(default_factory=dict)  # call id -> (span, started)
    questions: dict[str, Any] = field(default_factory=dict)  # question id -> span


class Spans:
    """Makes and ends the spans; ``capture``: message content and tool arguments on them."""

    def __init__(self, tracer_provider: Any, capture: bool) -> None:
        from onedoor import __version__
        from opentelemetry import context, propagate, trace

        self.tracer = tracer_provider.get_tracer("onedoor", __version__)
        self.capture = capture
        self._trace = trace
        self._context = context
        self._propagate = propagate
        self._server = trace.SpanKind.SERVER
        self._internal = trace.SpanKind.INTERNAL

    # -- parents ---------------------------------------------------------------------------
    def parent(self, meta: dict[str, str]) -> Any:
        """The context a new span starts in: the current one, unless ``meta`` carries trace
        context of another trace (then that, as a remote parent)."""
        current = self._context.get_current()
        if not meta or "traceparent" not in meta:
            return current
        carried = self._propagate.extract(meta)
        remote = self._trace.get_current_span(carried).get_span_context()
        if not remote.is_valid:
            return current
        here = self._trace.get_current_span(current).get_span_context()
        if here.is_valid and here.trace_id == remote.trace_id:
            return current
        return carried

    # -- requests ----------------------------------------------------------------------------
    def request_started(self, request: Any) -> None:
        attributes: dict[str, Any] = {n.DOOR: request.door, n.TRANSPORT: request.transport,
                                      n.PRINCIPAL: request.principal}
        method = request.method or ""
        name = f"{request.door} {method}".strip()
        verb, _, route = method.partition(" ")
        if request.transport == "http" and verb.isupper() and route.startswith(("/", "(")):
            attributes[n.HTTP_METHOD] = verb  # "POST /chat/stream": a door's route, or the transport's path
            attributes[n.HTTP_ROUTE] = route
            name = method
        elif method:
            attributes[n.MCP_METHOD if request.door == "mcp" else n.RPC_METHOD] = method
            attributes[n.REQUEST_METHOD] = method
        parent = self.parent(request.meta)
        span = self.tracer.start_span(name, context=parent, kind=self._server, attributes=attributes)
        token = self._context.attach(self._trace.set_span_in_context(span, parent))
        request.scratch["otel"] = (span, token)

    def request_finished(self, request: Any, error: str | None) -> None:
        span, token = request.scratch.pop("otel", (None, None))
        if span is None:
            return
        if error:
            span.set_attribute(n.ERROR_TYPE, error.split(":", 1)[0])
            span.set_status(self._trace.Status(self._trace.StatusCode.ERROR, error[:500]))
        span.end()
        self._context.detach(token)

    # -- runs ------------------------------------------------------------------------------
    def run_started(self, run: Any) -> RunSpans:
        attributes: dict[str, Any] = {
            n.OPERATION: n.INVOKE_AGENT, n.AGENT_NAME: run.backend, n.DOOR: run.door, n.RUN_ID: run.run_id,
            n.PRINCIPAL: run.principal,
        }
        if run.thread_id:
            attributes[n.CONVERSATION_ID] = run.thread_id
        if self.capture:
            message = [{"role": "user", "parts": [{"type": "text", "content": run.message}]}]
            attributes[n.INPUT_MESSAGES] = _json(message)
        span = self.tracer.start_span(f"{n.INVOKE_AGENT} {run.backend}", context=self.parent(run.meta),
                                      kind=self._internal, attributes=attributes)
        return RunSpans(span, time.perf_counter())

    def backend_starting(self, spans: RunSpans) -> None:
        """In the backend's context (a copy made for the run): the run's span is current there."""
        self._context.attach(self._trace.set_span_in_context(spans.span))

    def first_chunk(self, spans: RunSpans) -> float:
        spans.first_chunk = time.perf_counter() - spans.started
        spans.span.set_attribute(n.TIME_TO_FIRST_CHUNK, spans.first_chunk)
        return spans.first_chunk

    def run_finished(self, spans: RunSpans, outcome: Any, models: dict[str, Any]) -> None:
        span = spans.span
        for call_id in list(spans.tools):
            self.tool_finished(spans, call_id, None)
        for question_id in list(spans.questions):
            self.question_answered(spans, question_id, None)
        usage = tuple(getattr(outcome, "usage", ()) or ())
        if usage:
            span.set_attributes(usage_attributes(usage))
        span.set_attributes(models)
        stop_reason = getattr(outcome, "stop_reason", None)
        if stop_reason is None:
            span.set_attribute(n.ERROR_TYPE, "run_failed")
            span.set_status(self._trace.Status(self._trace.StatusCode.ERROR, str(outcome.error)[:500]))
        else:
            span.set_attribute(n.FINISH_REASONS, [stop_reason])
            if self.capture:
                reply = [{"role": "assistant", "parts": [{"type": "text", "content": outcome.text}],
                          "finish_reason": stop_reason}]
                span.set_attribute(n.OUTPUT_MESSAGES, _json(reply))
        span.end()

    # -- tools and questions ----------------------------------------------------------------------
    def _child(self, spans: RunSpans, name: str, attributes: dict[str, Any]) -> Any:
        context = self._trace.set_span_in_context(spans.span)
        return self.tracer.start_span(name, context=context, kind=self._internal, attributes=attributes)

    def tool_started(self, spans: RunSpans, call: Any) -> None:
        attributes: dict[str, Any] = {n.OPERATION: n.EXECUTE_TOOL, n.TOOL_NAME: call.name, n.TOOL_CALL_ID: call.call_id,
                                      n.TOOL_TYPE: "function"}
        if self.capture:
            attributes[n.TOOL_ARGUMENTS] = _json(call.arguments)
        old = spans.tools.pop(call.call_id, None)
        if old is not None:
            old[0].end()
        spans.tools[call.call_id] = (self._child(spans, f"{n.EXECUTE_TOOL} {call.name}", attributes), time.perf_counter())

    def tool_finished(self, spans: RunSpans, call_id: str, result: Any) -> float | None:
        """End a tool's span (``result`` None: the run ended first); its duration."""
        held = spans.tools.pop(call_id, None)
        if held is None:
            return None
        span, started = held
        if result is not None and result.is_error:
            span.set_attribute(n.ERROR_TYPE, "tool_error")
            span.set_status(self._trace.Status(self._trace.StatusCode.ERROR, "the tool call failed"))
        if result is not None and self.capture:
            span.set_attribute(n.TOOL_RESULT, _json(result.result))
        span.end()
        return time.perf_counter() - started

    def question_asked(self, spans: RunSpans, question: Any) -> None:
        attributes: dict[str, Any] = {n.QUESTION_ID: question.id, n.QUESTION_KIND: question.kind}
        if question.tool is not None:
            attributes[n.TOOL_NAME] = question.tool.name
            attributes[n.TOOL_CALL_ID] = question.tool.id
        if self.capture:
            attributes[n.QUESTION_PROMPT] = _json(question.prompt)
        spans.questions[question.id] = self._child(spans, f"ask_person {question.kind}", attributes)

    def question_answered(self, spans: RunSpans, question_id: str, answer: Any) -> None:
        span = spans.questions.pop(question_id, None)
        if span is None:
            return
        if answer is not None:
            span.set_attributes({n.ANSWER_OUTCOME: answer.outcome, n.ANSWER_HOW: answer.how})
        else:
            span.set_attribute(n.ANSWER_HOW, "run_ended")
        span.end()


def usage_attributes(usage: tuple[Any, ...]) -> dict[str, Any]:
    """The ``gen_ai.usage.*`` attributes of a run's usage (summed over its models)."""
    out: dict[str, Any] = {
        n.INPUT_TOKENS: sum(u.input_tokens for u in usage),
        n.OUTPUT_TOKENS: sum(u.output_tokens for u in usage),
        n.REQUESTS: sum(u.requests for u in usage),
    }
    for key, attribute in (("cache_read_tokens", n.CACHE_READ_TOKENS), ("cache_write_tokens", n.CACHE_WRITE_TOKENS),
                           ("reasoning_tokens", n.REASONING_TOKENS)):
        total = sum(getattr(u, key) for u in usage)
        if total:
            out[attribute] = total
    costs = [u for u in usage if u.cost is not None]
    currencies = {u.currency for u in costs}
    if costs and len(currencies) == 1:
        out[n.COST] = float(sum(u.cost for u in costs))
        out[n.CURRENCY] = currencies.pop() or "USD"
    return out


def model_attributes(usage: tuple[Any, ...]) -> dict[str, Any]:
    """Provider and model for the span and the metrics: named when the run used one model."""
    models = sorted({u.model for u in usage if u.model})
    providers = sorted({u.provider for u in usage if u.provider})
    out: dict[str, Any] = {}
    if len(providers) == 1:
        out[n.PROVIDER] = providers[0]
    if len(models) == 1:
        out[n.REQUEST_MODEL] = out[n.RESPONSE_MODEL] = models[0]
    elif models:
        out[n.MODELS] = models
    return out
