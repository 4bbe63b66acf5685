"""The streamable HTTP shape: an ASGI app the HTTP transport mounts under ``/mcp``.

The SDK's session manager serves the protocol (stateful sessions, SSE responses so
progress notifications flow). Its task group lives in ``lifespan``, which the parent
app enters at start-up (mounted apps' own lifespans do not run); run on its own (e.g.
``uvicorn``), the app handles the ASGI lifespan itself.

DNS-rebinding and cross-site protection is the HTTP transport's, in one place for every
door (Host -> 421, foreign Origin -> 403, content type -> 415, JSON under onedoor.wire
-> 400; see ``onedoor_transport_http.guard``). This door only tells the transport what
it needs under its prefix (:class:`~onedoor.composition.AsgiMount`): the extra hosts and
origins of its ``allowed_hosts`` / ``allowed_origins`` options (any, when
``dns_rebinding_protection`` is off), and the CORS headers of streamable HTTP. Mounted
by the transport (``ctx.endpoint`` is set), the SDK's own Host check is off, so the two
cannot disagree; the app served alone (no transport) keeps the SDK's check, with
loopback names and the listed hosts.

A session can end while one of its requests is being handed to it: a client that gives up
on a call leaves at once, and its last messages (``notifications/cancelled``, its error
answer to an open elicitation) race its ``DELETE``. The SDK then fails the request after
its ``202`` went out and tries to send a ``500`` as well; the door drops what comes after
a finished response (:class:`_OneResponse`) and ends that request quietly (the SDK's own
log records of it are quieted in :func:`onedoor_door_mcp.sdk.quiet_session_end`).
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from contextlib import asynccontextmanager
from typing import Any, AsyncIterator

from onedoor import AsgiMount, ServeContext

from . import sdk
from .options import McpOptions
from .server import build

DECODED_BODY = "onedoor.json"  # scope key: the HTTP transport's guard put the body there, decoded

log = logging.getLogger("onedoor.door.mcp")

LOOPBACK = ("127.0.0.1", "localhost", "[::1]")
WILDCARD_BINDS = ("", "0.0.0.0", "::", "[::]")
CORS_HEADERS = ("mcp-session-id", "mcp-protocol-version", "last-event-id")  # what a browser client sends
CORS_EXPOSE = ("mcp-session-id",)  # what it must read back


def _bracket(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def allowed_hosts(options: McpOptions, bind_host: str | None = None) -> list[str]:
    """Host patterns for the SDK's check when the app is served alone."""
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
    """The SDK's matching rule (exact, or ``name:*`` for any port), for tests and tools."""
    for pattern in patterns:
        if value == pattern or pattern == "*":
            return True
        if pattern.endswith(":*") and value.startswith(pattern[:-1]) and value[len(pattern) - 1 :].isdigit():
            return True
    return False


