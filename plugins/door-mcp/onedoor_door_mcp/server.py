"""Build the MCP server for a kernel: name, version, instructions, the ``ask`` tool, the
threads' state resources (when the store keeps state) and the optional state tool; each
request served inside :func:`onedoor.observe.observed_request`."""

from __future__ import annotations

import logging
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from onedoor import Kernel, ServeContext, observed_request, trace_meta
from onedoor.threads import keeps_state
from onedoor.wire.jsonrpc import INVALID_PARAMS

from . import sdk
from .keys import log_where, sealing_keys
from .options import McpOptions
from .state import StateResources, StateTool
from .tool import AskTool

log = logging.getLogger("onedoor.door.mcp")


def door_version() -> str:
    try:
        return version("onedoor-door-mcp")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        return "0.0.0"


def describe_tool(kernel: Kernel, options: McpOptions) -> str:
    if options.tool_description:
        return options.tool_description
    return (
        f"Ask an AI agent (onedoor backend {kernel.backend.name!r}) and get its final reply as text. "
        "The agent may think and use its own tools before answering. To hold a conversation, call with "
        "'new_thread': true, then pass the 'thread' id the result names in later calls (the server keeps "
        "the turns); or pass earlier turns in 'history' yourself. Files and images go in 'attachments' (MCP "
        "content blocks, inline or by URL); what the agent makes comes back as image, audio and resource blocks. "
        "Send a progress token to receive the reply while it is written (each progress notification's message "
        "carries the next piece of text, or a tool call). A failed run comes back with isError set."
    )


def instructions(kernel: Kernel, options: McpOptions) -> str:
    if options.instructions:
        return options.instructions
    text = (
        f"This server exposes one AI agent (backend {kernel.backend.name!r}) as the tool "
        f"'{options.tool_name}'. Call it with a 'message'. A call alone keeps no memory: to continue a "
        "conversation, start a stored thread with 'new_thread': true and pass the returned 'thread' id in "
        "the next calls, or pass the earlier turns in 'history'. Long replies stream as progress "
        "notifications when you send a progress token, and a call can be cancelled."
    )
    if keeps_state(kernel.store):
        text += (" A stored thread's shared state (a JSON object the agent and front ends edit) is the resource "
                 "onedoor://threads/{thread}/state" + (f"; change it with the tool '{options.state_tool}'." if
                                                        options.state_tool else "."))
    return text


class Tools:
    """The server's tools: ``ask``, and the state tool when the ``state_tool`` option names one."""

    def __init__(self, ask: AskTool, state: StateTool | None) -> None:
        self.ask = ask
        self.state = state

    def definitions(self) -> list[dict[str, Any]]:
        return [*self.ask.definitions(), *([self.state.definition()] if self.state is not None else [])]

    async def call(self, name: str, arguments: Any, progress: Any, peer: Any = None) -> sdk.Outcome | sdk.InputRequired:
        if self.state is not None and name == self.state.name:
            return await self.state.call(arguments if arguments is not None else {}, peer)
        if name != self.ask.name:
            names = ", ".join(repr(d["name"]) for d in self.definitions())
            raise sdk.ProtocolError(INVALID_PARAMS, f"Unknown tool: {name!r}; this server offers {names}")
        return await self.ask.call(name, arguments, progress, peer=peer)


def observer(kernel: Kernel, door: str, transport: str) -> sdk.Observe:
    """``observe(method, peer)``: a request inside ``onedoor_request_started`` / ``_finished``,
    with its W3C trace context (from its ``_meta``) and its principal."""

    def observe(method: str, peer: sdk.Peer) -> Any:
        return observed_request(kernel.hooks, door=door, transport=transport, method=method, meta=trace_meta(peer.meta),
                                principal=ServeContext.principal_of(peer.scope))

    return observe


def principal_bound(ctx: Any) -> str:
    """The principal a ``requestState`` is bound to: the caller's (the HTTP request's, else ``local``)."""
    return ServeContext.principal_of(getattr(getattr(ctx, "request", None), "scope", None))


def sealing(kernel: Kernel, options: McpOptions, token: str = "") -> sdk.Sealing:
    """How ``requestState`` is sealed (:mod:`.keys`); good for as long as a question waits."""
    keys, where = sealing_keys(options.request_state_keys, token)
    if sdk.MAJOR >= 2:
        log_where(where)
    return sdk.Sealing(keys, kernel.limits.question_ttl, principal_bound)


def build(
    kernel: Kernel, options: McpOptions | None = None, door: str = "mcp", transport: str = "", token: str = "",
) -> tuple[Any, AskTool]:
    """A fresh low-level MCP server (one per channel session or HTTP app) and its ``ask`` tool.
    ``transport`` names the transport for observers (``stdio``, ``http``, ``slim``…); ``token``
    (the HTTP transport's shared token) is what ``requestState`` keys derive from when the
    door's ``request_state_keys`` are unset."""
    options = options or McpOptions()
    tool = AskTool(
        kernel,
        name=options.tool_name,
        description=describe_tool(kernel, options),
        door=door,
        progress_tools=options.progress_tools,
        ask_fallback=options.ask_fallback,
    )
    levels: dict[str, str] = {}

    def set_level(level: str) -> None:
        levels["level"] = level
        log.debug("client asked for log level %s", level)

    tools = Tools(tool, StateTool(kernel, options.state_tool) if options.state_tool else None)
    resources = StateResources(kernel) if keeps_state(kernel.store) else None
    server = sdk.build_server(
        options.server_name, door_version(), instructions(kernel, options), tools.definitions, tools.call, set_level,
        with_peer=True, resources=resources, observe=observer(kernel, door, transport),
        sealing=sealing(kernel, options, token),
    )
    return server, tool
