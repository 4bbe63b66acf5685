"""What wraps the door's app: every request inside :func:`onedoor.observe.observed_request`: observers (a
tracer's SERVER span) see it from its first byte to the end of its response, a stream's
last event included, with the caller's W3C trace context (``traceparent``, ``tracestate``,
``baggage``) and principal. Runs started by the request are inside it. Without observers it
costs a lookup per request. And an upload to a call that takes JSON only is refused (415).
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
        method = f"{scope.get('method', 'GET')} {route_template(self.app, scope) or '(no route)'}"
        async with observed_request(hooks, door="rest", transport="http", method=method,
                                    meta=trace_meta(dict(scope.get("headers") or ())),
                                    principal=self.ctx.principal_of(scope)):
            await self.app(scope, receive, send)



def fastapi_telemetry(ctx: Any) -> dict[str, Any]:
    """The ``telemetry`` argument for ``FastAPI()`` (0.160 and later trace and measure every
    request once a global OpenTelemetry provider is set): a request onedoor observes is
    left out of it, so it has one SERVER span (onedoor's, with the route, principal and the
    runs inside it), not two nested ones, and does not pay twice for every streamed chunk.
    Without observers (a provider set up by an application, no onedoor telemetry) FastAPI's
    own telemetry is as it would be. Empty for a FastAPI without native telemetry."""
    import inspect

    from fastapi import FastAPI

    if "telemetry" not in inspect.signature(FastAPI.__init__).parameters:
        return {}
    hooks = ctx.kernel.hooks

    def exclude(scope: Any) -> bool:
        return any(observed(hooks, hook) for hook in _HOOKS)

    return {"telemetry": {"exclude": exclude}}


def route_template(app: Any, scope: Any) -> str | None:
    """The path template of the route of ``app`` that answers ``scope`` (None: no route)."""
    from starlette.routing import Match

    for route in app.router.routes:
        match, _ = route.matches(scope)
        if match is Match.FULL:
            return str(getattr(route, "path", ""))
    return None


UPLOAD_ROUTES = frozenset({"/chat", "/chat/stream", "/threads/{thread_id}/chat", "/threads/{thread_id}/chat/stream"})


class UploadsWhereTaken:
    """A ``multipart/form-data`` POST (which the transport lets through for the chat calls)
    to any other call is 415, as any other type it does not take."""

    def __init__(self, app: Any) -> None:
        self.app = app

    def __getattr__(self, name: str) -> Any:
        return getattr(self.app, name)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope.get("method") == "POST" and _is_upload(scope):
            template = route_template(self.app, scope)
            if template is not None and template not in UPLOAD_ROUTES:
                from .responses import error_response

                await error_response(415, "unsupported_media_type", "send the body as application/json (uploads, "
                                     "multipart/form-data, go to the chat calls)")(scope, receive, send)
                return
        await self.app(scope, receive, send)


def _is_upload(scope: Any) -> bool:
    for name, value in scope.get("headers") or ():
        if name == b"content-type":
            return value.split(b";", 1)[0].strip().lower() == b"multipart/form-data"
    return False


__all__ = ["UPLOAD_ROUTES", "ObservedRequests", "UploadsWhereTaken", "fastapi_telemetry", "route_template"]
