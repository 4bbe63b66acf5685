"""Build the MCP server for a kernel: name, version, instructions and the ``ask`` tool."""

from __future__ import annotations

import logging
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from onedoor import Kernel

from . import sdk
from .options import McpOptions
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
        "the turns); or pass earlier turns in 'history' yourself. Send a progress token to receive the reply "
        "while it is written (each progress notification's message carries the next piece of text, or a tool "
        "call). A failed run comes back with isError set."
    )


def instructions(kernel: Kernel, options: McpOptions) -> str:
    if options.instructions:
        return options.instructions
    return (
        f"This server exposes one AI agent (backend {kernel.backend.name!r}) as the tool "
        f"'{options.tool_name}'. Call it with a 'message'. A call alone keeps no memory: to continue a "
        "conversation, start a stored thread with 'new_thread': true and pass the returned 'thread' id in "
        "the next calls, or pass the earlier turns in 'history'. Long replies stream as progress "
        "notifications when you send a progress token, and a call can be cancelled."
    )


def build(kernel: Kernel, options: McpOptions | None = None, door: str = "mcp") -> tuple[Any, AskTool]:
    """A fresh low-level MCP server (one per channel session or HTTP app) and its tool."""
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

    server = sdk.build_server(
        options.server_name, door_version(), instructions(kernel, options), tool.definitions, tool.call, set_level,
        with_peer=True,
    )
    return server, tool
