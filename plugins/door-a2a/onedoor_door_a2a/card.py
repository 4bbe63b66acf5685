"""The agent card: who the agent is, where to reach it, what it can do.

The URLs on the card are built from the request that asked for it (the Host it was sent
to, which the transport's guard has checked), so the card is right behind ``--port 0``,
on any allowed host name, and at the server root as under the door's prefix.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

from . import A2aOptions, __version__
from .content import modes

if TYPE_CHECKING:
    from a2a.types import AgentCard
    from onedoor import ServeContext

PROTOCOL_VERSION = "1.0"
BEARER = "bearer"


def agent_card(ctx: ServeContext, options: A2aOptions, origin: str) -> AgentCard:
    """The card for a server reached at ``origin`` (``http://host:port``)."""
    from a2a.types import (
        AgentCapabilities,
        AgentCard,
        AgentInterface,
        AgentSkill,
        HTTPAuthSecurityScheme,
        SecurityRequirement,
        SecurityScheme,
        StringList,
    )

    backend = ctx.kernel.backend
    takes = modes(ctx.kernel)  # what the door takes, and sends (content.py)
    base = origin.rstrip("/") + options.prefix
    interfaces = [AgentInterface(url=base + "/", protocol_binding="JSONRPC", protocol_version=PROTOCOL_VERSION)]
    if options.rest:
        interfaces.append(AgentInterface(url=base + "/rest", protocol_binding="HTTP+JSON", protocol_version=PROTOCOL_VERSION))
    capabilities = sorted(getattr(backend, "capabilities", ()) or ())
    skill = AgentSkill(
        id="chat",
        name="chat",
        description=f"Answers a message, streaming as it writes; backend {backend.name!r}"
        + (f" ({', '.join(capabilities)})" if capabilities else ""),
        tags=["chat", backend.name, *capabilities],
        examples=["What can you do?"],
    )
    card = AgentCard(
        name=options.name or f"onedoor ({backend.name})",
        description=options.description or f"An onedoor agent: backend {backend.name!r}, served over A2A.",
        version=__version__,
        supported_interfaces=interfaces,
        capabilities=AgentCapabilities(streaming=True, push_notifications=False),
        default_input_modes=takes,
        default_output_modes=takes,
        skills=[skill],
    )
    if ctx.endpoint is not None and ctx.endpoint.token_required:
        card.security_schemes[BEARER].CopyFrom(
            SecurityScheme(http_auth_security_scheme=HTTPAuthSecurityScheme(scheme="bearer"))
        )
        card.security_requirements.append(SecurityRequirement(schemes={BEARER: StringList()}))
    return card


def origin_of(scope: Mapping[str, Any]) -> str:
    """``scheme://host[:port]`` the request was sent to (its Host header, else the socket)."""
    scheme = scope.get("scheme", "http")
    for name, value in scope.get("headers", ()):
        if name == b"host" and value:
            return f"{scheme}://{value.decode('latin-1')}"
    server = scope.get("server") or ("127.0.0.1", 0)
    host = f"[{server[0]}]" if ":" in str(server[0]) else server[0]
    return f"{scheme}://{host}:{server[1]}"


def card_endpoint(ctx: ServeContext, options: A2aOptions) -> Any:
    """A Starlette endpoint answering the card as JSON (the SDK's own card serializer)."""
    from a2a.server.request_handlers.response_helpers import agent_card_to_dict
    from starlette.requests import Request
    from starlette.responses import JSONResponse

    async def card(request: Request) -> JSONResponse:
        body = agent_card_to_dict(agent_card(ctx, options, origin_of(request.scope)))
        return JSONResponse(body, headers={"Cache-Control": "no-cache"})

    return card


__all__ = ["agent_card", "card_endpoint", "origin_of"]
