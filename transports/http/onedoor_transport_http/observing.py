"""Each HTTP request the guard lets through, told to the request observers
(``onedoor_request_started`` / ``onedoor_request_finished``, :mod:`onedoor.observe`).

Inside the guard: the caller's principal is known, and a request the guard refuses
(401, 421…) is not observed. The request's door is the one whose prefix its path is
under (``http`` for the transport's own paths); its ``method`` is the HTTP method and the
path (``"GET /healthz"``; ``"GET (no route)"`` for a path nothing serves, so that a scan
of random paths does not make random names); its ``meta`` the W3C trace context headers.
Built only when something observes requests, so a server without observers has no such
layer.

A door that serves each of its requests inside ``observed_request`` itself (naming the
protocol's method, reading trace context from the protocol's own fields) says so with a
true ``observes_requests`` attribute; the requests under its prefix then pass through
here, so that observers hear of each request once.
"""

from __future__ import annotations

from onedoor.composition import AsgiMount
from onedoor.observe import observed, observed_request, trace_meta
from onedoor.principals import principal_of

from .asgi_types import ASGIApp, Receive, Scope, Send

_TRACE_HEADERS = frozenset({b"traceparent", b"tracestate", b"baggage"})


class ObservedRequests:
    """Plain ASGI middleware: every ``http`` request inside :func:`onedoor.observe.observed_request`."""

    def __init__(self, app: ASGIApp, hooks: object, doors: dict[str, str], own: frozenset[str] = frozenset(),
                 routes: frozenset[str] = frozenset()) -> None:
        """``doors``: prefix -> door name; ``own``: the prefixes of doors that observe their own
        requests; ``routes``: the paths the transport's app serves itself (``/healthz``…)."""
        self.app = app
        self.hooks = hooks
        self.routes = routes
        self.prefixes = sorted(((p.rstrip("/"), name, p in own) for p, name in doors.items() if p.rstrip("/")),
                               key=lambda item: -len(item[0]))

    def door_for(self, path: str) -> tuple[str, bool]:
        """The door serving ``path`` and whether it observes its requests itself."""
        for prefix, name, itself in self.prefixes:
            if path == prefix or path.startswith(prefix + "/"):
                return name, itself
        return "http", False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = scope.get("path", "")
        door, itself = self.door_for(path)
        if itself:
            await self.app(scope, receive, send)
            return
        carried = {name: value for name, value in scope.get("headers", ()) if name in _TRACE_HEADERS}
        shown = path if door != "http" or path in self.routes else "(no route)"
        async with observed_request(
            self.hooks, door=door, transport="http", method=f"{scope.get('method', 'GET')} {shown}",
            meta=trace_meta(carried), principal=principal_of(scope),
        ):
            await self.app(scope, receive, send)


def observe_requests(app: ASGIApp, hooks: object, doors: list[tuple[object, AsgiMount]],
                     routes: frozenset[str] = frozenset()) -> ASGIApp:
    """``app`` inside :class:`ObservedRequests` when a request observer is registered, else
    ``app``. ``doors``: each door with its mount; ``routes``: the app's own paths."""
    if hooks is None or not (observed(hooks, "onedoor_request_started") or observed(hooks, "onedoor_request_finished")):
        return app
    own = frozenset(mount.prefix for door, mount in doors if getattr(door, "observes_requests", False) is True)
    names = {mount.prefix: str(getattr(door, "name", "")) for door, mount in doors}
    return ObservedRequests(app, hooks, names, own, routes)
