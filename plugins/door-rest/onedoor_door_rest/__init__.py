"""The REST door: the agent behind ``POST /chat`` and ``POST /chat/stream``.

``/chat`` takes a message and the caller's history and answers JSON with the reply and
the run's tool calls; ``/chat/stream`` answers Server-Sent Events, one core event per
SSE event. A run that needs a person's answer (a tool approval, a question) ends its
response with the question (``status: needs_input`` / a ``question_asked`` event) and
waits, parked, for ``POST /runs/{run_id}/answers`` (or ``.../answers/stream``).
``/threads`` keeps conversations for the caller (the kernel's thread store):
``POST /threads/{id}/chat`` continues one without sending history. Every SSE event
carries its journal cursor, and ``GET /runs/{run_id}/events`` with ``Last-Event-ID``
picks a dropped stream up again. Typed request/response models and OpenAPI docs come from FastAPI. Errors
are JSON ``{"error": code, "detail": message}``, the HTTP transport's shape; the
transport also guards every request (Host, Origin, token, content type, JSON) before
this door sees it, and streams its SSE.

This module is what the entry point names: FastAPI is imported only in
:meth:`RestDoor.asgi_mount`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from onedoor.journal import ON_DISCONNECT, OnDisconnect
from onedoor.questions import AskFallback, check_policy

if TYPE_CHECKING:
    from onedoor import AsgiMount, ServeContext

__version__ = "0.1.0"


@dataclass
class RestOptions:
    prefix: str = field(default="/rest", metadata={"help": "URL prefix the door is mounted under"})
    keepalive: float = field(default=15.0, metadata={"help": "seconds of silence before an SSE keep-alive comment"})
    docs: bool = field(default=True, metadata={"help": "serve OpenAPI docs at <prefix>/docs"})
    ask_fallback: AskFallback = field(
        default="deny",
        metadata={"help": "a question's answer when no more runs may wait for answers (limits.max_parked_runs): "
                  "deny (reject/decline), allow (allow tools once, decline questions) or fail the run"},
    )
    question_ttl: float = field(
        default=0.0,
        metadata={"help": "seconds a suspended run waits for its answers before it ends cancelled "
                  "(0: the kernel's limits.question_ttl)"},
    )
    on_disconnect: OnDisconnect = field(
        default="cancel",
        metadata={"help": "what a client going away does to its run: cancel it, or let it finish into its "
                  "thread (a streamed run's client may reconnect to GET <prefix>/runs/{run_id}/events)"},
    )

    def __post_init__(self) -> None:
        if not self.prefix.startswith("/") or self.prefix.rstrip("/") == "":
            raise ValueError(f"prefix must start with '/' and name a path, got {self.prefix!r}")
        self.prefix = self.prefix.rstrip("/")
        if self.keepalive <= 0:
            raise ValueError("keepalive must be more than 0 seconds")
        check_policy(self.ask_fallback)
        if self.on_disconnect not in ON_DISCONNECT:
            raise ValueError(f"on_disconnect must be cancel or finish, got {self.on_disconnect!r}")
        if not self.question_ttl >= 0:
            raise ValueError("question_ttl must be 0 (the kernel's default) or more seconds")


class RestDoor:
    name = "rest"
    shapes = frozenset({"asgi"})
    Options = RestOptions
    observes_requests = True  # each request inside observed_request (observing.py): the transport need not

    def asgi_mount(self, ctx: ServeContext) -> AsgiMount:
        from onedoor import AsgiMount

        from .app import build_app

        options = ctx.options_for(self.name) or RestOptions()
        app = build_app(ctx, options)
        links = [("api", options.prefix + "/")]
        if options.docs:
            links.append(("docs", options.prefix + "/docs"))
        # uploads too (multipart/form-data, the chat calls); a JSON Patch is application/json-patch+json,
        # which the transport takes as JSON
        return AsgiMount(app=app, prefix=options.prefix, links=links,
                         content_types=("application/json", "multipart/form-data"))


door = RestDoor
