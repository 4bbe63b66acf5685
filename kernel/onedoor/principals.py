"""Principals: who is calling. Threads, parked runs and journals belong to one.

A transport decides who a request acts for (the HTTP transport: the principal its token
names in a tokens file) and puts it where doors read it with :func:`principal_of`.
Without tokens, with one token, and on stdio and SLIM, everyone is :data:`LOCAL`.
"""

from __future__ import annotations

from typing import Any

LOCAL = "local"
LOCAL_PRINCIPAL = LOCAL  # the name composition.py exported
PRINCIPAL_KEY = "onedoor.principal"  # where an asgi transport puts the caller's principal id in the scope


def principal_of(scope: Any) -> str:
    """The principal of an ASGI ``scope`` the transport let through, else :data:`LOCAL`."""
    principal = scope.get(PRINCIPAL_KEY) if isinstance(scope, dict) else None
    return principal if isinstance(principal, str) and principal else LOCAL


__all__ = ["LOCAL", "LOCAL_PRINCIPAL", "PRINCIPAL_KEY", "principal_of"]
