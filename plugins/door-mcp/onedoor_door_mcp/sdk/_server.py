"""The low-level MCP server the door runs: ``tools/list``, ``tools/call``, ``logging/setLevel``
and, when the door offers them, ``resources/list``, ``resources/templates/list`` and
``resources/read``.

1.x registers handlers in ``request_handlers`` keyed by request type and reads the
request context from a context variable; 2.x takes ``on_*`` handlers ``(ctx, params)`` in
the constructor (``logging/setLevel`` warns there as deprecated since 2026-07-28). A
resource URI is an ``AnyUrl`` on 1.x and a string on 2.x. Either way each request is
served by :class:`_Handlers`, inside the door's ``observe`` context when it gave one.
"""

from __future__ import annotations

import logging
import warnings
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Protocol

import mcp.types as types
from mcp.server.lowlevel import Server
from onedoor.wire import jsonrpc

from ._peer import Peer, request_meta
from ._progress import Progress, progress_token
from ._results import InputRequired, Outcome, ProtocolError, call_result, model, sdk_error, tool_model
from ._rounds import Sealing, input_round, seal_request_state
from ._sessions import watch_sessions
from ._version import LOGGER, MAJOR

ListTools = Callable[[], list[dict[str, Any]]]
CallTool = Callable[..., Awaitable[Outcome | InputRequired]]  # (name, arguments, progress[, peer=Peer])
SetLevel = Callable[[str], None]
Observe = Callable[[str, Peer], AbstractAsyncContextManager[Any]]  # (method, peer): around each request
log = logging.getLogger(LOGGER)


class Resources(Protocol):
    """What the door serves as MCP resources, in the wire form (dicts with camelCase keys)."""

    def templates(self) -> list[dict[str, Any]]:
        """``resourceTemplates`` of ``resources/templates/list``."""
        ...

    async def page(self, peer: Peer, cursor: str | None) -> tuple[list[dict[str, Any]], str | None]:
        """``(resources, nextCursor)`` of ``resources/list`` for the caller."""
        ...

    async def read(self, uri: str, peer: Peer) -> list[dict[str, Any]]:
        """``contents`` of ``resources/read``; ProtocolError (-32002) when there is no such resource."""
        ...


@dataclass
class _Handlers:
    """Each request the server answers, in plain Python; the builders below register them."""

    list_tools: ListTools
    call_tool: CallTool
    set_level: SetLevel
    with_peer: bool
    resources: Resources | None = None
    observe: Observe | None = None

    async def serve(
        self, method: str, ctx: Any, answer: Callable[[Peer], Awaitable[Any]], what: str = "", params: Any = None,
    ) -> Any:
        """``answer(peer)`` for the request whose context is ``ctx``, observed; a ProtocolError as
        the SDK's error; anything unexpected as an internal error logged in one line (the SDKs
        would log it with a traceback) naming ``what`` failed (default: the method). ``params``:
        the request's, when it may be a retried call (2026-07-28)."""
        peer = Peer(ctx.session, ctx.request_id, getattr(ctx, "request", None), request_meta(ctx.meta))
        peer.retry = input_round(params) if params is not None else None
        if self.observe is None:
            return await self._answered(what or method, peer, answer)
        async with self.observe(method, peer):
            return await self._answered(what or method, peer, answer)

    @staticmethod
    async def _answered(what: str, peer: Peer, answer: Callable[[Peer], Awaitable[Any]]) -> Any:
        try:
            return await answer(peer)
        except ProtocolError as exc:
            raise sdk_error(exc) from None
        except Exception as exc:  # answered, not crashed (the traceback at DEBUG only)
            detail = f"{type(exc).__name__}: {exc}"
            log.warning("mcp: %s failed: %s", what, detail, exc_info=log.isEnabledFor(logging.DEBUG))
            raise sdk_error(ProtocolError(jsonrpc.INTERNAL_ERROR, f"Internal error: {type(exc).__name__}")) from None

    async def tools(self, ctx: Any) -> Any:
        async def answer(peer: Peer) -> Any:
            return types.ListToolsResult(tools=[tool_model(t) for t in self.list_tools()])

        return await self.serve("tools/list", ctx, answer)

    async def call(self, ctx: Any, name: str, arguments: Any, params: Any = None) -> Any:
        async def answer(peer: Peer) -> Any:
            token = progress_token(ctx.meta)
            progress = Progress(ctx.session, token, ctx.request_id) if token is not None else None
            if self.with_peer:
                return call_result(await self.call_tool(name, arguments, progress, peer=peer))
            return call_result(await self.call_tool(name, arguments, progress))

        return await self.serve("tools/call", ctx, answer, f"tools/call {name!r}", params)

    async def level(self, ctx: Any, level: str) -> Any:
        async def answer(peer: Peer) -> Any:
            self.set_level(level)
            return types.EmptyResult()

        return await self.serve("logging/setLevel", ctx, answer)

    async def list_resources(self, ctx: Any, cursor: str | None) -> Any:
        assert self.resources is not None

        async def answer(peer: Peer) -> Any:
            found, after = await self.resources.page(peer, cursor)  # type: ignore[union-attr]
            wire: dict[str, Any] = {"resources": found}
            if after is not None:
                wire["nextCursor"] = after
            return model(types.ListResourcesResult, wire)

        return await self.serve("resources/list", ctx, answer)

    async def templates(self, ctx: Any) -> Any:
        assert self.resources is not None

        async def answer(peer: Peer) -> Any:
            return model(types.ListResourceTemplatesResult, {"resourceTemplates": self.resources.templates()})  # type: ignore[union-attr]

        return await self.serve("resources/templates/list", ctx, answer)

    async def read(self, ctx: Any, uri: Any) -> Any:
        assert self.resources is not None

        async def answer(peer: Peer) -> Any:
            return model(types.ReadResourceResult, {"contents": await self.resources.read(str(uri), peer)})  # type: ignore[union-attr]

        return await self.serve("resources/read", ctx, answer)


