"""Opaque (or any) access tokens checked at the issuer's RFC 7662 introspection endpoint.

onedoor POSTs ``token=…&token_type_hint=access_token`` with its client credentials
(HTTP Basic, ``oauth_client_id`` / ``oauth_client_secret``). The answer must say
``active: true``; ``exp`` / ``nbf`` (when given) are checked, ``iss`` (when given) must
be the issuer, ``aud`` must be one of the resource's URLs (required: a token without an
audience could be meant for anyone), ``sub`` names the subject.

Answers are cached by a hash of the token (never the token), at most ``cache_seconds``
and never past the token's ``exp``; refusals (inactive) for at most :data:`INACTIVE_TTL`;
at most :data:`MAX_ENTRIES` entries, the oldest dropped first. Concurrent requests with
the same new token share one introspection call. An endpoint that cannot be reached, or
refuses onedoor's credentials, is :class:`Unavailable` (503), never a cached answer.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from collections import OrderedDict
from typing import Any, Callable

from .claims import Denied, Unavailable, Verified, audience_matches, verified
from .fetch import Fetcher, FetchError
from .jwt_check import LEEWAY

log = logging.getLogger("onedoor.transport.http.oauth")

INACTIVE_TTL = 10.0
MAX_ENTRIES = 10_000


class Introspection:
    def __init__(self, fetcher: Fetcher, url: str, client_id: str, client_secret: str, issuer: str,
                 ttl: float = 300.0, clock: Callable[[], float] = time.time) -> None:
        self.fetcher = fetcher
        self.url = url
        self.credentials = (client_id, client_secret)
        self.issuer = issuer
        self.ttl = ttl
        self.clock = clock
        self.cache: OrderedDict[bytes, tuple[float, dict[str, Any]]] = OrderedDict()  # hash -> (until, answer)
        self.calls = 0
        self._asking: dict[bytes, asyncio.Future[dict[str, Any]]] = {}  # hash -> the call under way

    async def verify(self, token: str, audiences: list[str]) -> Verified:
        return self._judge(await self._answer(token), audiences)

    async def _answer(self, token: str) -> dict[str, Any]:
        key = hashlib.sha256(token.encode("utf-8", "surrogateescape")).digest()
        now = self.clock()
        cached = self.cache.get(key)
        if cached is not None and cached[0] > now:
            return cached[1]
        asking = self._asking.get(key)
        if asking is None:  # one call per new token, not tied to the request that asked first
            asking = asyncio.ensure_future(self._ask(token))
            self._asking[key] = asking
            asking.add_done_callback(lambda done: self._settled(key, done, now))
        return await asyncio.shield(asking)

    def _settled(self, key: bytes, done: "asyncio.Future[dict[str, Any]]", now: float) -> None:
        self._asking.pop(key, None)
        if not done.cancelled() and done.exception() is None:
            self._keep(key, done.result(), now)

    async def _ask(self, token: str) -> dict[str, Any]:
        self.calls += 1
        try:
            status, answer = await self.fetcher.post_form(
                self.url, {"token": token, "token_type_hint": "access_token"}, self.credentials)
        except FetchError as exc:
            log.warning("onedoor: oauth: introspection failed: %s", exc)
            raise Unavailable(f"the introspection endpoint cannot be reached now ({exc})") from None
        if status != 200:
            why = "refuses onedoor's client credentials" if status in (401, 403) else f"answered {status}"
            log.warning("onedoor: oauth: the introspection endpoint %s %s", self.url, why)
            raise Unavailable(f"the introspection endpoint {why}")
        return answer

    def _keep(self, key: bytes, answer: dict[str, Any], now: float) -> None:
        until = now + (self.ttl if answer.get("active") is True else min(self.ttl, INACTIVE_TTL))
        exp = answer.get("exp")
        if isinstance(exp, (int, float)):
            until = min(until, exp)
        self.cache[key] = (until, answer)
        self.cache.move_to_end(key)
        while len(self.cache) > MAX_ENTRIES:
            self.cache.popitem(last=False)

    def _judge(self, answer: dict[str, Any], audiences: list[str]) -> Verified:
        if answer.get("active") is not True:
            raise Denied("the token is not active (revoked, expired or unknown to the issuer)")
        now = self.clock()
        exp, nbf = answer.get("exp"), answer.get("nbf")
        if isinstance(exp, (int, float)) and exp < now - LEEWAY:
            raise Denied("the token has expired")
        if isinstance(nbf, (int, float)) and nbf > now + LEEWAY:
            raise Denied("the token is not valid yet (nbf in the future)")
        if "iss" in answer and answer["iss"] != self.issuer:
            raise Denied(f"the token's issuer is not {self.issuer}")
        if not audience_matches(answer.get("aud"), audiences):
            raise Denied(f"the token is not for this resource: its audience (aud) must be {audiences[0]}")
        return verified(answer)


__all__ = ["INACTIVE_TTL", "MAX_ENTRIES", "Introspection"]
