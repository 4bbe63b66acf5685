"""The low-level MCP server the door runs: ``tools/list``, ``tools/call`` and ``logging/setLevel``.

1.x registers handlers in ``request_handlers`` keyed by request type and reads the
request context from a context variable; 2.x takes ``on_*`` handlers ``(ctx, params)`` in
the constructor (``logging/setLevel`` warns there as deprecated since 2026-07-28).
"""

from __future__ import annotations

import logging
import warnings
from typing import Any, Awaitable, Callable

import mcp.types as types
from mcp.server.lowlevel import Server
from onedoor.wire import jsonrpc

from ._peer import Peer
from ._progress import Progress, progress_token
from ._results import Outcome, ProtocolError, call_result, sdk_error, tool_model
from ._sessions import watch_sessions
from ._version import LOGGER, MAJOR

ListTools = Callable[[], list[dict[str, Any]]]
CallTool = Callable[..., Awaitable[Outcome]]  # (name, arguments, progress[, peer=Peer])
SetLevel = Callable[[str], None]
log = logging.getLogger(LOGGER)


async def _call(call_tool: CallTool, name: str, arguments: Any, ctx: Any, with_peer: bool) -> Any:
    """The tool's result for the request whose context is ``ctx``; a ProtocolError as the
    SDK's error; anything unexpected as an internal error logged in one line (the SDKs
    would log it with a traceback)."""
    token = progress_token(ctx.meta)
    progress = Progress(ctx.session, token, ctx.request_id) if token is not None else None
    peer = Peer(ctx.session, ctx.request_id, getattr(ctx, "request", None)) if with_peer else None
    try:
        outcome = await (call_tool(name, arguments, progress) if peer is None else call_tool(name, arguments, progress, peer=peer))
        return call_result(outcome)
    except ProtocolError as exc:
        raise sdk_error(exc) from None
    except Exception as exc:  # answered, not crashed (the traceback at DEBUG only)
        detail = f"{type(exc).__name__}: {exc}"
        log.warning("mcp: tools/call %r failed: %s", name, detail, exc_info=log.isEnabledFor(logging.DEBUG))
        raise sdk_error(ProtocolError(jsonrpc.INTERNAL_ERROR, f"Internal error: {type(exc).__name__}")) from None


def build_server(
    name: str, version: str, instructions: str, list_tools: ListTools, call_tool: CallTool, set_level: SetLevel,
    *, with_peer: bool = False,
) -> Any:
    """A low-level MCP server with tools/list, tools/call and logging/setLevel.

    ``call_tool(name, arguments, progress)``; with ``with_peer`` it also gets
    ``peer=`` (a :class:`Peer`, to ask the client).
    """
    if MAJOR >= 2:
        return _build_server_2(name, version, instructions, list_tools, call_tool, set_level, with_peer)
    return _build_server_1(name, version, instructions, list_tools, call_tool, set_level, with_peer)


def _build_server_1(
    name: str, version: str, instructions: str, list_tools: ListTools, call_tool: CallTool, set_level: SetLevel,
    with_peer: bool,
) -> Any:
    server = Server(name, version=version, instructions=instructions)

    async def on_list_tools(req: Any) -> Any:
        return types.ServerResult(types.ListToolsResult(tools=[tool_model(t) for t in list_tools()]))

    async def on_call_tool(req: Any) -> Any:
        ctx = server.request_context
        return types.ServerResult(await _call(call_tool, req.params.name, req.params.arguments, ctx, with_peer))

    async def on_set_level(req: Any) -> Any:
        set_level(str(req.params.level))
        return types.ServerResult(types.EmptyResult())

    server.request_handlers[types.ListToolsRequest] = on_list_tools
    server.request_handlers[types.CallToolRequest] = on_call_tool
    server.request_handlers[types.SetLevelRequest] = on_set_level
    watch_sessions(server)
    return server


def _build_server_2(
    name: str, version: str, instructions: str, list_tools: ListTools, call_tool: CallTool, set_level: SetLevel,
    with_peer: bool,
) -> Any:
    async def on_list_tools(ctx: Any, params: Any) -> Any:
        return types.ListToolsResult(tools=[tool_model(t) for t in list_tools()])

    async def on_call_tool(ctx: Any, params: Any) -> Any:
        return await _call(call_tool, params.name, params.arguments, ctx, with_peer)

    async def on_set_level(ctx: Any, params: Any) -> Any:
        set_level(str(params.level))
        return types.EmptyResult()

    with warnings.catch_warnings():  # logging/setLevel is deprecated from 2026-07-28 on, still answered
        warnings.simplefilter("ignore")
        return Server(  # type: ignore[call-arg]  # 2.x's constructor; mypy may see 1.x
            name,
            version=version,
            instructions=instructions,
            on_list_tools=on_list_tools,
            on_call_tool=on_call_tool,
            on_set_logging_level=on_set_level,
        )


async def run_server(server: Any, read_stream: Any, write_stream: Any) -> None:
    """Serve one connection over a pair of memory streams of SessionMessage."""
    await server.run(read_stream, write_stream, server.create_initialization_options())


__all__ = ["CallTool", "ListTools", "SetLevel", "build_server", "run_server"]
