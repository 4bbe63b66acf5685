"""The client side: open a SLIM session to a served name and use it as a Channel.

    async with open_channel("agntcy/onedoor/agent", secret=S) as channel:
        await channel.send(json.dumps(request)); reply = await channel.recv()

    async with open_channel(name, secret=S) as channel, mcp_streams(channel) as (r, w):
        async with mcp.ClientSession(r, w) as session: ...

The wire format is MCP-over-SLIM's: one whole JSON-RPC message per publish.
"""

from __future__ import annotations

import asyncio
import uuid
from contextlib import asynccontextmanager
from dataclasses import replace
from typing import Any, AsyncIterator

from . import runtime
from .channel import SlimChannel
from .options import SlimOptions, resolve_secret
from .runtime import SlimTransportError, describe_error


class SlimClient:
    """One connection to a node; opens any number of sessions."""

    def __init__(self, options: SlimOptions, secret: str) -> None:
        self.options = options
        self.secret = secret
        self._sb: Any = None
        self._service: Any = None
        self._conn: int | None = None
        self._app: Any = None
        self._routes: set[str] = set()

    async def connect(self) -> "SlimClient":
        options = self.options
        sb = self._sb = runtime.slim(options.log_level)
        self._service = sb.get_global_service()
        self._conn = await runtime.acquire(sb, self._service, options)
        org, namespace, _ = options.name.split("/")
        me = f"{org}/{namespace}/client-{uuid.uuid4().hex[:12]}"
        self._app = runtime.make_app(sb, self._service, me, self.secret)
        await self._app.subscribe_async(sb.Name.from_string(me), self._conn)
        return self

    async def open(self, name: str | None = None, *, probe_interval: float | None = None) -> SlimChannel:
        """Open a session to ``name`` (default: the options' name)."""
        sb, options = self._sb, self.options
        name = name or options.name
        target = sb.Name.from_string(name)
        if name not in self._routes:
            await self._app.set_route_async(target, self._conn)
            self._routes.add(name)
        config = runtime.session_config(sb, options)
        budget = (options.session_retries + 1) * options.session_interval * 3 + 5.0
        try:
            session = await asyncio.wait_for(self._app.create_session_and_wait_async(config, target), budget)
        except TimeoutError:
            raise SlimTransportError(f"no SLIM session with {name} within {budget:.0f}s") from None
        except sb.SlimError as exc:
            text = describe_error(exc)
            if "retries exhausted" in text or "timeout" in text.lower():
                raise SlimTransportError(
                    f"no answer from {name} via {options.endpoint} after {options.session_retries} retries: "
                    "no worker serves that name, or the shared secret differs "
                    "(SLIM does not report a wrong secret, only silence)"
                ) from None
            raise SlimTransportError(f"cannot open a SLIM session with {name}: {text}") from None
        return SlimChannel(
            session,
            self._app,
            peer=name,
            max_message_bytes=options.max_message_bytes,
            probe_interval=options.probe_interval if probe_interval is None else probe_interval,
            probe_timeout=options.probe_timeout,
        )

    async def close(self) -> None:
        if self._service is not None and self._conn is not None:
            self._conn = None
            runtime.release(self._service, self.options.endpoint)


def client_options(options: SlimOptions | None = None, **overrides: Any) -> SlimOptions:
    """Options for a client: snappier liveness probes than a worker's by default."""
    base = options or SlimOptions(probe_interval=5.0, probe_timeout=5.0)
    return replace(base, **overrides) if overrides else base


@asynccontextmanager
async def open_channel(
    name: str | None = None, *, options: SlimOptions | None = None, secret: str | None = None, **overrides: Any
) -> AsyncIterator[SlimChannel]:
    """Connect, open one session to ``name``, yield it as a Channel, clean up."""
    opts = client_options(options, **overrides)
    secret = secret or resolve_secret(opts)
    client = await SlimClient(opts, secret).connect()
    try:
        channel = await client.open(name)
        try:
            yield channel
        finally:
            await channel.close()
    finally:
        await client.close()


@asynccontextmanager
async def mcp_streams(channel: Any) -> AsyncIterator[tuple[Any, Any]]:
    """The (read, write) stream pair ``mcp.ClientSession`` takes, over a Channel."""
    import anyio
    from mcp.shared.message import SessionMessage

    parse, dump = _jsonrpc_codec()
    read_send, read_recv = anyio.create_memory_object_stream(16)
    write_send, write_recv = anyio.create_memory_object_stream(16)

    async def reader() -> None:
        async with read_send:
            while True:
                try:
                    text = await channel.recv()
                except Exception as exc:  # noqa: BLE001 - MessageTooLarge and the like
                    await read_send.send(exc)
                    continue
                if text is None:
                    if getattr(channel, "error", None):
                        await read_send.send(SlimTransportError(channel.error))
                    return
                try:
                    message = parse(text)
                except Exception as exc:  # noqa: BLE001
                    await read_send.send(exc)
                    continue
                await read_send.send(SessionMessage(message))

    async def writer() -> None:
        async with write_recv:
            async for item in write_recv:
                await channel.send(dump(item.message))

    async with anyio.create_task_group() as tg:
        tg.start_soon(reader)
        tg.start_soon(writer)
        try:
            yield read_recv, write_send
        finally:
            tg.cancel_scope.cancel()


def _jsonrpc_codec() -> tuple[Any, Any]:
    """(parse, dump) for JSON-RPC messages on the installed MCP SDK (1.x or 2.x)."""
    import mcp.types as types

    adapter = getattr(types, "jsonrpc_message_adapter", None)
    if adapter is not None:  # mcp 2.x

        def parse2(text: str) -> Any:
            return adapter.validate_json(text, by_name=False)

        def dump2(message: Any) -> str:
            return message.model_dump_json(by_alias=True, exclude_unset=True)

        return parse2, dump2

    def dump1(message: Any) -> str:
        return message.model_dump_json(by_alias=True, exclude_none=True)

    return types.JSONRPCMessage.model_validate_json, dump1


def mcp_timeout(seconds: float) -> Any:
    """A read timeout in the form the installed SDK takes (timedelta on 1.x, float on 2.x)."""
    from importlib.metadata import version

    if int(version("mcp").split(".")[0]) >= 2:
        return seconds
    from datetime import timedelta

    return timedelta(seconds=seconds)
