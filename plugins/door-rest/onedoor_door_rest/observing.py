"""Every request to the door inside :func:`onedoor.observe.observed_request`: observers (a
tracer's SERVER span) see it from its first byte to the end of its response, a stream's
last event included, with the caller's W3C trace context (``traceparent``, ``tracestate``,
``baggage``) and principal. Runs started by the request are inside it. Without observers it
costs a lookup per request.
"""

from __future__ import annotations

from typing import Any

from onedoor.observe import observed, observed_request, trace_meta

_HOOKS = ("onedoor_request_started", "onedoor_request_finished")


class ObservedRequests:
    """Plain ASGI middleware around the door's app. ``method`` is the HTTP method and the
    route's path template (``POST /threads/{thread_id}/chat``), never an id."""

    def __init__(self, app: Any, ctx: Any) -> None:
        self.app = app
        self.ctx = ctx

    def __getattr__(self, name: str) -> Any:  # the FastAPI app's own attributes (openapi, routes…)
        return getattr(self.app, name)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        hooks = self.ctx.kernel.hooks
        if scope["type"] != "http" or not any(observed(hooks, hook) for hook in _HOOKS):
            await self.app(scope, receive, send)
            return
        method = f"{scope.get('method', 'GET')} {self._template(scope)}"
        async with observed_request(hooks, door="rest", transport="http", method=method,
                                    meta=trace_meta(dict(scope.get("headers") or ())),
                                    principal=self.ctx.principal_of(scope)):
            await self.app(scope, receive, send)

    def _template(self, scope: Any) -> str:
        from starlette.routing import Match

        for route in self.app.router.routes:
            match, _ = route.matches(scope)
            if match is Match.FULL:
                return str(getattr(route, "path", scope.get("path", "")))
        return "(no route)"


__all__ = ["ObservedRequests"]
