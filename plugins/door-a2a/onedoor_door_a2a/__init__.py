"""onedoor's A2A door: the agent as a peer of other agents (the Agent2Agent protocol).

Built on the official Python SDK ``a2a-sdk`` 1.x: its request handler runs the A2A
methods (SendMessage, SendStreamingMessage, GetTask, CancelTask, SubscribeToTask…), and
this door's :class:`~onedoor_door_a2a.executor.KernelExecutor` turns each task into a
kernel run. Under the door's prefix (``/a2a`` by default)::

    GET  /.well-known/agent-card.json   the agent card (also served at the server root)
    POST /                              the JSON-RPC binding (SSE for streaming methods)
    ...  /rest/message:send …           the HTTP+JSON binding

This module is what the entry point names, so it imports nothing heavy: a2a-sdk and
Starlette load in :meth:`A2aDoor.asgi_mount`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from onedoor import hookimpl
from onedoor.questions import AskFallback, check_policy

if TYPE_CHECKING:
    from onedoor import AsgiMount, RunFailed, RunFinished, RunInfo, ServeContext

__version__ = "0.1.0"

CARD_PATH = "/.well-known/agent-card.json"  # a2a.utils.constants.AGENT_CARD_WELL_KNOWN_PATH


@dataclass
class A2aOptions:
    prefix: str = field(default="/a2a", metadata={"help": "URL prefix of the JSON-RPC endpoint, the REST binding and the card"})
    name: str = field(default="", metadata={"help": "the agent's name on its card (default: onedoor (<backend>))"})
    description: str = field(default="", metadata={"help": "the agent's description on its card"})
    root_card: bool = field(
        default=True, metadata={"help": "also serve the card at the server root, /.well-known/agent-card.json"}
    )
    rest: bool = field(default=True, metadata={"help": "serve the HTTP+JSON binding at <prefix>/rest"})
    v03_compat: bool = field(
        default=True,
        metadata={"help": "also answer A2A 0.3 clients (message/send, message/stream, tasks/get…) on the JSON-RPC endpoint"},
    )
    ask_fallback: AskFallback = field(
        default="deny",
        metadata={"help": "a question's answer when no more runs may wait for answers (limits.max_parked_runs): "
                  "deny (reject/decline), allow (allow tools once, decline questions) or fail the run"},
    )
    question_ttl: float = field(
        default=0.0,
        metadata={"help": "seconds an input-required task waits for its answer before its run ends cancelled "
                  "(0: the kernel's limits.question_ttl)"},
    )

    def __post_init__(self) -> None:
        if not self.prefix.startswith("/") or self.prefix.rstrip("/") == "":
            raise ValueError(f"prefix must start with '/' and name a path, got {self.prefix!r}")
        self.prefix = self.prefix.rstrip("/")
        check_policy(self.ask_fallback)
        if not self.question_ttl >= 0:
            raise ValueError("question_ttl must be 0 (the kernel's default) or more seconds")


class A2aDoor:
    name = "a2a"
    shapes = frozenset({"asgi", "rpc"})  # rpc: A2A over SLIM (slimrpc), see over_slim.py
    Options = A2aOptions
    observes_requests = True  # each request inside observed_request (observed.py): the transport need not

    def __init__(self) -> None:
        self._root_card: Any = None  # the card endpoint, for the server root (see onedoor_http_app)
        self._executors: list[Any] = []  # this door's KernelExecutors (told when a run ends)

    def asgi_mount(self, ctx: ServeContext) -> AsgiMount:
        from onedoor import AsgiMount

        from .app import build_app

        options = ctx.options_for(self.name) or A2aOptions()
        app, card_endpoint = build_app(ctx, options, door_name=self.name, executors=self._executors)
        self._root_card = card_endpoint if options.root_card else None
        links = [("agent card", options.prefix + CARD_PATH), ("A2A JSON-RPC (POST)", options.prefix + "/")]
        if options.rest:
            links.append(("A2A HTTP+JSON", options.prefix + "/rest"))
        return AsgiMount(
            app=app,
            prefix=options.prefix,
            links=links,
            cors_headers=("a2a-version", "a2a-extensions"),
            cors_expose=("a2a-version",),
            # the card says how to authenticate, so a client must read it before it has a token
            public_paths=(options.prefix + CARD_PATH,) + ((CARD_PATH,) if options.root_card else ()),
        )

    def register_rpc(self, server: Any, ctx: ServeContext) -> None:
        from .over_slim import register

        register(server, ctx, ctx.options_for(self.name), door_name=self.name, executors=self._executors)

    @hookimpl
    def onedoor_run_finished(self, run: RunInfo, outcome: RunFinished | RunFailed) -> None:
        """A run ended (any door's): an input-required task whose run it was ends too
        (see :mod:`~onedoor_door_a2a.parked`)."""
        for executor in self._executors:
            executor.run_ended(run.run_id)

    @hookimpl
    def onedoor_http_app(self, app: Any, ctx: ServeContext) -> None:
        """The card at the server root too, where A2A clients look first (RFC 8615). Like
        the one under the prefix, it is public (GET only): it tells a client how to
        authenticate; the Host and Origin checks still apply."""
        if self._root_card is None:
            return
        from starlette.routing import Route

        app.router.routes.insert(0, Route(CARD_PATH, self._root_card, methods=["GET"]))


door = A2aDoor

__all__ = ["CARD_PATH", "A2aDoor", "A2aOptions", "door"]
