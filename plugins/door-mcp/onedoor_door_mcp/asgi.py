"""The streamable HTTP shape: an ASGI app the HTTP transport mounts under ``/mcp``.

The SDK's session manager serves the protocol (stateful sessions, SSE responses so
progress notifications flow). Its task group lives in ``lifespan``, which the parent
app enters at start-up (mounted apps' own lifespans do not run); run on its own (e.g.
``uvicorn``), the app handles the ASGI lifespan itself.

DNS-rebinding protection: a browser page on an attacker's domain can resolve that
domain to 127.0.0.1 and reach this server; its requests then carry the attacker's
Host (and Origin). Only loopback names, the host the transport binds and the hosts
named in ``allowed_hosts`` are served; others get 421 (wrong Host) or 403 (wrong
Origin). The check runs here, for both SDK versions, and again inside the SDK. A server
bound to every interface (0.0.0.0) behind the transport's bearer token accepts any Host,
since a rebinding page cannot present the token; browser Origins are still checked.
"""

from __future__ import annotations

from contextlib import asynccontextmanager
from typing import Any, AsyncIterator

from onedoor.composition import AsgiMount, ServeContext

from . import compat
from .options import McpOptions
from .server import build

LOOPBACK = ("127.0.0.1", "localhost", "[::1]")
WILDCARD_BINDS = ("", "0.0.0.0", "::", "[::]")


def _bracket(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def allowed_hosts(options: McpOptions, bind_host: str | None = None) -> list[str]:
    names = list(LOOPBACK)
    if bind_host and bind_host not in WILDCARD_BINDS:
        names.append(_bracket(bind_host))
    out: list[str] = []
    for name in names:
        out += [name, f"{name}:*"]
    out += [h for h in options.allowed_hosts if h]
    return list(dict.fromkeys(out))


def allowed_origins(options: McpOptions, bind_host: str | None = None) -> list[str]:
    out: list[str] = []
    for name in allowed_hosts(McpOptions(), bind_host):
        if not name.endswith(":*"):
            out += [f"http://{name}", f"http://{name}:*", f"https://{name}", f"https://{name}:*"]
    out += [o for o in options.allowed_origins if o]
    return list(dict.fromkeys(out))


def _matches(value: str, patterns: list[str]) -> bool:
    for pattern in patterns:
        if value == pattern or pattern == "*":
            return True
        if pattern.endswith(":*") and value.startswith(pattern[:-1]) and value[len(pattern) - 1 :].isdigit():
            return True
    return False


async def _plain(send: Any, status: int, text: str) -> None:
    body = text.encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


class McpApp:
    """ASGI app: Host/Origin checks, then the SDK's streamable HTTP session manager."""

    def __init__(self, manager: Any, hosts: list[str], origins: list[str], protect: bool) -> None:
        self.manager = manager
        self.hosts = hosts
        self.origins = origins
        self.protect = protect

    def lifespan(self) -> Any:
        """The async context manager the parent app enters at start-up (once)."""
        return self.manager.run()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        kind = scope["type"]
        if kind == "lifespan":
            await self._own_lifespan(receive, send)
            return
        if kind != "http":
            return
        if self.protect:
            headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
            if not _matches(headers.get("host", ""), self.hosts):
                await _plain(send, 421, "Invalid Host header (DNS rebinding protection); see the mcp door's allowed_hosts option")
                return
            origin = headers.get("origin")
            if origin and not _matches(origin, self.origins):
                await _plain(send, 403, "Invalid Origin header; see the mcp door's allowed_origins option")
                return
        await self.manager.handle_request(scope, receive, send)

    async def _own_lifespan(self, receive: Any, send: Any) -> None:
        """Run standalone (not mounted): serve the ASGI lifespan protocol ourselves."""
        message = await receive()
        if message["type"] != "lifespan.startup":
            return
        async with self.lifespan():
            await send({"type": "lifespan.startup.complete"})
            while (await receive())["type"] != "lifespan.shutdown":
                pass
        await send({"type": "lifespan.shutdown.complete"})


def make_app(ctx: ServeContext, options: McpOptions | None = None, door: str = "mcp") -> McpApp:
    options = options or McpOptions()
    transport_options = ctx.options_for(ctx.transport_name) if ctx.transport_name else None
    bind_host = getattr(transport_options, "host", None)
    hosts = allowed_hosts(options, bind_host)
    if bind_host in WILDCARD_BINDS[1:] and getattr(transport_options, "token", None):
        # Served to the network behind a bearer token: a rebinding page cannot present the
        # token, and the names clients use are unknown here. Origin is still checked.
        hosts = ["*"]
    origins = allowed_origins(options, bind_host)
    server, _tool = build(ctx.kernel, options, door)
    manager = compat.session_manager(
        server,
        stateless=options.stateless,
        hosts=hosts,
        origins=origins,
        protect=options.dns_rebinding_protection and hosts != ["*"],  # the SDK knows no "any host"
        max_body=options.max_body_bytes,
    )
    return McpApp(manager, hosts, origins, options.dns_rebinding_protection)


def mount(ctx: ServeContext, options: McpOptions | None = None, door: str = "mcp") -> AsgiMount:
    app = make_app(ctx, options, door)
    return AsgiMount(app=app, prefix="/mcp", lifespan=app.lifespan, links=[("MCP endpoint (streamable HTTP)", "/mcp")])


@asynccontextmanager
async def running(app: McpApp) -> AsyncIterator[McpApp]:
    """Enter an app's lifespan (for embedding in another ASGI server by hand)."""
    async with app.lifespan():
        yield app
