"""Every request the door serves, told to observers: :class:`ObservedRequests`.

Each HTTP request to the door (a JSON-RPC call, an HTTP+JSON call, the card) is served
inside ``onedoor.observe.observed_request`` (nothing at all when nobody observes
requests), so a run it starts is inside it. What observers see:

- ``method``: the JSON-RPC method as the client named it (``SendMessage``, 0.3's
  ``message/send``…); for the HTTP+JSON binding the A2A method its route is
  (``SendMessage``, ``GetTask``…, else ``HTTP GET`` and the like); ``GetAgentCard``;
- ``meta``: the W3C trace context of the request's headers (``traceparent``, ``tracestate``,
  ``baggage``); ``principal``: who the transport's guard says is calling.

The body is the one the HTTP transport's guard decoded (``scope["onedoor.json"]``): the
door reads nothing more.
"""

from __future__ import annotations

import re
from typing import Any, MutableMapping

from onedoor.observe import observed, observed_request, trace_meta
from onedoor_transport_http.body import JSON_BODY

from . import CARD_PATH
from .refusals import REST_PATH, door_path

_REST_METHODS = (
    (re.compile(r"message:send"), "SendMessage"),
    (re.compile(r"message:stream"), "SendStreamingMessage"),
    (re.compile(r"tasks/[^/]+:cancel"), "CancelTask"),
    (re.compile(r"tasks/[^/]+:subscribe"), "SubscribeToTask"),
    (re.compile(r"tasks/[^/]+/pushNotificationConfigs(/.*)?"), "TaskPushNotificationConfig"),
    (re.compile(r"tasks/[^/:]+"), "GetTask"),
    (re.compile(r"tasks"), "ListTasks"),
    (re.compile(r"extendedAgentCard"), "GetExtendedAgentCard"),
)


def method_of(scope: MutableMapping[str, Any]) -> str:
    """The A2A method a request to the door calls (see the module docstring)."""
    path = door_path(scope)
    if path.endswith(CARD_PATH):
        return "GetAgentCard"
    if path.startswith(REST_PATH):
        rest = path[len(REST_PATH):].strip("/")
        for pattern, name in _REST_METHODS:
            if pattern.fullmatch(rest):
                return name
        return f"HTTP {scope.get('method', '')}"
    body = scope.get(JSON_BODY)
    method = body.get("method") if isinstance(body, dict) else None
    return method[:100] if isinstance(method, str) else "JSON-RPC"


class ObservedRequests:
    """ASGI: the door's app, each HTTP request inside ``observed_request`` (the kernel's hooks)."""

    def __init__(self, app: Any, kernel: Any, *, door: str = "a2a", transport: str = "http") -> None:
        self.app = app
        self.kernel = kernel
        self.door = door
        self.transport = transport or "http"

    async def __call__(self, scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:
        hooks = self.kernel.hooks
        if scope.get("type") != "http" or not (
                observed(hooks, "onedoor_request_started") or observed(hooks, "onedoor_request_finished")):
            await self.app(scope, receive, send)
            return
        from onedoor import ServeContext

        async with observed_request(
            hooks, door=self.door, transport=self.transport, method=method_of(scope),
            meta=trace_meta(dict(scope.get("headers") or ())), principal=ServeContext.principal_of(scope),
        ):
            await self.app(scope, receive, send)


__all__ = ["ObservedRequests", "method_of"]
