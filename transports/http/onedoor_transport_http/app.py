"""The shared ASGI application: door mounts, health, and the guards around them.

Layers, outermost first: CORS (only when origins are listed, so preflights are answered
before auth), bearer-token auth (every path but ``/healthz``), the body-size cap, the
bare-prefix rewrite (``/mcp`` is served as ``/mcp/``), then the router with one Mount per
door. All guards are plain ASGI, so streaming responses
pass through untouched, and nothing added by a door or by the ``onedoor_http_app`` hook
can sit outside them.
"""

from __future__ import annotations

import contextlib
import hmac
import json
from typing import Any, AsyncIterator, Awaitable, Callable

from onedoor.composition import AsgiMount, ServeContext

from . import HttpOptions

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

HEALTH_PATH = "/healthz"


async def send_json_error(send: Send, status: int, code: str, detail: str, headers: list[tuple[bytes, bytes]] = ()) -> None:  # type: ignore[assignment]
    body = json.dumps({"error": code, "detail": detail}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


class BearerAuth:
    """Require the token on every request except the health check."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.expected = token.encode()

    def _presented(self, scope: Scope) -> bytes | None:
        for name, value in scope.get("headers", ()):
            if name == b"authorization":
                scheme, _, credentials = value.partition(b" ")
                if scheme.lower() == b"bearer":
                    return credentials.strip()
                return None
        from urllib.parse import parse_qs

        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        if "token" in query:
            return query["token"][0].encode("latin-1")
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket") or scope.get("path") == HEALTH_PATH:
            await self.app(scope, receive, send)
            return
        presented = self._presented(scope)
        if presented is not None and hmac.compare_digest(presented, self.expected):
            await self.app(scope, receive, send)
            return
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 4401})
            return
        detail = "missing bearer token" if presented is None else "wrong bearer token"
        await send_json_error(send, 401, "unauthorized", detail, [(b"www-authenticate", b'Bearer realm="onedoor"')])


class BodyLimit:
    """Refuse request bodies over the limit with 413, before any door reads them."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") in ("GET", "HEAD", "OPTIONS"):
            await self.app(scope, receive, send)
            return
        for name, value in scope.get("headers", ()):
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    await send_json_error(send, 400, "bad_request", "malformed Content-Length")
                    return
                if declared > self.limit:
                    await send_json_error(send, 413, "too_large", f"request body over {self.limit} bytes")
                    return
        # Read the body (bounded), then replay it: chunked uploads are capped too.
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.limit:
                await send_json_error(send, 413, "too_large", f"request body over {self.limit} bytes")
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        replayed = False

        async def replay() -> dict[str, Any]:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


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


def _cors(app: ASGIApp, origins: list[str]) -> ASGIApp:
    from starlette.middleware.cors import CORSMiddleware

    return CORSMiddleware(
        app,
        allow_origins=origins,
        allow_methods=["GET", "POST", "DELETE", "OPTIONS"],
        allow_headers=["authorization", "content-type", "accept", "mcp-session-id", "mcp-protocol-version", "last-event-id"],
        expose_headers=["mcp-session-id"],
    )


def build_app(doors: list[Any], ctx: ServeContext, options: HttpOptions) -> tuple[ASGIApp, list[AsgiMount]]:
    """The guarded app and the mounts it serves (for start-up lines)."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse, RedirectResponse
    from starlette.routing import Mount, Route

    mounts = [door.asgi_mount(ctx) for door in doors]

    async def health(request: Request) -> JSONResponse:
        kernel = ctx.kernel
        return JSONResponse(
            {
                "status": "ok",
                "doors": [d.name for d in doors],
                "backend": kernel.backend.name,
                "active_runs": kernel.active_runs,
            }
        )

    async def root(request: Request) -> Any:
        for mount in mounts:
            for _label, path in mount.links:
                target = path
                if request.url.query:
                    target += "?" + request.url.query
                return RedirectResponse(target, status_code=307)
        return JSONResponse({"doors": {d.name: m.prefix for d, m in zip(doors, mounts)}})

    async def not_found(request: Request, exc: Exception) -> JSONResponse:
        return JSONResponse({"error": "not_found", "detail": f"no route for {request.url.path}"}, status_code=404)

    @contextlib.asynccontextmanager
    async def lifespan(app: Any) -> AsyncIterator[None]:
        async with contextlib.AsyncExitStack() as stack:
            for mount in mounts:
                if mount.lifespan is not None:
                    await stack.enter_async_context(mount.lifespan())
            yield
            ctx.kernel.cancel_all()

    routes: list[Any] = [Route(HEALTH_PATH, health), Route("/", root)]
    routes += [Mount(m.prefix.rstrip("/") or "/", app=m.app) for m in mounts]
    app = Starlette(routes=routes, lifespan=lifespan, exception_handlers={404: not_found})
    if ctx.hooks is not None:
        ctx.hooks.onedoor_http_app(app=app, ctx=ctx)
    guarded: ASGIApp = BodyLimit(ExactPrefix(app, [m.prefix for m in mounts]), options.max_body_bytes)
    if options.token:
        guarded = BearerAuth(guarded, options.token)
    if options.cors_origins:
        guarded = _cors(guarded, list(options.cors_origins))
    return guarded, mounts
