"""Access tokens as JWTs (RFC 9068), checked with PyJWT against the issuer's keys.

In order: it parses as a JWS; its ``alg`` is one of ``oauth_algorithms`` (never ``none``
nor a symmetric one) and the one its key declares; the key is in the JWKS (by ``kid``;
without one, only a JWKS of one key); the signature verifies; ``iss`` is the issuer;
``aud`` is one of the resource's URLs; ``exp`` has not passed and ``nbf`` has (both with
:data:`LEEWAY` seconds for clocks apart); ``sub`` names the subject.

A client sends the same token with every request: a token that passed is remembered (by a
hash of it, at most :data:`MAX_ENTRIES`, the oldest dropped first) until its ``exp`` and
for at most ``ttl`` seconds (``cache_seconds``, as long as a fetched JWKS is kept), and
then only its audience is checked again, against the door the request is for. Refusals
are not remembered.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import time
from collections import OrderedDict
from typing import Any, Callable, Iterable

import jwt
from jwt import exceptions as errors

from .claims import Denied, Unavailable, Verified, audience_matches, verified
from .keys import JwksCache, KeysUnavailable, UnknownKey

LEEWAY = 30.0
REQUIRED = ["exp", "iss", "aud", "sub"]
MAX_ENTRIES = 10_000


class JwtCheck:
    def __init__(self, keys: JwksCache, issuer: str, algorithms: Iterable[str], ttl: float = 300.0,
                 clock: Callable[[], float] = time.time) -> None:
        self.keys = keys
        self.issuer = issuer
        self.algorithms = tuple(algorithms)
        self.ttl = ttl
        self.clock = clock
        self.passed: OrderedDict[bytes, tuple[float, Verified]] = OrderedDict()  # hash -> (until, what it said)

    async def verify(self, token: str, audiences: list[str]) -> Verified:
        key = hashlib.sha256(token.encode("utf-8", "surrogateescape")).digest()
        now = self.clock()
        known = self.passed.get(key)
        if known is not None and known[0] > now:
            if not audience_matches(known[1].claims.get("aud"), audiences):
                raise Denied(_WRONG_AUDIENCE.format(audiences[0]))
            return known[1]
        found = await self._check(token, audiences)
        exp = found.claims.get("exp")
        if isinstance(exp, (int, float)) and not isinstance(exp, bool):
            self.passed[key] = (min(now + self.ttl, exp), found)
            self.passed.move_to_end(key)
            while len(self.passed) > MAX_ENTRIES:
                self.passed.popitem(last=False)
        return found

    async def _check(self, token: str, audiences: list[str]) -> Verified:
        header = _header(token)
        alg, kid = header.get("alg"), header.get("kid")
        if alg not in self.algorithms:
            raise Denied(f"the token's algorithm {str(alg)[:20]!r} is not accepted (only {', '.join(self.algorithms)})")
        if kid is not None and not isinstance(kid, str):
            raise Denied("the token's kid is not a string")
        try:
            key, declared = await self.keys.key_for(kid)
        except UnknownKey:
            raise Denied(f"the token's key ({_shown(kid)}) is not among the issuer's keys") from None
        except KeysUnavailable as exc:
            raise Unavailable(f"the issuer's keys cannot be fetched now ({exc})") from None
        if declared is not None and declared != alg:
            raise Denied(f"the token's algorithm {alg} is not the one of its key ({declared})")
        try:
            claims = jwt.decode(token, key.key, algorithms=[alg], audience=audiences, issuer=self.issuer,
                                leeway=LEEWAY, options={"require": REQUIRED})
        except errors.ExpiredSignatureError:
            raise Denied("the token has expired") from None
        except errors.ImmatureSignatureError:
            raise Denied("the token is not valid yet (nbf or iat in the future)") from None
        except errors.InvalidAudienceError:
            raise Denied(_WRONG_AUDIENCE.format(audiences[0])) from None
        except errors.InvalidIssuerError:
            raise Denied(f"the token's issuer is not {self.issuer}") from None
        except errors.MissingRequiredClaimError as exc:
            raise Denied(f"the token has no {exc.claim} claim") from None
        except errors.InvalidSignatureError:
            raise Denied("the token's signature does not verify") from None
        except errors.PyJWTError as exc:
            raise Denied(f"the token cannot be checked ({type(exc).__name__})") from None
        return verified(claims)


def _header(token: str) -> dict[str, Any]:
    """The JOSE header, read only to choose the key (``jwt.decode`` then parses the whole token strictly)."""
    head, dot, _rest = token.partition(".")
    try:
        if not dot or len(head) > 8192:
            raise ValueError
        header = json.loads(base64.urlsafe_b64decode(head + "=" * (-len(head) % 4)))
    except (ValueError, binascii.Error):
        header = None
    if not isinstance(header, dict):
        raise Denied("the bearer token is neither a token of this server nor a JWT")
    return header


_WRONG_AUDIENCE = "the token is not for this resource: its audience (aud) must be {}"


def _shown(kid: str | None) -> str:
    """A kid as the refusal shows it: short, printable."""
    if kid is None:
        return "no kid"
    text = "".join(c if c.isprintable() else "?" for c in kid[:64])
    return f"kid {text!r}"


__all__ = ["LEEWAY", "JwtCheck"]
