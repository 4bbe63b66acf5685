"""The issuer's signing keys: a JWKS fetched on first use, cached, refreshed, bounded.

The JWKS URL is ``oauth_jwks_url``, else the ``jwks_uri`` of the issuer's metadata (RFC
8414 ``/.well-known/oauth-authorization-server``, then OpenID ``openid-configuration``),
whose ``issuer`` must be the configured one. Keys are kept ``cache_seconds``; past that
the next token refreshes them. A token naming a ``kid`` the set does not have refreshes
it too (key rotation), but at most once every ``min_refresh`` seconds, so a stream of
made-up kids costs one fetch, not one each. Fetches are one at a time. When a refresh
fails the keys already known stay in use; a token whose key is not among them, or any
token while none is known yet, gets :class:`KeysUnavailable` (the guard answers 503) until
a fetch succeeds, tried again at most every ``min_refresh``.
Symmetric keys (``kty: oct``) and keys not for signatures are ignored.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any, Callable
from urllib.parse import urlsplit

from jwt import PyJWK
from jwt.exceptions import PyJWKError

from . import _url_problem
from .fetch import Fetcher, FetchError

log = logging.getLogger("onedoor.transport.http.oauth")

MIN_REFRESH = 10.0
MAX_KEYS = 64


class KeysUnavailable(Exception):
    """No key is known and the JWKS cannot be fetched now (the message says why)."""


class UnknownKey(Exception):
    """The JWKS (fetched) has no key for the token."""


def metadata_urls(issuer: str) -> list[str]:
    """Where the issuer's metadata may be: RFC 8414 (well-known before the path), then OpenID (after)."""
    parts = urlsplit(issuer)
    origin, path = f"{parts.scheme}://{parts.netloc}", parts.path.rstrip("/")
    return [f"{origin}/.well-known/oauth-authorization-server{path}", f"{issuer.rstrip('/')}/.well-known/openid-configuration"]


class JwksCache:
    def __init__(self, fetcher: Fetcher, issuer: str, jwks_url: str = "", ttl: float = 300.0,
                 min_refresh: float = MIN_REFRESH, clock: Callable[[], float] = time.monotonic) -> None:
        self.fetcher = fetcher
        self.issuer = issuer
        self.jwks_url = jwks_url
        self.ttl = ttl
        self.min_refresh = min_refresh
        self.clock = clock
        self.keys: dict[str | None, tuple[PyJWK, str | None]] = {}  # kid -> (key, its declared alg)
        self.fetched_at: float | None = None  # the last fetch that worked
        self.tried_at: float | None = None  # the last fetch tried
        self.error = ""
        self.fetches = 0
        self._lock: asyncio.Lock | None = None

    async def key_for(self, kid: str | None) -> tuple[PyJWK, str | None]:
        """(key, the ``alg`` its JWK declares) for a token's ``kid``."""
        if self.fetched_at is None or self.clock() - self.fetched_at > self.ttl:
            await self._refresh()
        found = self._lookup(kid)
        if found is None and self.fetched_at is not None:
            await self._refresh()  # a key rotated in since the last fetch?
            found = self._lookup(kid)
        if found is not None:
            return found
        if self.error:  # the key may be one the issuer rotated in: not known until the JWKS answers
            raise KeysUnavailable(self.error)
        if self.fetched_at is None:
            raise KeysUnavailable("the JWKS has not been fetched yet")
        raise UnknownKey(f"kid {kid!r}" if kid is not None else "no kid")

    def _lookup(self, kid: str | None) -> tuple[PyJWK, str | None] | None:
        if kid is not None:
            return self.keys.get(kid)
        return next(iter(self.keys.values())) if len(self.keys) == 1 else None  # no kid: only a lone key

    async def _refresh(self) -> None:
        """Fetch the JWKS unless one was tried within ``min_refresh`` seconds; never raises."""
        asked = self.clock()
        if self.tried_at is not None and asked - self.tried_at < self.min_refresh:
            return
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if self.tried_at is not None and (self.tried_at >= asked or self.clock() - self.tried_at < self.min_refresh):
                return  # fetched while this one waited
            self.tried_at = self.clock()
            self.fetches += 1
            try:
                url = self.jwks_url or await self._discover()
                keys = parse_jwks(await self.fetcher.get_json(url))
            except FetchError as exc:
                self._failed(str(exc))
                return
            if not keys:
                self._failed(f"the JWKS at {url} has no signing key onedoor can use")
                return
            if self.error:
                log.warning("onedoor: oauth: the JWKS at %s answers again (%d keys)", url, len(keys))
            self.keys, self.fetched_at, self.error = keys, self.clock(), ""

    def _failed(self, why: str) -> None:
        if why != self.error:
            kept = f"; the {len(self.keys)} keys fetched before stay in use" if self.keys else "; tokens are refused (503) until it answers"
            log.warning("onedoor: oauth: cannot fetch the issuer's keys: %s%s", why, kept)
        self.error = why

    async def _discover(self) -> str:
        """The ``jwks_uri`` of the issuer's metadata (kept once found)."""
        tried = []
        for url in metadata_urls(self.issuer):
            try:
                metadata = await self.fetcher.get_json(url)
            except FetchError as exc:
                tried.append(str(exc))
                continue
            if metadata.get("issuer") != self.issuer:
                raise FetchError(f"the metadata at {url} names issuer {str(metadata.get('issuer'))[:200]!r}, not {self.issuer!r}")
            jwks_uri = metadata.get("jwks_uri")
            if not isinstance(jwks_uri, str):
                raise FetchError(f"the metadata at {url} has no jwks_uri")
            problem = _url_problem("jwks_uri", jwks_uri)
            if problem:
                raise FetchError(f"the metadata at {url}: {problem}")
            self.jwks_url = jwks_uri
            return jwks_uri
        raise FetchError("no authorization server metadata: " + "; ".join(tried))


def parse_jwks(document: dict[str, Any]) -> dict[str | None, tuple[PyJWK, str | None]]:
    """The usable signing keys of a JWKS document, by kid (None for a key without one)."""
    found: dict[str | None, tuple[PyJWK, str | None]] = {}
    entries = document.get("keys")
    for entry in entries[:MAX_KEYS] if isinstance(entries, list) else []:
        if not isinstance(entry, dict) or entry.get("kty") not in ("RSA", "EC", "OKP"):
            continue
        if entry.get("use", "sig") != "sig":
            continue
        kid = entry.get("kid")
        alg = entry.get("alg")
        try:
            key = PyJWK(entry)
        except (PyJWKError, ValueError, TypeError) as exc:
            log.debug("onedoor: oauth: JWKS key %r skipped: %s", kid, exc)
            continue
        found[kid if isinstance(kid, str) else None] = (key, alg if isinstance(alg, str) else None)
    return found


__all__ = ["KeysUnavailable", "JwksCache", "UnknownKey", "metadata_urls", "parse_jwks"]