class McpApp:
    """ASGI app: the SDK's streamable HTTP session manager, plus its lifespan.

    ``hosts`` and ``origins`` are the patterns this door accepts (the SDK checks them
    only when the app is served alone; mounted, the transport does).
    """

    def __init__(self, manager: Any, hosts: list[str], origins: list[str], protect: bool, *,
                 max_body: int = 16 * 1024 * 1024, mounted: bool = False) -> None:
        self.manager = manager
        self.hosts = hosts
        self.origins = origins
        self.protect = protect
        self.owners = SessionOwners()
        self.max_body = max_body
        self.mounted = mounted  # behind the transport's guard: the body comes whole, capped here
        self.unbuffered = sdk.unbuffered_handler(manager) if mounted else None  # 2.x: no second buffer of it

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
        scope.pop(DECODED_BODY, None)  # the SDK decodes the body itself: a big one is not also held decoded
        principal = ServeContext.principal_of(scope)
        session = _header(scope, b"mcp-session-id")
        if session is not None and not self.owners.allows(session, principal):
            await _unknown_session(send)  # another principal's session looks like no session
            return
        response = _OneResponse(self.owners.noting(principal, send))
        try:
            await self._handle(scope, receive, response.send)
        except Exception as exc:
            if not sdk.is_session_end(exc):
                raise
            # The session ended while this request was handed to it (see the module's docstring).
            log.debug("mcp: %s %s arrived as its session ended; dropped", scope.get("method"), scope.get("path"))
            if not response.started:
                await _unknown_session(response.send)

    async def _handle(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope.get("method") != "POST":
            await self.manager.handle_request(scope, receive, send)
            return
        # A POST carries a call: note when its client goes away, so the call's run can be
        # cancelled (the SDKs do not tell a handler), e.g. while the agent waits for an answer.
        import anyio

        gone = anyio.Event()

        async def watched() -> Any:
            message = await receive()
            if message.get("type") == "http.disconnect":
                gone.set()
            return message

        handler, receive_body = self.manager.handle_request, watched
        if self.mounted:
            handler, receive_body = await self._capped(watched, send)
            if handler is None:
                return
        await handler({**scope, sdk.CLIENT_GONE: gone}, receive_body, send)

    async def _capped(self, receive: Any, send: Any) -> tuple[Any, Any]:
        """(the handler, the receive to give it) for a POST whose body the guard replays
        whole: over ``max_body`` it is answered 413 here (handler None), as SDK 2.x's
        middleware would (1.x has none); else the SDK gets the body as it came, not copied."""
        held = [await receive()]
        whole = held[0].get("type") == "http.request" and not held[0].get("more_body", False)
        if whole and len(held[0].get("body", b"")) > self.max_body:
            await send({"type": "http.response.start", "status": 413, "headers": [(b"content-type", b"text/plain")]})
            await send({"type": "http.response.body", "body": b"Request body too large"})
            return None, receive

        async def replay() -> Any:
            return held.pop() if held else await receive()  # handed on once, then not held here

        return (self.unbuffered if whole and self.unbuffered is not None else self.manager.handle_request), replay

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


class _OneResponse:
    """``send`` for one HTTP request that drops what the app sends after its response is
    complete (the ASGI server would raise, and log a traceback)."""

    def __init__(self, send: Any) -> None:
        self._send = send
        self.started = False
        self.complete = False

    async def send(self, message: dict[str, Any]) -> None:
        kind = message.get("type")
        if self.complete and kind in ("http.response.start", "http.response.body"):
            log.debug("mcp: dropped %s sent after the response was complete", kind)
            return
        if kind == "http.response.start":
            self.started = True
        elif kind == "http.response.body" and not message.get("more_body", False):
            self.complete = True
        await self._send(message)


class SessionOwners:
    """Which principal opened each MCP session: a session is used only by its principal
    (its id travels in a header, and the token decides who is asking)."""

    LIMIT = 100_000  # sessions remembered; the oldest are forgotten first

    def __init__(self) -> None:
        self._owners: OrderedDict[str, str] = OrderedDict()

    def allows(self, session: str, principal: str) -> bool:
        """Every session the SDK makes is noted as its response goes out: one not noted is
        bogus or forgotten (the oldest go past LIMIT), and is nobody's to use."""
        return self._owners.get(session) == principal

    def noting(self, principal: str, send: Any) -> Any:
        """``send`` that records the principal of a session the SDK creates."""

        async def sending(message: dict[str, Any]) -> None:
            if message.get("type") == "http.response.start":
                for name, value in message.get("headers", ()):
                    if name.lower() == b"mcp-session-id":
                        self._owners[value.decode("latin-1")] = principal
                        while len(self._owners) > self.LIMIT:
                            self._owners.popitem(last=False)
            await send(message)

        return sending


def _header(scope: dict[str, Any], name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key.lower() == name:
            return value.decode("latin-1")
    return None


async def _unknown_session(send: Any) -> None:
    body = b'{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Session not found"}}'
    await send({"type": "http.response.start", "status": 404,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


def make_app(ctx: ServeContext, options: McpOptions | None = None, door: str = "mcp") -> McpApp:
    options = options or McpOptions()
    endpoint = ctx.endpoint
    bind_host = endpoint.host if endpoint is not None else None
    hosts = allowed_hosts(options, bind_host)
    if endpoint is not None and endpoint.host in WILDCARD_BINDS[1:] and endpoint.token_required:
        # Served to the network behind a bearer token: a rebinding page cannot present the
        # token, and the names clients use are unknown here. Origin is still checked.
        hosts = ["*"]
    origins = allowed_origins(options, bind_host)
    transport = ctx.transport_name or "http"
    token = getattr(ctx.options_for(transport), "token", "")  # requestState keys derive from it (mcp.keys)
    server, _tool = build(ctx.kernel, options, door, transport, token=token if isinstance(token, str) else "")
    mounted = endpoint is not None  # the transport's guard checks Host and Origin for us
    manager = sdk.session_manager(
        server,
        stateless=options.stateless,
        hosts=hosts,
        origins=origins,
        protect=options.dns_rebinding_protection and not mounted and hosts != ["*"],
        max_body=options.max_body_bytes,
    )
    return McpApp(manager, hosts, origins, options.dns_rebinding_protection, max_body=options.max_body_bytes,
                  mounted=mounted)


def mount(ctx: ServeContext, options: McpOptions | None = None, door: str = "mcp") -> AsgiMount:
    options = options or McpOptions()
    app = make_app(ctx, options, door)
    protect = options.dns_rebinding_protection
    return AsgiMount(
        app=app,
        prefix="/mcp",
        lifespan=app.lifespan,
        links=[("MCP endpoint (streamable HTTP)", "/mcp")],
        content_types=("application/json",),
        cors_headers=CORS_HEADERS,
        cors_expose=CORS_EXPOSE,
        allowed_hosts=tuple(options.allowed_hosts) if protect else ("*",),
        allowed_origins=tuple(options.allowed_origins) if protect else ("*",),
    )


@asynccontextmanager
async def running(app: McpApp) -> AsyncIterator[McpApp]:
    """Enter an app's lifespan (for embedding in another ASGI server by hand)."""
    async with app.lifespan():
        yield app
