"""Multi-round-trip requests (MCP 2026-07-28; SDK 2.x only): what a retried ``tools/call``
carries back, and the sealing of ``requestState``.

A retry carries ``inputResponses`` (key -> the client's result; for an elicitation an
``ElicitResult``) and ``requestState`` (what the server sent, echoed). The SDK's
``RequestStateBoundary`` seals the state on the way out (AES-256-GCM under the keys, bound
to the method, the tool's name, a digest of its arguments, an expiry, the audience and the
principal ``bind_principal`` names) and unseals it on the way back, before the handler
runs: a state it did not mint, one for other arguments, another principal's or an expired
one is answered -32602 "Invalid or expired requestState" (data ``{"reason":
"invalid_request_state"}``; the real reason goes to the server's log only). The low-level
server installs no boundary itself: :func:`seal_request_state` does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

NOT_ELICITATION = ""  # the action of a response that is not an elicitation's result


@dataclass(frozen=True)
class InputRound:
    """What a retried call carries: ``state`` (the plaintext the server minted) and
    ``responses`` (key -> ``(action, content)``; the action is :data:`NOT_ELICITATION` for
    a response that is no ``ElicitResult``, e.g. a sampling result)."""

    state: str | None
    responses: dict[str, tuple[str, Any]] | None


def input_round(params: Any) -> InputRound | None:
    """The retry a ``tools/call``'s params carry (None for a first call, and on 1.x)."""
    state = getattr(params, "request_state", None)
    raw = getattr(params, "input_responses", None)
    if state is None and raw is None:
        return None
    responses: dict[str, tuple[str, Any]] | None = None
    if raw is not None:
        responses = {}
        for key, result in dict(raw).items():
            action = getattr(result, "action", None)
            if isinstance(action, str) and hasattr(result, "content"):
                responses[str(key)] = (action, result.content)
            else:
                responses[str(key)] = (NOT_ELICITATION, type(result).__name__)
    return InputRound(state if isinstance(state, str) else None, responses)


@dataclass(frozen=True)
class Sealing:
    """How ``requestState`` is sealed: ``keys`` (the first seals, every one unseals; each at
    least 32 bytes), ``ttl`` (seconds a state is good for) and ``principal`` (``ctx`` ->
    the caller's principal, bound into the state)."""

    keys: tuple[bytes, ...]
    ttl: float
    principal: Callable[[Any], str | None]


def seal_request_state(server: Any, sealing: Sealing, audience: str) -> None:
    """Put the SDK's ``RequestStateBoundary`` on a 2.x low-level server (after its other middleware)."""
    from mcp.server.request_state import (  # type: ignore[import-not-found]  # 2.x
        RequestStateBoundary,
        RequestStateSecurity,
    )

    security = RequestStateSecurity(keys=list(sealing.keys), ttl=sealing.ttl, bind_principal=sealing.principal)
    server.middleware.append(RequestStateBoundary(security, default_audience=audience))


__all__ = ["NOT_ELICITATION", "InputRound", "Sealing", "input_round", "seal_request_state"]