def build_server(
    name: str, version: str, instructions: str, list_tools: ListTools, call_tool: CallTool, set_level: SetLevel,
    *, with_peer: bool = False, resources: Resources | None = None, observe: Observe | None = None,
    sealing: Sealing | None = None,
) -> Any:
    """A low-level MCP server with tools/list, tools/call and logging/setLevel.

    ``call_tool(name, arguments, progress)``; with ``with_peer`` it also gets ``peer=`` (a
    :class:`Peer`: the request's ``_meta``, asking the client). With ``resources`` the
    server also answers resources/list, resources/templates/list and resources/read.
    ``observe(method, peer)`` is an async context manager each request is served in.
    ``sealing``: how a 2.x server seals the ``requestState`` of its ``input_required``
    results (:mod:`._rounds`; 1.x has no such results).
    """
    handlers = _Handlers(list_tools, call_tool, set_level, with_peer, resources, observe)
    if MAJOR >= 2:
        server = _build_server_2(name, version, instructions, handlers)
        if sealing is not None:
            seal_request_state(server, sealing, audience=name)
        return server
    return _build_server_1(name, version, instructions, handlers)


def _build_server_1(name: str, version: str, instructions: str, handlers: _Handlers) -> Any:
    server = Server(name, version=version, instructions=instructions)

    def cursor_of(req: Any) -> str | None:
        return getattr(req.params, "cursor", None) if req.params is not None else None

    async def on_list_tools(req: Any) -> Any:
        return types.ServerResult(await handlers.tools(server.request_context))

    async def on_call_tool(req: Any) -> Any:
        return types.ServerResult(await handlers.call(server.request_context, req.params.name, req.params.arguments))

    async def on_set_level(req: Any) -> Any:
        return types.ServerResult(await handlers.level(server.request_context, str(req.params.level)))

    async def on_list_resources(req: Any) -> Any:
        return types.ServerResult(await handlers.list_resources(server.request_context, cursor_of(req)))

    async def on_list_templates(req: Any) -> Any:
        return types.ServerResult(await handlers.templates(server.request_context))

    async def on_read_resource(req: Any) -> Any:
        return types.ServerResult(await handlers.read(server.request_context, req.params.uri))

    server.request_handlers[types.ListToolsRequest] = on_list_tools
    server.request_handlers[types.CallToolRequest] = on_call_tool
    server.request_handlers[types.SetLevelRequest] = on_set_level
    if handlers.resources is not None:
        server.request_handlers[types.ListResourcesRequest] = on_list_resources
        server.request_handlers[types.ListResourceTemplatesRequest] = on_list_templates
        server.request_handlers[types.ReadResourceRequest] = on_read_resource
    watch_sessions(server)
    return server


def _build_server_2(name: str, version: str, instructions: str, handlers: _Handlers) -> Any:
    async def on_list_tools(ctx: Any, params: Any) -> Any:
        return await handlers.tools(ctx)

    async def on_call_tool(ctx: Any, params: Any) -> Any:
        return await handlers.call(ctx, params.name, params.arguments, params)

    async def on_set_level(ctx: Any, params: Any) -> Any:
        return await handlers.level(ctx, str(params.level))

    async def on_list_resources(ctx: Any, params: Any) -> Any:
        return await handlers.list_resources(ctx, getattr(params, "cursor", None) if params is not None else None)

    async def on_list_templates(ctx: Any, params: Any) -> Any:
        return await handlers.templates(ctx)

    async def on_read_resource(ctx: Any, params: Any) -> Any:
        return await handlers.read(ctx, params.uri)

    resources: dict[str, Any] = {}
    if handlers.resources is not None:
        resources = {"on_list_resources": on_list_resources, "on_list_resource_templates": on_list_templates,
                     "on_read_resource": on_read_resource}
    with warnings.catch_warnings():  # logging/setLevel is deprecated from 2026-07-28 on, still answered
        warnings.simplefilter("ignore")
        return Server(  # type: ignore[call-arg]  # 2.x's constructor; mypy may see 1.x
            name,
            version=version,
            instructions=instructions,
            on_list_tools=on_list_tools,
            on_call_tool=on_call_tool,
            on_set_logging_level=on_set_level,
            **resources,
        )


async def run_server(server: Any, read_stream: Any, write_stream: Any) -> None:
    """Serve one connection over a pair of memory streams of SessionMessage."""
    await server.run(read_stream, write_stream, server.create_initialization_options())


__all__ = ["CallTool", "ListTools", "Observe", "Resources", "SetLevel", "build_server", "run_server"]
