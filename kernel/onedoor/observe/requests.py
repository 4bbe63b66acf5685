"""How a door tells observers about a request it serves: :func:`observed_request`, the
:class:`RequestInfo` observers get, and :func:`trace_meta` (the W3C trace context a
client sent). Loaded on first use: ``onedoor run`` serves no request."""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field
from typing import Any, AsyncIterator

from ..principals import LOCAL
from . import notify, observed

TRACE_KEYS = ("traceparent", "tracestate", "baggage")  # W3C trace context, passed on as it came


@dataclass
class RequestInfo:
    """A request (or message) a door is serving, as observers see it. ``meta``: what the
    client sent that observers may want (W3C trace context: :data:`TRACE_KEYS`)."""

    door: str
    transport: str = ""
    method: str = ""
    meta: dict[str, str] = field(default_factory=dict)
    principal: str = LOCAL
    started_at: float = field(default_factory=time.time)
    scratch: dict[str, Any] = field(default_factory=dict)  # the observers' own


def trace_meta(source: Any) -> dict[str, str]:
    """The W3C trace context in ``source`` (headers, an MCP ``_meta``, SLIM metadata: any
    mapping, keys compared without case), as short strings; empty when there is none."""
    if not source:
        return {}
    try:
        items = source.items()
    except AttributeError:
        return {}
    found: dict[str, str] = {}
    for key, value in items:
        name = key.decode("latin-1") if isinstance(key, bytes) else key
        if isinstance(name, str) and name.lower() in TRACE_KEYS:
            text = value.decode("latin-1") if isinstance(value, bytes) else value
            if isinstance(text, str) and len(text) <= 1024:
                found[name.lower()] = text
    return found


@contextlib.asynccontextmanager
async def observed_request(
    hooks: Any, *, door: str, transport: str = "", method: str = "", meta: dict[str, str] | None = None,
    principal: str = LOCAL,
) -> AsyncIterator[RequestInfo | None]:
    """Serve a request inside ``onedoor_request_started`` / ``onedoor_request_finished``
    (nothing at all when nobody observes requests: yields None)."""
    if not observed(hooks, "onedoor_request_started") and not observed(hooks, "onedoor_request_finished"):
        yield None
        return
    request = RequestInfo(door, transport, method, dict(meta or {}), principal)
    notify(hooks, "onedoor_request_started", request=request)
    error: str | None = None
    try:
        yield request
    except BaseException as exc:
        error = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        raise
    finally:
        notify(hooks, "onedoor_request_finished", request=request, error=error)


__all__ = ["RequestInfo", "TRACE_KEYS", "observed_request", "trace_meta"]
