"""AGNTCY's own A2A-over-SLIM client (slima2a, slimrpc underneath) for the SLIM tests and
the benchmark: an a2a-sdk ``Client`` whose transport is slimrpc through a SLIM node.

slimrpc opens every session with MLS; there is no way to turn it off on either side.
"""

from __future__ import annotations

import asyncio
import uuid
from contextlib import asynccontextmanager
from typing import Any, AsyncIterator

import httpx
from a2a.client import minimal_agent_card
from a2a.helpers import new_text_message
from a2a.types import Role, SendMessageRequest
from onedoor_transport_slim import bindings
from slima2a import connect_and_subscribe
from slima2a.client_transport import ClientConfig, MultiAgentClientFactory, slimrpc_channel_factory


def request(text: str) -> SendMessageRequest:
    return SendMessageRequest(message=new_text_message(text, role=Role.ROLE_USER))


@asynccontextmanager
async def a2a_clients(endpoint: str, secret: str, name: str) -> AsyncIterator[tuple[Any, Any]]:
    """(a unary client, a streaming client) for the agent served as ``name``."""
    org, namespace, _ = name.split("/")
    sb = bindings.slim("error")  # initialised once per process, quiet native logs
    sb.uniffi_set_event_loop(asyncio.get_running_loop())  # slimrpc calls back into this loop
    me = f"a2a-client-{uuid.uuid4().hex[:10]}"
    service = sb.create_service(me)  # its own service: one test's node is gone before the next starts
    app, conn = await connect_and_subscribe(service, sb.Name(org, namespace, me), slim_url=endpoint, secret=secret)
    async with httpx.AsyncClient() as http:  # the factory wants one; slimrpc does not use it

        def client(streaming: bool) -> Any:
            config = ClientConfig(
                supported_protocol_bindings=["slimrpc"], streaming=streaming, httpx_client=http,
                slimrpc_channel_factory=slimrpc_channel_factory(app, conn),
            )
            card = minimal_agent_card(name, ["slimrpc"])
            card.capabilities.streaming = True  # the minimal card says no: the client would silently send unary
            return MultiAgentClientFactory(config).create(card=card)

        try:
            yield client(False), client(True)
        finally:
            service.disconnect(conn)
            sb.uniffi_set_event_loop(None)  # back to "the running loop", for the next test's loop


@asynccontextmanager
async def a2a_stub(endpoint: str, secret: str, name: str) -> AsyncIterator[Any]:
    """slima2a's generated A2A stub on a slimrpc channel to ``name``: calls that may carry
    slimrpc metadata (``metadata={"traceparent": ...}``), which slima2a's client never sends."""
    from slima2a.types.v1.a2a_pb2_slimrpc import A2AServiceStub

    org, namespace, _ = name.split("/")
    sb = bindings.slim("error")
    sb.uniffi_set_event_loop(asyncio.get_running_loop())
    me = f"a2a-stub-{uuid.uuid4().hex[:10]}"
    service = sb.create_service(me)
    app, conn = await connect_and_subscribe(service, sb.Name(org, namespace, me), slim_url=endpoint, secret=secret)
    try:
        yield A2AServiceStub(slimrpc_channel_factory(app, conn)(name))
    finally:
        service.disconnect(conn)
        sb.uniffi_set_event_loop(None)


def artifact_text(task: Any) -> str:
    return "".join(part.text for artifact in task.artifacts for part in artifact.parts)


__all__ = ["a2a_clients", "a2a_stub", "artifact_text", "request"]
