"""The shared ASGI application: door mounts, health, and the guard around them.

Layers, outermost first: CORS (only when origins are listed, so preflights are answered
before auth; the allowed headers are the ones the doors declare), the :class:`Guard`
(Host, Origin, token, content type, body size, JSON: see :mod:`.guard`; every path, with
``/healthz`` and ``/readyz`` exempt from the token only: they tell a caller without it no
more than "ok" or "not ready"), the request observers' layer (only when a hook observes
requests: :mod:`.observing`), the bare-prefix rewrite (``/mcp`` is served as
``/mcp/``), then the router with one Mount per door. All layers are plain ASGI, so
streaming responses pass through untouched, and nothing added by a door or by the
``onedoor_http_app`` hook can sit outside them.
"""

from __future__ import annotations

import contextlib
from typing import Any, AsyncIterator, Awaitable, Callable, MutableMapping

from onedoor import AsgiMount, Endpoint, ServeContext, StoreUnavailable

from . import HttpOptions
from .errors import error_body, send_error
from .guard import Guard
from .health import HEALTH_PATH, READY_PATH, health_routes
from .oauth import make_gate
from .observing import observe_requests

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

CORS_HEADERS = ("authorization", "content-type", "accept")  # request headers every door may need

send_json_error = send_error  # an older name of errors.send_error, kept for plugins that use it


class ExactPrefix:
    """Serve ``/mcp`` as ``/mcp/`` for every door prefix, without a redirect.

    Starlette's Mount answers the bare prefix with a 307, before the door sees the
    request (and its own checks, such as the MCP door's Host check, can run).
    """

    def __init__(self, app: ASGIApp, prefixes: list[str]) -> None:
        self.app = app
        self.prefixes = {p.rstrip("/") for p in prefixes if p.rstrip("/")}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket") and scope.get("path") in self.prefixes:
            scope = dict(scope, path=scope["path"] + "/", raw_path=scope["path"].encode() + b"/")
        await self.app(scope, receive, send)


def _cors(app: ASGIApp, origins: list[str], mounts: list[AsgiMount], oauth: bool = False) -> ASGIApp:
    """CORS for the listed origins, with the request and response headers the doors declare."""
    from starlette.middleware.cors import CORSMiddleware

    allow = list(dict.fromkeys([*CORS_HEADERS, *(h.lower() for m in mounts for h in m.cors_headers)]))
    expose = list(dict.fromkeys(h.lower() for m in mounts for h in m.cors_expose))
    if oauth:  # a browser client reads the challenge of a 401 (its resource_metadata)
        expose.append("www-authenticate")
    return CORSMiddleware(
        app,
        allow_origins=origins,
        allow_methods=["GET", "POST", "DELETE", "OPTIONS"],
        allow_headers=allow,
        expose_headers=expose,
    )


def endpoint_for(options: HttpOptions) -> Endpoint:
    """What the transport tells its doors: where it listens, whether a token is required."""
    return Endpoint(host=options.host, port=options.port, token_required=options.requires_token)


def build_app(doors: list[Any], ctx: ServeContext, options: HttpOptions) -> tuple[ASGIApp, list[AsgiMount]]:
    """The guarded app and the mounts it serves (for start-up lines)."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse, RedirectResponse, Response
    from starlette.routing import Mount, Route

    if ctx.endpoint is None:
        ctx.endpoint = endpoint_for(options)
    mounts = [door.asgi_mount(ctx) for door in doors]
    oauth = make_gate(options, ctx.endpoint, [m.prefix for m in mounts])  # None unless oauth_issuer is set

    async def root(request: Request) -> Any:
        for mount in mounts:
            for _label, path in mount.links:
                target = path
                if request.url.query:
                    target += "?" + request.url.query
                return RedirectResponse(target, status_code=307)
        return JSONResponse({"doors": {d.name: m.prefix for d, m in zip(doors, mounts)}})

    async def store_unavailable(request: Request, exc: Exception) -> Response:
        body = error_body("store_unavailable", f"the thread store cannot be reached now ({exc}); try again")
        return Response(body, status_code=503, media_type="application/json", headers={"retry-after": "1"})

    async def not_found(request: Request, exc: Exception) -> Response:
        body = error_body("not_found", f"no route for {request.url.path}")
        return Response(body, status_code=404, media_type="application/json")

    @contextlib.asynccontextmanager
    async def lifespan(app: Any) -> AsyncIterator[None]:
        async with contextlib.AsyncExitStack() as stack:
            for mount in mounts:
                if mount.lifespan is not None:
                    await stack.enter_async_context(mount.lifespan())
            if oauth is not None:
                stack.push_async_callback(oauth.aclose)
            yield
            # Runs still going (not tied to a connection uvicorn drained, e.g. in a door's
            # own tasks) are cancelled and get their endings before the doors' lifespans close.
            await ctx.kernel.shutdown(options.shutdown_grace)

    routes: list[Any] = [*health_routes(ctx, doors, options), *(oauth.routes() if oauth else []), Route("/", root)]
    routes += [Mount(m.prefix.rstrip("/") or "/", app=m.app) for m in mounts]
    app = Starlette(routes=routes, lifespan=lifespan, exception_handlers={404: not_found, StoreUnavailable: store_unavailable})
    if ctx.hooks is not None:
        ctx.hooks.onedoor_http_app(app=app, ctx=ctx)
    own_routes = frozenset(route.path for route in app.router.routes if isinstance(route, Route))
    served = observe_requests(ExactPrefix(app, [m.prefix for m in mounts]), ctx.hooks, list(zip(doors, mounts)), own_routes)
    guarded: ASGIApp = Guard(
        served,
        mounts=mounts,
        endpoint=ctx.endpoint,
        tokens=options.principals(),
        allowed_hosts=options.served_hosts,
        cors_origins=options.cors_origins,
        max_body=options.max_body_bytes,
        open_paths=(HEALTH_PATH, READY_PATH),
        public_paths=tuple(path for m in mounts for path in m.public_paths) + (oauth.public_paths if oauth else ()),
        cookie_max_age=options.cookie_max_age,
        oauth=oauth,
        cookie_secret=options.page_cookie_secret,
    )
    if options.cors_origins:
        guarded = _cors(guarded, list(options.cors_origins), mounts, oauth=oauth is not None)
    return guarded, mounts
