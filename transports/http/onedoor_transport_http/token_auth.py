"""Who a request is, when the server has tokens: a bearer token, a page's ``?token=`` (swapped for a page cookie), or that cookie.

Every accepted token names a principal (the single ``token`` is ``local``); the scope let
through names it under :data:`onedoor.composition.PRINCIPAL_KEY`. Tokens are compared in
constant time against every accepted token. A token in the URL is taken out of the query
before the door sees it, and only on pages (GET/HEAD): the response sets the page cookie
(:mod:`.page_cookie`) and ``Referrer-Policy: strict-origin``. The server's root keeps its
query and gets no cookie. A request with only the cookie must show it comes from a page
of this server (:func:`.page_cookie.page_proof`).
"""

from __future__ import annotations

import hmac
from typing import Mapping
from urllib.parse import unquote_to_bytes

from onedoor.composition import LOCAL_PRINCIPAL, PRINCIPAL_KEY

from .asgi_types import Message, Scope, Send
from .page_cookie import DEFAULT_MAX_AGE, NO_PROOF, NOT_THE_PAGE, PageCookies, page_proof
from .page_cookie import cookie_name as _cookie_name

PAGE_METHODS = frozenset({"GET", "HEAD"})  # where a browser opens a page (and ?token= is taken)
URL_TOKEN_REFUSED = "a token in the URL is refused here (URLs end up in logs): send it as Authorization: Bearer <token>"
WRONG_TOKEN = "wrong bearer token"
MISSING_TOKEN = "missing bearer token"


def cookie_name(scope: Scope) -> str:
    """The page cookie's name on the server that received ``scope``."""
    server = scope.get("server")
    return _cookie_name(server[1] if server else 0)


def seen_cookie_name(scope: Scope, host: str) -> str:
    """The page cookie's name after the port the browser sees (``Host``), for servers that
    share their cookies behind one balancer (each listens on a port of its own)."""
    _, sep, port = host.rpartition(":")
    if sep and port.isdigit() and "]" not in port:
        return _cookie_name(int(port))
    return _cookie_name(443 if scope.get("scheme") in ("https", "wss") else 80)


def _as(scope: Scope, principal: str, query: bytes | None = None) -> Scope:
    """``scope`` naming its principal (and with the token taken out of the query)."""
    changed = dict(scope)
    changed[PRINCIPAL_KEY] = principal
    if query is not None:
        changed["query_string"] = query
    return changed


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


class TokenAuth:
    """The accepted tokens (each naming a principal) and the page cookies issued for them."""

    def __init__(self, token: str = "", tokens: Mapping[str, str] | None = None,
                 cookie_max_age: int = DEFAULT_MAX_AGE, cookie_secret: str = "") -> None:
        accepted = dict(tokens or {})
        if token:
            accepted[token] = LOCAL_PRINCIPAL
        # (token, principal), every one compared on every request
        self.tokens = [(t.encode(), p) for t, p in accepted.items()]
        self.cookies = PageCookies(self.tokens, cookie_max_age, secret=cookie_secret.encode())

    def __bool__(self) -> bool:
        """Whether the server asks for a token at all."""
        return bool(self.tokens)

    def _match(self, presented: bytes) -> int | None:
        """The index of the accepted token equal to ``presented``; every one is compared, in constant time."""
        found = None
        for index, (expected, _principal) in enumerate(self.tokens):
            if hmac.compare_digest(presented, expected):
                found = index
        return found

    def bearer(self, scope: Scope, headers: dict[bytes, bytes]) -> Scope:
        """``scope`` naming the principal of a right bearer token it carries; as it is otherwise."""
        scheme, _, credentials = headers.get(b"authorization", b"").partition(b" ")
        index = self._match(credentials.strip()) if scheme.lower() == b"bearer" else None
        return scope if index is None else _as(scope, self.tokens[index][1])

    def authenticate(self, scope: Scope, send: Send, headers: dict[bytes, bytes],
                     prefix: str) -> tuple[Scope, Send, str | None]:
        """(scope, send, why refused or None) for a request under the door at ``prefix``
        (``""``: outside the doors). A page's ``?token=`` is swapped for a cookie; the scope
        let through names the token's principal."""
        query = scope.get("query_string", b"")
        tokens, rest = _query_without_token(query) if b"token" in query else ([], query)
        if tokens and scope.get("method", "GET") not in PAGE_METHODS:
            return scope, send, URL_TOKEN_REFUSED
        authorization = headers.get(b"authorization")
        if authorization is not None:
            scheme, _, credentials = authorization.partition(b" ")
            if scheme.lower() == b"bearer":
                index = self._match(credentials.strip())
                if index is None:
                    return scope, send, WRONG_TOKEN
                return _as(scope, self.tokens[index][1], rest if tokens else None), send, None
        if tokens:
            index = self._match(tokens[-1])
            if index is None:
                return scope, send, WRONG_TOKEN
            if not prefix and scope.get("path") == "/":
                return _as(scope, self.tokens[index][1]), send, None  # the root redirects to a page, with the query
            return _as(scope, self.tokens[index][1], rest), self._setting_cookie(scope, send, index, prefix, headers), None
        cookie = _cookie(headers[b"cookie"], self._name(scope, headers).encode()) if b"cookie" in headers else None
        if cookie is None:
            return scope, send, MISSING_TOKEN
        principal, why = self._cookie_principal(scope, headers, cookie)
        return (scope, send, why) if principal is None else (_as(scope, principal), send, None)

    def _name(self, scope: Scope, headers: dict[bytes, bytes]) -> str:
        if self.cookies.shared:
            return seen_cookie_name(scope, _text(headers.get(b"host")) or "")
        return cookie_name(scope)

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

    def _setting_cookie(self, scope: Scope, send: Send, index: int, prefix: str, headers: dict[bytes, bytes]) -> Send:
        """``send`` that adds the page cookie (and sets the referrer policy) on the response start.
        The cookie's path is the door's prefix (``/`` for routes outside the doors)."""
        value = self.cookies.issue(index, scope.get("path", ""))
        secure = scope.get("scheme") in ("https", "wss")
        cookie = self.cookies.header(self._name(scope, headers), value, prefix or "/", secure)

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                # strict-origin (not a door's no-referrer): the token's URL never leaves, and the
                # page's GETs carry the Referer that proves them where no Sec-Fetch-Site is sent
                kept = [(k, v) for k, v in message.get("headers", ()) if k.lower() != b"referrer-policy"]
                extra = [(b"set-cookie", cookie), (b"referrer-policy", b"strict-origin")]
                message = dict(message, headers=[*kept, *extra])
            await send(message)

        return sending


__all__ = ["PAGE_METHODS", "TokenAuth", "cookie_name", "seen_cookie_name"]
