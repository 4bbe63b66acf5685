"""onedoor's AG-UI door: the agent behind an AG-UI endpoint, plus a web chat page.

This module is what the ``onedoor.doors`` entry point names, so it imports nothing
heavy: the ASGI app, ag-ui-protocol and pydantic load in :meth:`AguiDoor.asgi_mount`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from onedoor.journal import OnDisconnect
from onedoor.questions import AskFallback, check_policy

if TYPE_CHECKING:
    from onedoor import AsgiMount, ServeContext

__version__ = "0.1.0"


@dataclass
class AguiOptions:
    prefix: str = field(default="/agui", metadata={"help": "URL prefix of the endpoint and the chat page"})
    keepalive: float = field(default=15.0, metadata={"help": "seconds of silence before an SSE keep-alive comment (0: off)"})
    snapshot: Literal["request", "always", "never"] = field(
        default="request",
        metadata={"help": "MESSAGES_SNAPSHOT before RUN_FINISHED: on request (forwardedProps.messagesSnapshot), always or never"},
    )
    snapshot_after: int = field(
        default=50, metadata={"help": "also send it when the input has at least this many messages (0: only on request)"}
    )
    page: bool = field(default=True, metadata={"help": "serve the chat page at the prefix"})
    coalesce: bool = field(
        default=True, metadata={"help": "send the frames that are ready together in one write (off: one write per event)"}
    )
    on_disconnect: OnDisconnect = field(
        default="cancel",
        metadata={
            "help": "a client that goes away mid-run: cancel the run, or let it finish (into its thread; "
            "GET PREFIX/runs/ID/events follows it again). The chat page asks finish for its runs on stored threads"
        },
    )
    ask_fallback: AskFallback = field(
        default="deny",
        metadata={
            "help": "a question the run asks while too many runs wait for answers (Limits.max_parked_runs): "
            "deny (reject/decline), allow (approve once; questions declined) or fail the run"
        },
    )

    def __post_init__(self) -> None:
        if not self.prefix.startswith("/") or self.prefix == "/":
            raise ValueError("prefix must start with '/' and not be '/' alone (e.g. /agui)")
        self.prefix = self.prefix.rstrip("/")
        if self.keepalive < 0:
            raise ValueError("keepalive must be 0 or more")
        if self.snapshot_after < 0:
            raise ValueError("snapshot_after must be 0 or more")
        check_policy(self.ask_fallback)


def chat_page() -> bytes:
    """The chat page: index.html with its style and the built bundle inlined."""
    from importlib.resources import files

    static = files(__name__) / "static"
    html = (static / "index.html").read_text("utf-8")
    css = (static / "chat.css").read_text("utf-8")
    js = (static / "chat.js").read_text("utf-8").replace("</script", "<\\/script")
    html = html.replace("<!--onedoor:style-->", f"<style>\n{css}</style>")
    html = html.replace("<!--onedoor:script-->", f"<script>\n{js}</script>")
    return html.encode("utf-8")


class AguiDoor:
    name = "agui"
    shapes = frozenset({"asgi"})
    Options = AguiOptions
    observes_requests = True  # each request inside observed_request (app.py): the transport need not

    def asgi_mount(self, ctx: ServeContext) -> AsgiMount:
        from onedoor import AsgiMount

        from .app import AguiApp

        options = ctx.options_for(self.name) or AguiOptions()
        app = AguiApp(
            ctx.kernel, options, door_name=self.name, page=chat_page() if options.page else None, principal_of=ctx.principal_of
        )
        base = options.prefix + "/"
        links = [("chat page", base), ("AG-UI endpoint (POST)", base)] if options.page else [("AG-UI endpoint (POST)", base)]
        return AsgiMount(app=app, prefix=options.prefix, links=links)


door = AguiDoor
