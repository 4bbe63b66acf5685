"""The ``mcp`` door object (entry point ``onedoor.doors: mcp``).

Imports nothing heavy: the MCP SDK, anyio and Starlette load only when the door
serves (``asgi_mount`` or ``serve_channel``).
"""

from __future__ import annotations

from typing import Any

from onedoor import ServeContext

from .options import McpOptions


class McpDoor:
    """The agent as the MCP tool ``ask``: channel shape (stdio, SLIM) and asgi shape (HTTP)."""

    name = "mcp"
    shapes = frozenset({"asgi", "channel"})
    framing = "ndjson"
    Options = McpOptions
    observes_requests = True  # each JSON-RPC request inside observed_request (server.py): the transport need not

    def _options(self, ctx: ServeContext) -> McpOptions:
        return ctx.options_for(self.name) or McpOptions()

    def asgi_mount(self, ctx: ServeContext) -> Any:
        from .asgi import mount

        return mount(ctx, self._options(ctx), door=self.name)

    async def serve_channel(self, channel: Any, ctx: ServeContext) -> None:
        from .channel import serve

        await serve(channel, ctx.kernel, self._options(ctx), door=self.name, transport=ctx.transport_name)


door = McpDoor
