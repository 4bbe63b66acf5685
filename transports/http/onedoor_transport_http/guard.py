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
                             Not asked on ``/healthz``, nor on GET/HEAD of a door's
                             ``public_paths`` (A2A's agent card: how to authenticate).
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

A JSON body is decoded once, here: the value is in ``scope["onedoor.json"]``
(:data:`JSON_BODY`; :func:`read_json` gets it), and the raw bytes are replayed to the
door for frameworks that read them themselves.

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

import hmac
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Iterable, Mapping, MutableMapping
from urllib.parse import unquote_to_bytes

from onedoor import WireError, decode_json
from onedoor.composition import LOCAL_PRINCIPAL, PRINCIPAL_KEY, AsgiMount, Endpoint

from .errors import send_error
from .page_cookie import COOKIE_PREFIX, DEFAULT_MAX_AGE, NO_PROOF, NOT_THE_PAGE, PageCookies, page_proof
from .page_cookie import cookie_name as _cookie_name

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

JSON_BODY = "onedoor.json"  # scope key: the request's JSON body, decoded under onedoor.wire
PAGE_METHODS = frozenset({"GET", "HEAD"})  # where a browser opens a page (and ?token= is taken)
TYPED_METHODS = frozenset({"POST"})  # the one simple (preflight-free) method with a body
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
WILDCARD_BINDS = frozenset({"", "0.0.0.0", "::", "[::]"})
_WANTED = {b"host", b"origin", b"authorization", b"cookie", b"content-type", b"content-length", b"transfer-encoding",
           b"sec-fetch-site", b"sec-fetch-mode", b"referer"}


def is_loopback_name(name: str) -> bool:
    from . import is_loopback

    return is_loopback(name.rstrip("."))


def split_host(value: str) -> tuple[str, str | None]:
    """``Host``-style ``name[:port]`` (IPv6 in brackets) -> (lower-case name, port or None)."""
    value = value.strip().lower()
    if value.startswith("["):
        end = value.find("]")
        if end < 0:
            return value, None
        rest = value[end + 1 :]
        return value[: end + 1], (rest[1:] if rest.startswith(":") else None)
    if value.count(":") == 1:
        name, port = value.split(":")
        return name, port
    return value, None


def _bracket(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


@dataclass(frozen=True)
class HostRule:
    """One allowed ``Host``: a name and a port (None or ``*``: any port)."""

    name: str
    port: str | None

    @classmethod
    def parse(cls, pattern: str) -> "HostRule":
        name, port = split_host(pattern)
        return cls(name, port)

    def matches(self, name: str, port: str | None) -> bool:
        return self.name == name and (self.port in (None, "*") or self.port == port)


class HostPolicy:
    """Which ``Host`` headers are served: loopback names, the bound address, the listed ones."""

    def __init__(self, bound: str, extra: Iterable[str], *, any_host: bool = False) -> None:
        patterns = [p.strip() for p in extra if p and p.strip()]
        self.any = any_host or "*" in patterns
        self.rules = [HostRule.parse(p) for p in patterns if p != "*"]
        if bound and bound not in WILDCARD_BINDS:
            self.rules.append(HostRule(_bracket(bound).lower(), None))

    def allows(self, value: str) -> bool:
        if self.any:
            return True
        name, port = split_host(value)
        if is_loopback_name(name):
            return True
        return any(rule.matches(name, port) for rule in self.rules)

    def widened(self, extra: Iterable[str]) -> "HostPolicy":
        """This policy plus a door's own hosts (for requests under its prefix)."""
        extra = [p for p in extra if p]
        if not extra:
            return self
        wider = HostPolicy("", extra, any_host=self.any)
        wider.rules = self.rules + wider.rules
        return wider


class OriginPolicy:
    """Which browser ``Origin`` values may call: same origin, loopback twins, listed ones."""

    def __init__(self, listed: Iterable[str]) -> None:
        listed = [o.strip().lower().rstrip("/") for o in listed if o and o.strip()]
        self.any = "*" in listed
        self.exact = {o for o in listed if not o.endswith(":*")}
        self.any_port = [o[:-1] for o in listed if o.endswith(":*")]  # "http://name:" prefixes

    def widened(self, extra: Iterable[str]) -> "OriginPolicy":
        extra = [o for o in extra if o]
        if not extra:
            return self
        wider = OriginPolicy(extra)
        wider.any = wider.any or self.any
        wider.exact |= self.exact
        wider.any_port += self.any_port
        return wider

    def allows(self, origin: str, host: str) -> bool:
        origin = origin.strip().lower()
        if self.any or origin in self.exact:
            return True
        scheme, sep, netloc = origin.partition("://")
        if not sep or scheme not in ("http", "https") or "/" in netloc:
            return False  # "null" (sandboxed frames, file: pages) or not an origin at all
        for prefix in self.any_port:
            if origin.startswith(prefix) and origin[len(prefix) :].isdigit():
                return True
        if host and netloc == host.strip().lower():
            return True  # same origin
        # The same port under another loopback name (a page on localhost calling 127.0.0.1).
        default = "443" if scheme == "https" else "80"
        oname, oport = split_host(netloc)
        hname, hport = split_host(host)
        return is_loopback_name(oname) and is_loopback_name(hname) and (oport or default) == (hport or default)


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


def is_json(media_type: str) -> bool:
    return media_type == "application/json" or (media_type.startswith("application/") and media_type.endswith("+json"))


def _has_body(headers: dict[bytes, bytes]) -> bool:
    declared = headers.get(b"content-length", b"").strip()
    return b"chunked" in headers.get(b"transfer-encoding", b"").lower() or (declared not in (b"", b"0"))


def _as(scope: Scope, principal: str, query: bytes | None = None) -> Scope:
    """``scope`` naming its principal (and with the token taken out of the query)."""
    changed = dict(scope)
    changed[PRINCIPAL_KEY] = principal
    if query is not None:
        changed["query_string"] = query
    return changed


def cookie_name(scope: Scope) -> str:
    server = scope.get("server")
    return _cookie_name(server[1] if server else 0)


def _text(value: bytes | None) -> str | None:
    return None if value is None else value.decode("latin-1")


def _query_without_token(query: bytes) -> tuple[list[bytes], bytes]:
    """(the ``token`` values of a query string, the query string without them)."""
    tokens: list[bytes] = []
    kept: list[bytes] = []
    for part in query.split(b"&"):
        key, _, value = part.partition(b"=")
        if unquote_to_bytes(key.replace(b"+", b" ")) == b"token":
            tokens.append(unquote_to_bytes(value.replace(b"+", b" ")))
        elif part:
            kept.append(part)
    return tokens, b"&".join(kept)


def _cookie(header: bytes, name: bytes) -> bytes | None:
    for part in header.split(b";"):
        key, _, value = part.strip().partition(b"=")
        if key == name:
            return value.strip().strip(b'"')
    return None


async def read_json(scope: Scope, receive: Receive) -> Any:
    """The request's JSON body: decoded by the guard, or read and decoded here (an app
    served without the transport). Raises :class:`onedoor.wire.WireError`; returns
    ``...`` (Ellipsis) if the client went away before the body arrived."""
    if JSON_BODY in scope:
        return scope[JSON_BODY]
    chunks = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return ...
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    return decode_json(b"".join(chunks))


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
        max_body: int = 4 * 1024 * 1024,
        open_paths: Iterable[str] = ("/healthz",),
        public_paths: Iterable[str] = (),
        cookie_max_age: int = DEFAULT_MAX_AGE,
    ) -> None:
        self.app = app
        self.endpoint = endpoint
        accepted = dict(tokens or {})
        if token:
            accepted[token] = LOCAL_PRINCIPAL
        # (token, principal), every one compared on every request
        self.tokens = [(t.encode(), p) for t, p in accepted.items()]
        self.cookies = PageCookies(self.tokens, cookie_max_age)
        self.max_body = max_body
        self.open_paths = frozenset(open_paths)
        self.public_paths = frozenset(public_paths)  # GET/HEAD without a token (a door's AsgiMount.public_paths)
        hosts = HostPolicy(endpoint.host, allowed_hosts, any_host=bool(accepted) and endpoint.host in WILDCARD_BINDS)
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
        if self.tokens and not public:
            scope, send, refused = self._authenticate(scope, send, headers, rules)
            if refused is not None:
                await self._refuse(scope, send, 401, "unauthorized", refused,
                                   [(b"www-authenticate", b'Bearer realm="onedoor"')])
                return
        method = scope.get("method", "GET")
        if kind != "http" or method in SAFE_METHODS:
            await self.app(scope, receive, send)
            return
        media_type = headers.get(b"content-type", b"").split(b";", 1)[0].strip().lower().decode("latin-1")
        if method in TYPED_METHODS and not rules.accepts(media_type) and (media_type or _has_body(headers)):
            wanted = " or ".join(rules.content_types) or "no body"
            await send_error(send, 415, "unsupported_media_type",
                             f"send the body as {wanted} (got Content-Type: {media_type or 'none'})")
            return
        await self._with_body(scope, receive, send, headers, is_json(media_type))

    def _match(self, presented: bytes) -> int | None:
        """The index of the accepted token equal to ``presented``; every one is compared, in constant time."""
        found = None
        for index, (expected, _principal) in enumerate(self.tokens):
            if hmac.compare_digest(presented, expected):
                found = index
        return found

    def _authenticate(self, scope: Scope, send: Send, headers: dict[bytes, bytes],
                      rules: MountRules) -> tuple[Scope, Send, str | None]:
        """(scope, send, why refused or None). A page's ``?token=`` is swapped for a cookie;
        the scope let through names the token's principal."""
        query = scope.get("query_string", b"")
        tokens, rest = _query_without_token(query) if b"token" in query else ([], query)
        method = scope.get("method", "GET")
        if tokens and method not in PAGE_METHODS:
            return scope, send, ("a token in the URL is refused here (URLs end up in logs): "
                                 "send it as Authorization: Bearer <token>")
        authorization = headers.get(b"authorization")
        if authorization is not None:
            scheme, _, credentials = authorization.partition(b" ")
            if scheme.lower() == b"bearer":
                index = self._match(credentials.strip())
                if index is None:
                    return scope, send, "wrong bearer token"
                return _as(scope, self.tokens[index][1], rest if tokens else None), send, None
        if tokens:
            index = self._match(tokens[-1])
            if index is None:
                return scope, send, "wrong bearer token"
            if not rules.prefix and scope.get("path") == "/":
                return _as(scope, self.tokens[index][1]), send, None  # the root redirects to a page, with the query
            return _as(scope, self.tokens[index][1], rest), self._setting_cookie(scope, send, index, rules), None
        cookie = _cookie(headers[b"cookie"], cookie_name(scope).encode()) if b"cookie" in headers else None
        if cookie is None:
            return scope, send, "missing bearer token"
        principal, why = self._cookie_principal(scope, headers, cookie)
        return (scope, send, why) if principal is None else (_as(scope, principal), send, None)

    def _cookie_principal(self, scope: Scope, headers: dict[bytes, bytes], cookie: bytes) -> tuple[str | None, str]:
        """(principal, "") for a page cookie sent by a page of this server, else (None, why)."""
        method = scope.get("method", "GET")
        if scope["type"] == "websocket":
            method = "WEBSOCKET"
        proof = page_proof(method, _text(headers.get(b"host")) or "", _text(headers.get(b"origin")),
                           _text(headers.get(b"sec-fetch-site")), _text(headers.get(b"sec-fetch-mode")),
                           _text(headers.get(b"referer")))
        if proof is None:
            return None, NO_PROOF
        checked = self.cookies.check(cookie)
        if isinstance(checked, str):
            return None, checked
        principal, page = checked
        if proof == "navigation" and scope.get("path", "") != page:
            return None, NOT_THE_PAGE.format(page=page[:200])
        return principal, ""

    def _setting_cookie(self, scope: Scope, send: Send, index: int, rules: MountRules) -> Send:
        """``send`` that adds the page cookie (and sets the referrer policy) on the response start.
        The cookie's path is the door's prefix (``/`` for routes outside the doors)."""
        path = scope.get("path", "")
        value = self.cookies.issue(index, path)
        secure = scope.get("scheme") in ("https", "wss")
        cookie = self.cookies.header(cookie_name(scope), value, rules.prefix or "/", secure)

        async def sending(message: MutableMapping[str, Any]) -> None:
            if message["type"] == "http.response.start":
                # strict-origin (not a door's no-referrer): the token's URL never leaves, and the
                # page's GETs carry the Referer that proves them where no Sec-Fetch-Site is sent
                kept = [(k, v) for k, v in message.get("headers", ()) if k.lower() != b"referrer-policy"]
                extra = [(b"set-cookie", cookie), (b"referrer-policy", b"strict-origin")]
                message = dict(message, headers=[*kept, *extra])
            await send(message)

        return sending

    async def _refuse(self, scope: Scope, send: Send, status: int, code: str, detail: str,
                      headers: list[tuple[bytes, bytes]] | None = None) -> None:
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 4000 + status})
            return
        await send_error(send, status, code, detail, headers or ())

    async def _with_body(self, scope: Scope, receive: Receive, send: Send, headers: dict[bytes, bytes],
                         decode: bool) -> None:
        """Read the body (bounded), decode it if it is JSON, then replay it to the app."""
        declared = headers.get(b"content-length")
        if declared is not None:
            try:
                size = int(declared)
            except ValueError:
                await send_error(send, 400, "bad_request", "malformed Content-Length")
                return
            if size > self.max_body:
                await send_error(send, 413, "too_large", f"request body over {self.max_body} bytes")
                return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body:
                await send_error(send, 413, "too_large", f"request body over {self.max_body} bytes")
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = chunks[0] if len(chunks) == 1 else b"".join(chunks)
        if decode and body:
            try:
                scope[JSON_BODY] = decode_json(body)
            except WireError as exc:
                await send_error(send, 400, "bad_json", f"the request body is refused: {exc}")
                return
        replayed = False

        async def replay() -> MutableMapping[str, Any]:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


__all__ = [
    "COOKIE_PREFIX", "JSON_BODY", "Guard", "HostPolicy", "MountRules", "OriginPolicy", "is_json", "read_json", "split_host",
]
