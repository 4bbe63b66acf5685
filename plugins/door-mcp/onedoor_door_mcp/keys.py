"""The keys that seal ``requestState`` (MCP 2026-07-28 questions), and where they come from.

A question's round goes out with a ``requestState`` the client echoes in its retry; the
retry may reach another server (behind a round-robin balancer), which must unseal it.
In this order:

``request_state_keys`` (the door's option)
    the keys, comma-separated, each at least 32 bytes; the first seals, every one
    unseals (rotation: ``old,new`` then ``new,old`` then ``new``).
the HTTP transport's ``token``
    one key derived from it (HKDF-SHA256 under a fixed label), so servers sharing a
    token share the key with nothing more to set.
neither
    a random key for this process: a retry reaching another server (or this one after a
    restart) is refused -32602. Several servers need one of the above.

Keys are secrets: never logged, never in an error message.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
from typing import Iterable

log = logging.getLogger("onedoor.door.mcp")

MIN_KEY_BYTES = 32
LABEL = b"onedoor/mcp/request-state/v1"  # HKDF info: a key derived from a token is for this and nothing else


def hkdf_sha256(secret: bytes, info: bytes, length: int = 32) -> bytes:
    """RFC 5869 HKDF with SHA-256 and no salt (``length`` <= 32)."""
    prk = hmac.new(b"\x00" * 32, secret, hashlib.sha256).digest()
    return hmac.new(prk, info + b"\x01", hashlib.sha256).digest()[:length]


def check_keys(keys: Iterable[str]) -> list[str]:
    """The keys, each at least :data:`MIN_KEY_BYTES` bytes; ValueError naming the position only."""
    out = [key.strip() for key in keys if key.strip()]
    for index, key in enumerate(out):
        if len(key.encode()) < MIN_KEY_BYTES:
            raise ValueError(
                f"request_state_keys: key {index + 1} is shorter than {MIN_KEY_BYTES} bytes "
                '(make one with: python -c "import secrets; print(secrets.token_hex(32))")'
            )
    return out


def sealing_keys(option_keys: Iterable[str], token: str = "") -> tuple[tuple[bytes, ...], str]:
    """``(keys, where)``: the keys that seal ``requestState``, and where they came from
    (``option``, ``token`` or ``ephemeral``)."""
    keys = check_keys(option_keys)
    if keys:
        return tuple(key.encode() for key in keys), "option"
    if token:
        return (hkdf_sha256(token.encode(), LABEL),), "token"
    return (os.urandom(MIN_KEY_BYTES),), "ephemeral"


def log_where(where: str) -> None:
    """Say (once per server built) where the keys came from, never what they are."""
    if where == "ephemeral":
        log.info("mcp: requestState (2026-07-28 questions) is sealed with a key of this process only; servers behind "
                 "one balancer need the same mcp.request_state_keys (or the same token)")
    else:
        log.debug("mcp: requestState sealed with keys from the %s", "request_state_keys option" if where == "option"
                  else "server's token")


__all__ = ["LABEL", "MIN_KEY_BYTES", "check_keys", "hkdf_sha256", "log_where", "sealing_keys"]
