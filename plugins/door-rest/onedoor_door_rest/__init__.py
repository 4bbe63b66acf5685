"""The REST door: the agent behind ``POST /chat`` and ``POST /chat/stream``.

``/chat`` takes a message and the caller's history and answers JSON with the reply and
the run's tool calls; ``/chat/stream`` answers Server-Sent Events, one core event per
SSE event. Typed request/response models and OpenAPI docs come from FastAPI. Errors
are JSON ``{"error": code, "detail": message}``, the HTTP transport's shape; the
transport also guards every request (Host, Origin, token, content type, JSON) before
this door sees it, and streams its SSE.

This module is what the entry point names: FastAPI is imported only in
:meth:`RestDoor.asgi_mount`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from onedoor.composition import AsgiMount, ServeContext

__version__ = "0.1.0"


@dataclass
class RestOptions:
    prefix: str = field(default="/rest", metadata={"help": "URL prefix the door is mounted under"})
    keepalive: float = field(default=15.0, metadata={"help": "seconds of silence before an SSE keep-alive comment"})
    docs: bool = field(default=True, metadata={"help": "serve OpenAPI docs at <prefix>/docs"})

    def __post_init__(self) -> None:
        if not self.prefix.startswith("/") or self.prefix.rstrip("/") == "":
            raise ValueError(f"prefix must start with '/' and name a path, got {self.prefix!r}")
        self.prefix = self.prefix.rstrip("/")
        if self.keepalive <= 0:
            raise ValueError("keepalive must be more than 0 seconds")


class RestDoor:
    name = "rest"
    shapes = frozenset({"asgi"})
    Options = RestOptions

    def asgi_mount(self, ctx: ServeContext) -> AsgiMount:
        from onedoor.composition import AsgiMount

        from .app import build_app

        options = ctx.options_for(self.name) or RestOptions()
        app = build_app(ctx, options)
        links = [("api", options.prefix + "/")]
        if options.docs:
            links.append(("docs", options.prefix + "/docs"))
        return AsgiMount(app=app, prefix=options.prefix, links=links)


door = RestDoor
