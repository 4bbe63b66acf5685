"""A2A over SLIM: the door's request handler behind slima2a's servicer, on slimrpc.

The SLIM transport serves an ``rpc`` door by hosting a slimrpc server and asking the door
to register its services on it (:meth:`A2aDoor.register_rpc`). This module registers
AGNTCY's A2A service (``lf.a2a.v1.A2AService``, from ``slima2a``): its servicer
(``SRPCHandler``) turns each slimrpc call into a call on the same a2a-sdk request handler
the HTTP bindings use (:func:`~onedoor_door_a2a.app.request_handler`), so a task runs
through the kernel the same way whichever way it came in.

There is no well-known card path over SLIM: the card (with one ``slimrpc`` interface,
the SLIM name) is served by ``GetExtendedAgentCard``. Every SLIM peer holds the shared
secret, so a call runs as onedoor's one local principal, as MCP and ACP over SLIM do.

Needs ``slima2a`` (``pip install 'onedoor-door-a2a[slim]'``), which pins ``a2a-sdk==1.2.3``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from onedoor.principals import LOCAL

from . import A2aOptions

if TYPE_CHECKING:
    from onedoor import ServeContext

RPC_BINDING = "slimrpc"
ADDRESS_KEY = "rpc.address"  # what the SLIM transport puts in ctx.extras: the name served


def slim_card(ctx: ServeContext, options: A2aOptions, address: str) -> Any:
    """The agent card as a SLIM peer sees it: one slimrpc interface, the SLIM name."""
    from a2a.types import AgentInterface

    from .card import PROTOCOL_VERSION, agent_card

    card = agent_card(ctx, options, "slim://")
    del card.supported_interfaces[:]
    card.supported_interfaces.append(
        AgentInterface(url=address, protocol_binding=RPC_BINDING, protocol_version=PROTOCOL_VERSION)
    )
    card.capabilities.extended_agent_card = True  # how a SLIM peer fetches it
    return card


def local_context_builder() -> Any:
    """slima2a's call context (the slimrpc context, requested extensions), with onedoor's
    local principal as the SDK's user."""
    from slima2a.handler import DefaultCallContextBuilder

    from .app import Principal

    class LocalCallContextBuilder(DefaultCallContextBuilder):  # type: ignore[misc]
        def build(self, context: Any) -> Any:
            call_context = super().build(context)
            call_context.user = Principal(LOCAL)
            return call_context

    return LocalCallContextBuilder()


def register(
    server: Any, ctx: ServeContext, options: A2aOptions | None = None, *, door_name: str = "a2a",
    executors: list[Any] | None = None,
) -> None:
    """Register the A2A service on the slimrpc ``server``; its tasks run through ``ctx.kernel``
    (its executor is appended to ``executors``)."""
    try:
        from slima2a.handler import SRPCHandler
        from slima2a.types.v1.a2a_pb2_slimrpc import add_A2AServiceServicer_to_server
    except ImportError as exc:
        from onedoor import CompositionError

        raise CompositionError(
            f"A2A over SLIM needs slima2a ({exc}): pip install 'onedoor-door-a2a[slim]' (slima2a pins a2a-sdk==1.2.3)"
        ) from None
    from . import quiet_logs
    from .app import request_handler

    quiet_logs.install()
    options = options or A2aOptions()
    address = str(ctx.extras.get(ADDRESS_KEY) or "")
    handler = request_handler(ctx, options, door_name=door_name, executors=executors)
    card = slim_card(ctx, options, address)
    if hasattr(handler, "_agent_card"):  # the SDK checks capabilities on its own copy (1.2.3 to 1.3.0)
        handler._agent_card = card
        handler.extended_agent_card = card
    add_A2AServiceServicer_to_server(SRPCHandler(card, handler, context_builder=local_context_builder()), server)


__all__ = ["local_context_builder", "register", "slim_card"]
