"""What a checked token says (:class:`Verified`) and why one is refused (:class:`Denied`).

Shared by the JWT check and introspection: the token's scopes (``scope``, a space-separated
string, RFC 9068 / RFC 7662; or ``scp``, a list, as some servers write it), its subject
(required: it becomes the principal; printable, at most :data:`MAX_SUBJECT` characters)
and its audience (one of the resource's URLs).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable

MAX_SUBJECT = 256


class Denied(Exception):
    """The token is refused (401 ``invalid_token``); the message is for the caller."""


class Unavailable(Exception):
    """The token cannot be checked now (503): keys or introspection out of reach."""


@dataclass(frozen=True)
class Verified:
    subject: str
    scopes: frozenset[str]
    client_id: str = ""
    claims: dict[str, Any] = field(default_factory=dict, repr=False)


def scopes_of(claims: dict[str, Any]) -> frozenset[str]:
    scope = claims.get("scope")
    if isinstance(scope, str):
        return frozenset(scope.split())
    scp = claims.get("scp")
    if isinstance(scp, str):
        return frozenset(scp.split())
    if isinstance(scp, list):
        return frozenset(s for s in scp if isinstance(s, str))
    return frozenset()


def subject_of(claims: dict[str, Any]) -> str:
    sub = claims.get("sub")
    if not isinstance(sub, str) or not sub:
        raise Denied("the token names no subject (sub)")
    if len(sub) > MAX_SUBJECT or not sub.isprintable():
        raise Denied(f"the token's subject is not a printable name of at most {MAX_SUBJECT} characters")
    return sub


def audience_matches(aud: Any, accepted: Iterable[str]) -> bool:
    wanted = set(accepted)
    if isinstance(aud, str):
        return aud in wanted
    return isinstance(aud, list) and any(isinstance(a, str) and a in wanted for a in aud)


def verified(claims: dict[str, Any]) -> Verified:
    client = claims.get("client_id", claims.get("azp", ""))
    return Verified(subject_of(claims), scopes_of(claims), client if isinstance(client, str) else "", claims)


__all__ = ["MAX_SUBJECT", "Denied", "Unavailable", "Verified", "audience_matches", "scopes_of", "subject_of", "verified"]
