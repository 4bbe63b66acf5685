"""The cookie a page opened with ``?token=`` gets, and what a request that carries only it must show.

The value is ``ISSUED.PAGE.MAC``: when it was issued (milliseconds on this process's
monotonic clock), the page's path (base64url), and an HMAC of both under a key derived
from the token with a random key made when the server starts. So it names the token's
principal, is never the token, is refused after ``max_age`` seconds (the browser drops
it then too: ``Max-Age``) and by any other server start (a restart, another port).
Nothing is stored per cookie.

Several servers behind one balancer share a ``page_cookie_secret`` instead: the key is
derived from it (and the token), the issue time is the wall clock, and the cookie is named
after the port the browser sees (the ``Host`` header's), so a cookie one server issued is
good on the others and across their restarts, still for at most ``max_age`` seconds.

Cookies are not isolated by port, and a replayed cookie is not a browser page: a request
that carries only the cookie (no ``Authorization``) must also show it comes from a page
of this server (:func:`page_proof`):

- ``Sec-Fetch-Site: same-origin`` (and, if it has one, an ``Origin`` equal to its own);
- ``Sec-Fetch-Site: none`` on a top-level navigation (``Sec-Fetch-Mode: navigate``, GET or
  HEAD): the user reloads or reopens the page, which gets the page the cookie was given
  to, nothing else;
- no ``Sec-Fetch-Site`` (browsers send it only to https and loopback origins): an
  ``Origin`` equal to the server's own, or, with no ``Origin``, a ``Referer`` whose
  origin is the server's own (the page's same-origin GETs on a plain-http LAN name;
  the page's response sets ``Referrer-Policy: strict-origin`` so they carry one).

Any other ``Sec-Fetch-Site`` (same-site: another port of the host; cross-site) is refused.
Headers prove nothing against a client that forges them; this stops browsers and plain
replays, and ``Max-Age`` and the per-start key bound how long a leaked cookie works.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
import time
from typing import Callable, Iterable

COOKIE_PREFIX = "onedoor_token_"
DEFAULT_MAX_AGE = 4 * 3600
NAVIGATION_METHODS = frozenset({"GET", "HEAD"})

NO_PROOF = ("this server's page cookie alone is accepted only from its own pages (an Origin of this server, "
            "or Sec-Fetch-Site: same-origin); other clients send Authorization: Bearer <token>")
NOT_THE_PAGE = "opened directly, the page cookie gives only the page it was given to ({page}); open it with ?token=<token>"
EXPIRED = "the page cookie has expired; open the page again with ?token=<token>"
INVALID = ("the page cookie is not valid on this server (each server start makes new ones); "
           "open the page again with ?token=<token>")


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def cookie_name(port: int) -> str:
    """Named after the port: browsers send every 127.0.0.1 cookie to every port."""
    return f"{COOKIE_PREFIX}{port}"


def netloc_of(url: str) -> str | None:
    """``host[:port]`` of an http(s) URL or origin, lower-case; None if it is not one."""
    scheme, sep, rest = url.strip().lower().partition("://")
    if not sep or scheme not in ("http", "https"):
        return None
    netloc = rest.split("/", 1)[0].split("?", 1)[0].split("#", 1)[0]
    return netloc.rpartition("@")[2] or None


def page_proof(method: str, host: str, origin: str | None, site: str | None, mode: str | None,
               referer: str | None) -> str | None:
    """How a cookie-only request shows it comes from a page of the server at ``host``:
    ``"page"`` (any path), ``"navigation"`` (only the cookie's page), or None (it does not)."""
    host = host.strip().lower()
    if origin is not None and netloc_of(origin) != host:
        return None
    if site is not None:
        site = site.strip().lower()
        if site == "same-origin":
            return "page"
        navigating = (mode or "").strip().lower() == "navigate" and method in NAVIGATION_METHODS
        if site == "none" and origin is None and navigating:
            return "navigation"
        return None
    if origin is not None:
        return "page"
    if referer is not None and netloc_of(referer) == host:
        return "page"
    return None


class PageCookies:
    """Issues and checks page cookies for the accepted tokens, under a key of this server start."""

    def __init__(self, tokens: Iterable[tuple[bytes, str]], max_age: int = DEFAULT_MAX_AGE,
                 clock: Callable[[], float] | None = None, secret: bytes = b"") -> None:
        if max_age < 1:
            raise ValueError("a page cookie's max age is at least 1 second")
        self.shared = bool(secret)  # good on every server with the same secret (and token)
        if secret:
            start_key = hmac.new(secret, b"onedoor/page-cookie/v1", hashlib.sha256).digest()
        else:
            start_key = secrets.token_bytes(32)
        clock = clock or (time.time if secret else time.monotonic)
        # one key per token: a cookie names the token (its principal) it was issued for
        self.keys = [(hmac.new(start_key, token, hashlib.sha256).digest(), principal) for token, principal in tokens]
        self.max_age = max_age
        self.clock = clock

    def _now(self) -> int:
        return int(self.clock() * 1000)

    @staticmethod
    def _mac(key: bytes, signed: str) -> bytes:
        return hmac.new(key, signed.encode("ascii"), hashlib.sha256).digest()

    def issue(self, principal_index: int, page: str) -> str:
        """The value for the token at ``principal_index`` (in the order given), for the page at ``page``."""
        signed = f"{self._now()}.{_b64(page.encode('utf-8', 'surrogatepass'))}"
        return f"{signed}.{_b64(self._mac(self.keys[principal_index][0], signed))}"

    def check(self, value: bytes) -> tuple[str, str] | str:
        """(principal, page path) of a valid value, or why it is refused."""
        try:
            text = value.decode("ascii")
            issued, page, mac = text.split(".")
            raw_mac = _unb64(mac)
            page_path = _unb64(page).decode("utf-8", "surrogatepass")
        except (UnicodeError, ValueError, binascii.Error):
            return INVALID
        if not issued.isdigit() or len(issued) > 16:
            return INVALID
        signed = f"{issued}.{page}"
        found = None
        for key, principal in self.keys:  # every one, in constant time
            if hmac.compare_digest(raw_mac, self._mac(key, signed)):
                found = principal
        if found is None:
            return INVALID
        age = self._now() - int(issued)
        if age < 0 or age > self.max_age * 1000:
            return EXPIRED
        return found, page_path

    def header(self, name: str, value: str, path: str, secure: bool) -> bytes:
        """The ``Set-Cookie`` value."""
        cookie = f"{name}={value}; Path={path}; Max-Age={self.max_age}; HttpOnly; SameSite=Strict"
        return (cookie + "; Secure" if secure else cookie).encode("ascii")


__all__ = ["COOKIE_PREFIX", "DEFAULT_MAX_AGE", "PageCookies", "cookie_name", "netloc_of", "page_proof"]
