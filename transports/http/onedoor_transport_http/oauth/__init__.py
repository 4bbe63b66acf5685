"""OAuth 2.1 resource-server mode: bearer tokens of an authorization server, beside the static tokens.

Switched on by the ``oauth_issuer`` option, for every door on the server. A request's
bearer token that is not one of the static tokens (``token``, ``tokens_file``) is checked
as an access token of that issuer: a JWT signed with a key of its JWKS (``oauth_jwks_url``,
else the ``jwks_uri`` of the issuer's metadata; RS256 and ES256 by default), or, with
``oauth_introspection_url``, through RFC 7662 introspection. It must be for this resource
(its audience, RFC 8707: the door's URL such as ``https://host/mcp``, or the server's URL;
``oauth_audience`` replaces both), of the issuer, unexpired, and carry ``oauth_scopes``.

Its subject acts as the principal ``oauth/<sub>`` (:data:`PRINCIPAL_PREFIX`): a tokens-file
principal cannot contain ``/``, so the two never collide. The token's issuer, subject,
client and scopes are in ``scope["onedoor.oauth"]`` (:data:`OAUTH_KEY`).

Clients find out how to get a token from Protected Resource Metadata (RFC 9728), open
without a token, at ``/.well-known/oauth-protected-resource`` (the server) and
``/.well-known/oauth-protected-resource/<prefix>`` (each door). Refusals carry the
RFC 6750 challenge naming it: 401 ``invalid_token`` (no token, a bad or expired one),
403 ``insufficient_scope``, 503 ``auth_unavailable`` while the keys or the introspection
endpoint cannot be reached (no token is let in then, and the server keeps serving).

This module imports neither PyJWT nor httpx (``onedoor-transport-http[oauth]``): only
:func:`make_gate` does, when the option is set.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from onedoor.composition import Endpoint

    from .gate import OAuthGate

PRINCIPAL_PREFIX = "oauth/"  # principal of a token's subject; "/" is never in a tokens-file principal
OAUTH_KEY = "onedoor.oauth"  # scope key: {"issuer", "subject", "client_id", "scopes"} of the accepted token
WELL_KNOWN = "/.well-known/oauth-protected-resource"
ALGORITHMS = frozenset({"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"})
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
INSTALL_HINT = "pip install 'onedoor-transport-http[oauth]'"


class Refusal(NamedTuple):
    """Why the guard turns a request away: status, error code, detail, extra headers."""

    status: int
    code: str
    detail: str
    headers: list[tuple[bytes, bytes]]


@dataclass(frozen=True)
class OAuthSettings:
    """The ``oauth_*`` options (and ``public_url``) of :class:`~onedoor_transport_http.HttpOptions`."""

    issuer: str
    jwks_url: str = ""
    audience: tuple[str, ...] = ()
    scopes: tuple[str, ...] = ()
    introspection_url: str = ""
    client_id: str = ""
    client_secret: str = field(default="", repr=False)
    algorithms: tuple[str, ...] = ("RS256", "ES256")
    cache_seconds: float = 300.0
    public_url: str = ""

    @classmethod
    def of(cls, options: Any) -> "OAuthSettings | None":
        """The settings of an ``HttpOptions`` (None: OAuth is off)."""
        if not options.oauth_issuer:
            return None
        return cls(
            issuer=options.oauth_issuer, jwks_url=options.oauth_jwks_url, audience=tuple(options.oauth_audience),
            scopes=tuple(options.oauth_scopes), introspection_url=options.oauth_introspection_url,
            client_id=options.oauth_client_id, client_secret=options.oauth_client_secret,
            algorithms=tuple(options.oauth_algorithms), cache_seconds=options.oauth_cache_seconds,
            public_url=options.public_url.rstrip("/"),
        )


def _url_problem(name: str, value: str) -> str | None:
    """Why ``value`` is not an https URL (or http on a loopback name), else None."""
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return f"{name} must be an http(s) URL, got {value!r}"
    if parts.scheme == "http" and parts.hostname not in ("127.0.0.1", "localhost", "::1"):
        return f"{name} must use https (http only on localhost, 127.0.0.1 or [::1]), got {value!r}"
    if parts.query or parts.fragment:
        return f"{name} must have no query or fragment, got {value!r}"
    return None


def check_options(options: Any) -> None:
    """A ``ValueError`` naming the first inconsistent ``oauth_*`` / ``public_url`` option."""
    if options.public_url:
        parts = urlsplit(options.public_url)
        if parts.scheme not in ("http", "https") or not parts.hostname or parts.path not in ("", "/") \
                or parts.query or parts.fragment:
            raise ValueError(f"public_url must be scheme://host[:port] (no path), got {options.public_url!r}")
    dependent = [name for name in ("oauth_jwks_url", "oauth_introspection_url", "oauth_client_id",
                                   "oauth_client_secret", "oauth_audience", "oauth_scopes") if getattr(options, name)]
    if not options.oauth_issuer:
        if dependent:
            raise ValueError(f"{dependent[0]} needs oauth_issuer (the authorization server)")
        return
    for name in ("oauth_issuer", "oauth_jwks_url", "oauth_introspection_url"):
        value = getattr(options, name)
        problem = value and _url_problem(name, value)
        if problem:
            raise ValueError(problem)
    if options.oauth_introspection_url and not (options.oauth_client_id and options.oauth_client_secret):
        raise ValueError("oauth_introspection_url needs oauth_client_id and oauth_client_secret (onedoor's credentials there)")
    unknown = [a for a in options.oauth_algorithms if a not in ALGORITHMS]
    if unknown or not options.oauth_algorithms:
        raise ValueError(f"oauth_algorithms are some of {', '.join(sorted(ALGORITHMS))} (got {unknown or 'none'})")
    if any(not s or " " in s for s in options.oauth_scopes):
        raise ValueError("oauth_scopes are scope names without spaces")
    if not options.oauth_cache_seconds > 0:
        raise ValueError("oauth_cache_seconds must be more than 0")


def missing_packages() -> list[str]:
    """The packages OAuth mode needs that are not installed."""
    return [name for name, module in (("PyJWT", "jwt"), ("cryptography", "cryptography"), ("httpx", "httpx"))
            if importlib.util.find_spec(module) is None]


def make_gate(options: Any, endpoint: "Endpoint", prefixes: list[str]) -> "OAuthGate | None":
    """The OAuth check for a server with these options and door prefixes (None: OAuth is off)."""
    settings = OAuthSettings.of(options)
    if settings is None:
        return None
    from .gate import OAuthGate

    return OAuthGate(settings, endpoint, prefixes)


__all__ = ["OAUTH_KEY", "PRINCIPAL_PREFIX", "WELL_KNOWN", "OAuthSettings", "Refusal", "check_options", "make_gate",
           "missing_packages"]
