"""The global propagator, made to keep a request in one trace when a framework inside a
door extracts the trace context from the request's headers itself.

FastAPI (from 0.16x, with a tracer provider set) starts its own SERVER span from the
request's headers, never from the current span, so inside the transport's request span
it would start a new trace (no ``traceparent``) or a sibling (with one). This wrapper
changes one case of ``propagate.extract(carrier)`` called without a context: it starts
from the *current* context instead of an empty one, and when the carrier holds just the
trace context the current span already continues (its parent), the current context is
the answer. A carrier with other trace context wins as usual; ``inject`` is unchanged.
Installed only when the plugin sets up the tracer provider itself.
"""

from __future__ import annotations

from typing import Any


def install() -> None:
    from opentelemetry import context as otel_context
    from opentelemetry import propagate, trace
    from opentelemetry.propagators.textmap import TextMapPropagator, default_getter, default_setter

    inner = propagate.get_global_textmap()
    if getattr(inner, "_onedoor", False):
        return

    class CurrentFirst(TextMapPropagator):
        _onedoor = True

        def extract(self, carrier: Any, context: Any = None, getter: Any = default_getter) -> Any:
            if context is not None:
                return inner.extract(carrier, context, getter)
            current = otel_context.get_current()
            found = inner.extract(carrier, current, getter)
            parent = getattr(trace.get_current_span(current), "parent", None)  # an SDK span's parent
            remote = trace.get_current_span(found).get_span_context()
            if parent is not None and remote.is_valid and (remote.trace_id, remote.span_id) == (
                    parent.trace_id, parent.span_id):
                return current
            return found

        def inject(self, carrier: Any, context: Any = None, setter: Any = default_setter) -> None:
            inner.inject(carrier, context, setter)

        @property
        def fields(self) -> set[str]:
            return set(inner.fields)

    propagate.set_global_textmap(CurrentFirst())
