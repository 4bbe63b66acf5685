"""The agent card: who the agent is, where to reach it, what it can do.

The URLs on the card are built from the request that asked for it (the Host it was sent
to, which the transport's guard has checked), so the card is right behind ``--port 0``,
on any allowed host name, and at the server root as under the door's prefix.

The public card (``GET .../agent-card.json``, open to anyone: it says how to authenticate)
names the agent, its interfaces, its skill, its modes and the bearer scheme. When the
server requires a token, it also offers the **authenticated extended card**
(``GetExtendedAgentCard``; HTTP+JSON ``GET /rest/extendedAgentCard``), only to a caller the
transport's guard authenticated: the public card and the limits this server applies (the
``LIMITS_URI`` extension). With ``signing_key`` both are signed (:mod:`.signing`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Mapping

from . import A2aOptions, __version__
from .content import modes

if TYPE_CHECKING:
    from a2a.types import AgentCard
    from onedoor import ServeContext

PROTOCOL_VERSION = "1.0"
BEARER = "bearer"
MAX_ORIGINS = 32  # card bodies kept, one per origin a client reached the server by
LIMITS_URI = "https://github.com/onedoor-dev/onedoor/blob/main/plugins/door-a2a/README.md#the-extended-card"


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
        capabilities=AgentCapabilities(streaming=True, push_notifications=options.push,
                                       extended_agent_card=offers_extended_card(ctx, options)),
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


def offers_extended_card(ctx: ServeContext, options: A2aOptions) -> bool:
    """The extended card is for authenticated callers: offered when the server requires a token."""
    return options.extended_card and ctx.endpoint is not None and ctx.endpoint.token_required


def extended_card(ctx: ServeContext, options: A2aOptions, origin: str, ttl: float) -> AgentCard:
    """The card an authenticated caller gets: the public one, and this server's limits."""
    from a2a.types import AgentExtension

    card = agent_card(ctx, options, origin)
    limits = ctx.kernel.limits
    params = {
        "max_message_chars": limits.max_message_chars, "max_input_chars": limits.max_input_chars,
        "max_parts": limits.max_parts, "max_part_bytes": limits.max_part_bytes,
        "max_content_bytes": limits.max_content_bytes, "max_state_chars": limits.max_state_chars,
        "question_ttl": ttl, "media_types": list(limits.media_types),
    }
    card.capabilities.extensions.append(AgentExtension(
        uri=LIMITS_URI, required=False, params=params,
        description="The limits this server applies to a message (characters, parts, bytes, media types), a "
                    "thread's shared state, and the seconds an input-required task waits for its answer.",
    ))
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


def card_endpoint(ctx: ServeContext, options: A2aOptions, sign: Callable[[Any], Any] | None = None) -> Any:
    """A Starlette endpoint answering the public card as JSON (the SDK's own card
    serializer), signed by ``sign`` if given; the bodies are kept per origin."""
    from a2a.server.request_handlers.response_helpers import agent_card_to_dict
    from starlette.requests import Request
    from starlette.responses import JSONResponse

    made: dict[str, Any] = {}

    async def card(request: Request) -> JSONResponse:
        origin = origin_of(request.scope)
        body = made.get(origin)
        if body is None:
            public = agent_card(ctx, options, origin)
            body = agent_card_to_dict(sign(public) if sign is not None else public)
            if len(made) < MAX_ORIGINS:  # (the Host check lets only this server's names through)
                made[origin] = body
        return JSONResponse(body, headers={"Cache-Control": "no-cache"})

    return card


__all__ = ["agent_card", "card_endpoint", "extended_card", "offers_extended_card", "origin_of"]
