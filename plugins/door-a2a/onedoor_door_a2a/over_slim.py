"""A2A over SLIM: the door's request handler behind slima2a's servicer, on slimrpc.

The SLIM transport serves an ``rpc`` door by hosting a slimrpc server and asking the door
to register its services on it (:meth:`A2aDoor.register_rpc`). This module registers
AGNTCY's A2A service (``lf.a2a.v1.A2AService``, from ``slima2a``): its servicer
(``SRPCHandler``) turns each slimrpc call into a call on the same a2a-sdk request handler
the HTTP bindings use (:func:`~onedoor_door_a2a.app.request_handler`), so a task runs
through the kernel the same way whichever way it came in.

There is no well-known card path over SLIM: the card (with one ``slimrpc`` interface,
the SLIM name) is served by ``GetExtendedAgentCard`` (signed with ``signing_key``). Every
SLIM peer holds the shared secret, so a call runs as onedoor's one local principal
(authenticated), as MCP and ACP over SLIM do.

Observed: each slimrpc call is served inside ``onedoor.observe.observed_request`` (door
``a2a``, transport ``slim``, the A2A method as slimrpc names it: ``SendMessage``,
``GetTask``…), and the W3C trace context (``traceparent``, ``tracestate``, ``baggage``)
comes from the call's slimrpc metadata, for the request and for ``kernel.run(meta=)``.
slimrpc carries metadata with every call (``Context.metadata()``; a stub call's
``metadata=``), but slima2a's own A2A client (0.9.3) sends none: its transport calls the
stub without metadata and without trace context, so a caller that wants its trace
continued calls the generated stub itself with ``metadata={"traceparent": ...}``.

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


UNARY = ("SendMessage", "GetTask", "ListTasks", "CancelTask", "CreateTaskPushNotificationConfig",
         "GetTaskPushNotificationConfig", "ListTaskPushNotificationConfigs", "DeleteTaskPushNotificationConfig",
         "GetExtendedAgentCard")
STREAMING = ("SendStreamingMessage", "SubscribeToTask")


def metadata_of(context: Any) -> dict[str, str]:
    """A slimrpc call's metadata (empty if it has none)."""
    try:
        return dict(context.metadata() or {})
    except Exception:  # noqa: BLE001 - a context without metadata
        return {}


def local_context_builder() -> Any:
    """slima2a's call context (the slimrpc context, requested extensions), with onedoor's
    local principal as the SDK's user and the call's metadata as its headers (where the
    executor finds the trace context, as it finds HTTP headers)."""
    from slima2a.handler import DefaultCallContextBuilder

    from .app import Principal

    class LocalCallContextBuilder(DefaultCallContextBuilder):  # type: ignore[misc]
        def build(self, context: Any) -> Any:
            call_context = super().build(context)
            call_context.user = Principal(LOCAL)
            call_context.state["headers"] = metadata_of(context)
            return call_context

    return LocalCallContextBuilder()


def _unary(name: str, method: Any) -> Any:
    async def call(self: Any, request: Any, context: Any) -> Any:
        async with self.observed(name, context):
            return await method(self, request, context)

    call.__name__ = name
    return call


def _streaming(name: str, method: Any) -> Any:
    async def call(self: Any, request: Any, context: Any) -> Any:
        async with self.observed(name, context):
            async for item in method(self, request, context):
                yield item

    call.__name__ = name
    return call


def observed_servicer(kernel: Any, door: str) -> type:
    """slima2a's servicer with every call inside ``observed_request`` (see the module docstring)."""
    from onedoor.observe import observed_request, trace_meta
    from slima2a.handler import SRPCHandler

    def observed(self: Any, name: str, context: Any) -> Any:
        return observed_request(kernel.hooks, door=door, transport="slim", method=name,
                                meta=trace_meta(metadata_of(context)), principal=LOCAL)

    members: dict[str, Any] = {"observed": observed}
    members.update({name: _unary(name, getattr(SRPCHandler, name)) for name in UNARY})
    members.update({name: _streaming(name, getattr(SRPCHandler, name)) for name in STREAMING})
    return type("ObservedSRPCHandler", (SRPCHandler,), members)


def register(
    server: Any, ctx: ServeContext, options: A2aOptions | None = None, *, door_name: str = "a2a",
    executors: list[Any] | None = None,
) -> None:
    """Register the A2A service on the slimrpc ``server``; its tasks run through ``ctx.kernel``
    (its executor is appended to ``executors``)."""
    try:
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
    if handler.sign is not None:
        card = handler.sign(card)
    if hasattr(handler, "_agent_card"):  # the SDK checks capabilities on its own copy (1.2.3 to 1.3.0)
        handler._agent_card = card
        handler.extended_agent_card = card
        handler.extended_card_modifier = None  # the SLIM card as it is (every peer is authenticated)
    servicer = observed_servicer(ctx.kernel, door_name)
    add_A2AServiceServicer_to_server(servicer(card, handler, context_builder=local_context_builder()), server)


__all__ = ["local_context_builder", "metadata_of", "observed_servicer", "register", "slim_card"]
