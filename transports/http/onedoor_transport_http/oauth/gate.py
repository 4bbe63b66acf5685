"""The guard's OAuth step: a bearer token that is not a static one, checked; the principal, or a refusal with its challenge.

=====  =====================  ==================================================================
401    ``invalid_token``      no token, or one that is not a static token and fails the check
                              (JSON ``error`` stays ``unauthorized``, as for static tokens)
403    ``insufficient_scope`` a valid token without every scope of ``oauth_scopes``
503    ``auth_unavailable``   the keys or the introspection endpoint cannot be reached now
                              (``Retry-After``; no challenge: the token may well be good)
=====  =====================  ==================================================================

Every 401 and 403 carries ``WWW-Authenticate: Bearer error=…, error_description=…,
[scope=…,] resource_metadata="…/.well-known/oauth-protected-resource/<prefix>"``.
"""

from __future__ import annotations

from typing import Any

from onedoor.composition import PRINCIPAL_KEY

from ..asgi_types import Scope
from . import OAUTH_KEY, PRINCIPAL_PREFIX, OAuthSettings, Refusal
from .claims import Denied, Unavailable, Verified
from .fetch import Fetcher
from .resource import ResourceUrls

RETRY_AFTER = b"5"


def _bearer(headers: dict[bytes, bytes]) -> str | None:
    scheme, _, credentials = headers.get(b"authorization", b"").partition(b" ")
    token = credentials.strip()
    return token.decode("latin-1") if scheme.lower() == b"bearer" and token else None


class OAuthGate:
    def __init__(self, settings: OAuthSettings, endpoint: Any, prefixes: list[str]) -> None:
        self.settings = settings
        self.urls = ResourceUrls(settings, endpoint, prefixes)
        self.fetcher = Fetcher()
        if settings.introspection_url:
            from .introspection import Introspection

            self.check: Any = Introspection(self.fetcher, settings.introspection_url, settings.client_id,
                                            settings.client_secret, settings.issuer, settings.cache_seconds)
        else:
            from .jwt_check import JwtCheck
            from .keys import JwksCache

            keys = JwksCache(self.fetcher, settings.issuer, settings.jwks_url, settings.cache_seconds)
            self.check = JwtCheck(keys, settings.issuer, settings.algorithms, settings.cache_seconds)

    @property
    def public_paths(self) -> tuple[str, ...]:
        """The metadata documents: open to every caller."""
        return tuple(self.urls.metadata_paths())

    def routes(self) -> list[Any]:
        return self.urls.routes()

    async def authenticate(self, scope: Scope, headers: dict[bytes, bytes], prefix: str,
                           why: str) -> tuple[Scope, Refusal | None]:
        """(scope naming the token's principal, None), or (scope, the refusal). ``why``: the
        static tokens' reason to refuse, said when the request has no bearer token to check."""
        token = _bearer(headers)
        if token is None:
            return scope, self.refusal(scope, prefix, 401, "invalid_token", why)
        try:
            found = await self.check.verify(token, self.urls.audiences(prefix))
        except Denied as exc:
            return scope, self.refusal(scope, prefix, 401, "invalid_token", str(exc))
        except Unavailable as exc:
            detail = f"{exc}; try again"
            return scope, Refusal(503, "auth_unavailable", detail, [(b"retry-after", RETRY_AFTER)])
        missing = [s for s in self.settings.scopes if s not in found.scopes]
        if missing:
            detail = f"the token lacks the scope{'s' if len(missing) > 1 else ''} {' '.join(missing)}"
            return scope, self.refusal(scope, prefix, 403, "insufficient_scope", detail)
        return self.named(scope, found), None

    async def identify(self, scope: Scope, headers: dict[bytes, bytes]) -> Scope:
        """``scope`` naming the principal of a valid token it carries (open paths); as it is otherwise."""
        if _bearer(headers) is None:
            return scope
        scope, _refused = await self.authenticate(scope, headers, "", "")
        return scope

    def named(self, scope: Scope, found: Verified) -> Scope:
        changed = dict(scope)
        changed[PRINCIPAL_KEY] = PRINCIPAL_PREFIX + found.subject
        changed[OAUTH_KEY] = {"issuer": self.settings.issuer, "subject": found.subject,
                              "client_id": found.client_id, "scopes": sorted(found.scopes)}
        return changed

    def refusal(self, scope: Scope, prefix: str, status: int, error: str, detail: str) -> Refusal:
        code = "insufficient_scope" if status == 403 else "unauthorized"
        return Refusal(status, code, detail, self.urls.challenge(scope, prefix, error, detail))

    async def aclose(self) -> None:
        await self.fetcher.aclose()


__all__ = ["OAuthGate"]
