"""The gate every request passes before any door, the same for every door on the server.

``onedoor serve`` without a token on 127.0.0.1 is the quick start, so it must be safe
against the web pages its user visits: a page on another site can send a browser to
``http://127.0.0.1:8000`` (a cross-site request), or make its own name resolve to
127.0.0.1 (DNS rebinding) and read the answers. :class:`Guard` wraps the whole shared
app (every door's mount and whatever the ``onedoor_http_app`` hook adds) and checks, in
this order, answering a JSON error ``{"error", "detail"}``:

===  ======================  ===========================================================
421  misdirected_request     ``Host`` is not a loopback name, the bound address or an
                             allowed host (``allowed_hosts``; a door may add its own):
                             DNS rebinding. With a token on a wildcard bind (0.0.0.0)
                             any Host is served: a rebinding page cannot present it.
403  forbidden_origin        ``Origin`` is a page of another site (same origin and the
                             ``cors_origins`` are allowed). No ``Origin`` header: not a
                             browser page's fetch, allowed.
401  unauthorized            when the server has a token: missing or wrong; or sent in
                             the URL (``?token=``) of anything but a page (GET/HEAD); a
                             page cookie expired, of another server start, or alone
                             from elsewhere than this server's pages.
                             Not asked on ``/healthz`` and ``/readyz`` (a bearer token
                             there, when right, names its principal: they show details
                             only then), nor on GET/HEAD of a door's ``public_paths``
                             (A2A's agent card: how to authenticate), nor on the OAuth
                             metadata documents. With ``oauth_issuer``: also a bearer
                             token that is neither static nor a valid token of the
                             issuer, with an RFC 6750 challenge naming the metadata.
403  insufficient_scope      (OAuth) a valid token without the scopes asked for.
503  auth_unavailable        (OAuth) the issuer's keys or introspection endpoint cannot
                             be reached now.
415  unsupported_media_type  a POST with a body whose ``Content-Type`` is not the
                             endpoint's own (``application/json`` unless the door says
                             otherwise), or a POST naming another type. This closes CORS
                             "simple requests" (text/plain, form posts), which browsers send
                             cross-site without asking (other methods need a preflight,
                             which no foreign origin passes). An empty POST without a type
                             reaches the door, which answers 405 or 4xx as its route says.
413  too_large               the body is over ``max_body_bytes`` (chunked uploads too).
400  bad_json                a JSON body that :func:`onedoor.wire.decode_json` refuses:
                             invalid UTF-8, lone surrogates, deep nesting, huge numbers.
===  ======================  ===========================================================

A JSON body is decoded once, here (:mod:`.body`): the value is in
``scope["onedoor.json"]`` (:data:`JSON_BODY`; :func:`read_json` gets it), and the raw
bytes are replayed to the door for frameworks that read them themselves. The ``Host``
and ``Origin`` rules are in :mod:`.hosts`, the tokens and page cookies in
:mod:`.token_auth`, the authorization server's tokens in :mod:`.oauth`.

Tokens in URLs: a browser opening a page (the AG-UI chat page, the REST docs) may pass
``?token=``. The guard takes the token out of the query before the door sees it and
answers with a page cookie (:mod:`.page_cookie`: named after the port, a value made
under a key of this server start, never the token; ``Max-Age`` ``cookie_max_age``,
HttpOnly, SameSite=Strict, ``Path`` the door's prefix) and ``Referrer-Policy:
strict-origin``; the page's own requests then carry the cookie, and the AG-UI page removes
the token from the address bar. The server's root keeps its query (it redirects to the
first door's page, token and all) and gets no cookie. A request with only the cookie
must show it comes from a page of this server (same-origin ``Origin`` or
``Sec-Fetch-Site``; a reload may get the page itself): a cookie sent to another server
on the host and replayed is refused. API calls (POST…) must send ``Authorization:
Bearer``: a token in their URL is refused, since URLs end up in logs and histories.

Principals: each accepted token names a principal (``tokens_file``; the single ``token``
is ``local``). The guard puts the caller's principal id in ``scope["onedoor.principal"]``
(:data:`onedoor.composition.PRINCIPAL_KEY`), for every request it lets through, and
doors read it with ``ServeContext.principal_of(scope)``. Tokens are compared in constant
time against every accepted token, and a page's cookie names its token's principal.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable, Mapping

from onedoor.composition import AsgiMount, Endpoint

from .asgi_types import ASGIApp, Receive, Scope, Send
from .body import JSON_BODY, has_body, is_json, read_json, with_body
from .errors import send_error
from .hosts import WILDCARD_BINDS, HostPolicy, OriginPolicy, is_loopback_name, split_host
from .oauth import Refusal
from .page_cookie import COOKIE_PREFIX, DEFAULT_MAX_AGE
from .token_auth import MISSING_TOKEN, PAGE_METHODS, URL_TOKEN_REFUSED, TokenAuth, cookie_name

if TYPE_CHECKING:
    from .oauth.gate import OAuthGate

TYPED_METHODS = frozenset({"POST"})  # the one simple (preflight-free) method with a body
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
_WANTED = {b"host", b"origin", b"authorization", b"cookie", b"content-type", b"content-length", b"transfer-encoding",
           b"sec-fetch-site", b"sec-fetch-mode", b"referer"}


@dataclass(frozen=True)
class MountRules:
    """The guard's settings for requests under one door's prefix."""

    prefix: str
    content_types: tuple[str, ...]
    hosts: HostPolicy
    origins: OriginPolicy

    def accepts(self, media_type: str) -> bool:
        if media_type in self.content_types:
            return True
        return is_json(media_type) and "application/json" in self.content_types


class Guard:
    """Plain ASGI middleware: the checks in this module's table, then the app."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        mounts: list[AsgiMount],
        endpoint: Endpoint,
        token: str = "",
        tokens: Mapping[str, str] | None = None,
        allowed_hosts: Iterable[str] = (),
        cors_origins: Iterable[str] = (),
        max_body: int = 16 * 1024 * 1024,
        open_paths: Iterable[str] = ("/healthz", "/readyz"),
        public_paths: Iterable[str] = (),
        cookie_max_age: int = DEFAULT_MAX_AGE,
        oauth: "OAuthGate | None" = None,
        cookie_secret: str = "",
    ) -> None:
        self.app = app
        self.endpoint = endpoint
        self.auth = TokenAuth(token, tokens, cookie_max_age, cookie_secret)
        self.oauth = oauth  # an authorization server's tokens, beside the static ones (:mod:`.oauth`)
        self.checks_tokens = bool(self.auth) or oauth is not None
        self.max_body = max_body
        self.open_paths = frozenset(open_paths)
        self.public_paths = frozenset(public_paths)  # GET/HEAD without a token (a door's AsgiMount.public_paths)
        hosts = HostPolicy(endpoint.host, allowed_hosts, any_host=self.checks_tokens and endpoint.host in WILDCARD_BINDS)
        origins = OriginPolicy(cors_origins)
        self.default = MountRules("", ("application/json",), hosts, origins)
        self.rules = sorted(
            (
                MountRules(
                    m.prefix.rstrip("/"),
                    tuple(t.lower() for t in m.content_types),
                    hosts.widened(m.allowed_hosts),
                    origins.widened(m.allowed_origins),
                )
                for m in mounts
                if m.prefix.rstrip("/")
            ),
            key=lambda r: -len(r.prefix),
        )

    def rules_for(self, path: str) -> MountRules:
        for rules in self.rules:
            if path == rules.prefix or path.startswith(rules.prefix + "/"):
                return rules
        return self.default

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        if not self.endpoint.port and scope.get("server"):
            self.endpoint.port = scope["server"][1]
        headers: dict[bytes, bytes] = {}
        for name, value in scope.get("headers", ()):
            if name in _WANTED and name not in headers:
                headers[name] = value
        path = scope.get("path", "")
        rules = self.rules_for(path)
        host = headers.get(b"host", b"").decode("latin-1")
        if host and not rules.hosts.allows(host):
            await self._refuse(scope, send, 421, "misdirected_request",
                               f"this server does not answer to Host {host[:100]!r} (DNS rebinding protection); "
                               "add it with the allowed_hosts option")
            return
        origin = headers.get(b"origin")
        if origin is not None and not rules.origins.allows(origin.decode("latin-1"), host):
            await self._refuse(scope, send, 403, "forbidden_origin",
                               f"requests from pages on {origin.decode('latin-1')[:100]!r} are refused; "
                               "list the origin with the cors_origins option")
            return
        public = path in self.open_paths or (path in self.public_paths and scope.get("method") in PAGE_METHODS)
        if self.checks_tokens and path in self.open_paths:  # open, but a caller with its token is known as itself
            scope = await self._known(scope, headers)
        if self.checks_tokens and not public:
            scope, send, refusal = await self._authenticate(scope, send, headers, rules.prefix)
            if refusal is not None:
                await self._refuse(scope, send, *refusal)
                return
        method = scope.get("method", "GET")
        if kind != "http" or method in SAFE_METHODS:
            await self.app(scope, receive, send)
            return
        media_type = headers.get(b"content-type", b"").split(b";", 1)[0].strip().lower().decode("latin-1")
        if method in TYPED_METHODS and not rules.accepts(media_type) and (media_type or has_body(headers)):
            wanted = " or ".join(rules.content_types) or "no body"
            await send_error(send, 415, "unsupported_media_type",
                             f"send the body as {wanted} (got Content-Type: {media_type or 'none'})")
            return
        await with_body(self.app, scope, receive, send, headers, max_body=self.max_body, decode=is_json(media_type))

    async def _known(self, scope: Scope, headers: dict[bytes, bytes]) -> Scope:
        """``scope`` naming the principal of a valid token it carries, static or OAuth."""
        known = self.auth.bearer(scope, headers) if self.auth else scope
        if known is scope and self.oauth is not None:
            known = await self.oauth.identify(scope, headers)
        return known

    async def _authenticate(self, scope: Scope, send: Send, headers: dict[bytes, bytes],
                            prefix: str) -> tuple[Scope, Send, Refusal | None]:
        """A static token (header, page cookie, a page's ``?token=``), else an OAuth token when configured."""
        why = MISSING_TOKEN
        if self.auth:
            scope_as, sending, refused = self.auth.authenticate(scope, send, headers, prefix)
            if refused is None:
                return scope_as, sending, None
            why = refused
        if self.oauth is None or why == URL_TOKEN_REFUSED:
            return scope, send, Refusal(401, "unauthorized", why, [(b"www-authenticate", b'Bearer realm="onedoor"')])
        scope, refusal = await self.oauth.authenticate(scope, headers, prefix, why)
        return scope, send, refusal

    async def _refuse(self, scope: Scope, send: Send, status: int, code: str, detail: str,
                      headers: list[tuple[bytes, bytes]] | None = None) -> None:
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 4000 + status})
            return
        await send_error(send, status, code, detail, headers or ())


__all__ = [
    "COOKIE_PREFIX", "JSON_BODY", "PAGE_METHODS", "WILDCARD_BINDS", "Guard", "HostPolicy", "MountRules", "OriginPolicy",
    "cookie_name", "is_json", "is_loopback_name", "read_json", "split_host",
]
