"""onedoor's SLIM transport: a channel door (MCP, ACP, terminal) or an rpc door (A2A)
over AGNTCY SLIM.

    onedoor slim-node &                                   # one node per host (unix socket)
    ONEDOOR_SLIM_SECRET=... onedoor serve --door mcp --transport slim
    ONEDOOR_SLIM_SECRET=... onedoor serve --door a2a --transport slim   # slimrpc (slima2a)
    ONEDOOR_SLIM_SECRET=... onedoor ask --transport slim agntcy/onedoor/agent "hi"

This module is light: slim_bindings is imported only when serving.
"""

from __future__ import annotations

from typing import Any

from .errors import SlimTransportError
from .options import SlimOptions, resolve_secret

__all__ = ["SlimOptions", "SlimTransport", "SlimTransportError", "transport"]


class SlimTransport:
    name = "slim"
    shape = "channel"
    shapes = ("channel", "rpc")  # a door is served as channels if it can, else over slimrpc
    max_doors = 1  # one door per SLIM name
    Options = SlimOptions

    def prepare(self, options: SlimOptions | None) -> None:
        resolve_secret(options or SlimOptions())  # fail before anything starts

    def serve(self, doors: list[Any], ctx: Any) -> int:
        from onedoor.composition import shape_for

        options = ctx.options_for(self.name) or SlimOptions()
        secret = resolve_secret(options)
        door = doors[0]
        if shape_for(door, self) == "rpc":
            from . import rpc_server

            return rpc_server.serve(door, ctx, options, secret)
        from . import server

        return server.serve(door, ctx, options, secret)


transport = SlimTransport
