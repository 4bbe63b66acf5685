"""The client side: open a SLIM session to a served name and use it as a Channel.

    async with open_channel("agntcy/onedoor/agent", secret=S) as channel:
        await channel.send(json.dumps(request)); reply = await channel.recv()

    async with open_channel(name, secret=S) as channel, mcp_streams(channel) as (r, w):
        async with mcp.ClientSession(r, w) as session: ...

The wire format is MCP-over-SLIM's: one whole JSON-RPC message per publish. A session
is checked before it is handed out (:meth:`SlimChannel.handshake`), so a worker that
refuses it (no MLS, too many sessions) fails :meth:`SlimClient.open` with
:class:`SlimTransportError`. The MCP codec is the MCP door's, imported only by
:func:`mcp_streams` (this distribution does not depend on the door; its ``ask`` extra does).
"""

from __future__ import annotations

import asyncio
import uuid
from contextlib import asynccontextmanager
from dataclasses import replace
from typing import Any, AsyncIterator

from . import bindings
from .bindings import describe_error
from .channel import SlimChannel
from .errors import SlimTransportError
from .options import SlimOptions, resolve_secret


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
        sb = self._sb = bindings.slim(options.log_level)
        self._service = sb.get_global_service()
        self._conn = await bindings.acquire(sb, self._service, options)
        org, namespace, _ = options.name.split("/")
        me = f"{org}/{namespace}/client-{uuid.uuid4().hex[:12]}"
        self._app = bindings.make_app(sb, self._service, me, self.secret)
        await self._app.subscribe_async(sb.Name.from_string(me), self._conn)
        return self

    async def open(
        self, name: str | None = None, *, probe_interval: float | None = None, metadata: dict[str, str] | None = None
    ) -> SlimChannel:
        """Open a session to ``name`` (default: the options' name); ``metadata`` goes with the
        session (W3C ``traceparent`` / ``tracestate``: the worker's observers continue that trace)."""
        sb, options = self._sb, self.options
        name = name or options.name
        target = sb.Name.from_string(name)
        if name not in self._routes:
            await self._app.set_route_async(target, self._conn)
            self._routes.add(name)
        config = bindings.session_config(sb, options, metadata)
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
        channel = SlimChannel(
            session,
            self._app,
            peer=name,
            max_message_bytes=options.max_message_bytes,
            probe_interval=options.probe_interval if probe_interval is None else probe_interval,
            probe_timeout=options.probe_timeout,
            client=True,
        )
        try:
            await channel.handshake(budget)
        except BaseException:
            await channel.close()
            raise
        return channel

    async def close(self) -> None:
        if self._service is not None and self._conn is not None:
            self._conn = None
            bindings.release(self._service, self.options.endpoint)


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
    """The (read, write) stream pair ``mcp.ClientSession`` takes, over a SLIM channel.

    The MCP codec lives in the MCP door (``onedoor_door_mcp.client``, installed with the
    ``ask`` extra); this adds SLIM's reason when a session ends badly.
    """
    from onedoor_door_mcp.client import mcp_streams as channel_streams

    def ended() -> BaseException | None:
        error = getattr(channel, "error", None)
        return SlimTransportError(error) if error else None

    async with channel_streams(channel, ended=ended) as streams:
        yield streams


def mcp_timeout(seconds: float) -> Any:
    """A read timeout in the form the installed SDK takes (timedelta on 1.x, float on 2.x)."""
    from onedoor_door_mcp.client import read_timeout

    return read_timeout(seconds)
