"""The client side of MCP over any onedoor Channel: the stream pair ``mcp.ClientSession`` takes.

    async with mcp_streams(channel) as (read, write):
        async with mcp.ClientSession(read, write) as session: ...

A transport's client (SLIM's ``open_channel``) or a test's in-memory channel gives the
channel; one JSON-RPC message per channel message, both ways, under the same wire
policy as the server (:mod:`onedoor.jsonrpc`). Imports the SDK only when used.
"""

from __future__ import annotations

from contextlib import asynccontextmanager
from typing import Any, AsyncIterator, Callable

from onedoor.wire import jsonrpc


@asynccontextmanager
async def mcp_streams(
    channel: Any, *, ended: Callable[[], BaseException | None] | None = None
) -> AsyncIterator[tuple[Any, Any]]:
    """The (read, write) stream pair ``mcp.ClientSession`` takes, over ``channel``.

    A message that cannot be read (or a transport error such as MessageTooLarge) reaches
    the session as an exception item, as the SDK's own transports do. When the channel
    ends, ``ended()`` may name why (an exception handed to the session before the read
    stream closes), e.g. a transport's "the peer stopped answering".
    """
    import anyio
    from mcp.shared.message import SessionMessage

    from .sdk import client_codec

    parse, dump = client_codec()
    read_send, read_recv = anyio.create_memory_object_stream[Any](16)
    write_send, write_recv = anyio.create_memory_object_stream[Any](16)

    async def reader() -> None:
        async with read_send:
            while True:
                try:
                    text = await channel.recv()
                except Exception as exc:  # noqa: BLE001 - MessageTooLarge and the like
                    await read_send.send(exc)
                    continue
                if text is None:
                    reason = ended() if ended is not None else None
                    if reason is not None:
                        await read_send.send(reason)
                    return
                incoming = jsonrpc.parse_message(text)
                if incoming.message is None:
                    await read_send.send(ValueError(f"unreadable message from the server: {incoming.problem}"))
                    continue
                try:
                    message = parse(incoming.message)
                except ValueError as exc:
                    await read_send.send(exc)
                    continue
                await read_send.send(SessionMessage(message))

    async def writer() -> None:
        async with write_recv:
            async for item in write_recv:
                await channel.send(jsonrpc.dumps(dump(item.message)))

    async with anyio.create_task_group() as tg:
        tg.start_soon(reader)
        tg.start_soon(writer)
        try:
            yield read_recv, write_send
        finally:
            tg.cancel_scope.cancel()


def read_timeout(seconds: float) -> Any:
    """A ``ClientSession(read_timeout_seconds=...)`` value for the installed SDK (1.x or 2.x)."""
    from .sdk import read_timeout as sdk_read_timeout

    return sdk_read_timeout(seconds)


__all__ = ["mcp_streams", "read_timeout"]
