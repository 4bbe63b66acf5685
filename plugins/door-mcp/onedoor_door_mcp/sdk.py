"""The MCP Python SDK behind one interface: every difference between 1.x (1.26) and 2.x (2.3).

The rest of the door speaks plain Python: a tool definition as a dict, an
:class:`Outcome` (text, is_error), a :class:`ProtocolError`, a progress sender with
``send(message, meta)``, and JSON-RPC messages as dicts (:mod:`onedoor.jsonrpc`). This
module turns those into the SDK's objects and back; nothing else in the door imports
``mcp``.

Differences handled here:

- server construction: 1.x registers handlers in ``request_handlers`` keyed by request
  type and reads the request context from a context variable; 2.x takes ``on_*``
  handlers ``(ctx, params)`` in the constructor (``logging/setLevel`` warns there as
  deprecated since 2026-07-28);
- errors: ``McpError(ErrorData)`` (1.x) and ``MCPError(code=, message=)`` (2.x);
- progress: over streamable HTTP a notification must be tied to its request or it is
  lost (1.x stateless mode); 1.x ``send_notification`` drops a falsy request id (0), so
  the notification is built and tagged with ``related_request_id`` here; 2.x's
  request-scoped channel is chosen by passing ``related_request_id``;
- the progress token: ``ctx.meta.progressToken`` (1.x model) or a ``_meta`` dict (2.x);
- JSON-RPC message parsing and dumping (``JSONRPCMessage`` vs 2.x's
  ``jsonrpc_message_adapter``, ``exclude_none`` vs ``exclude_unset``), for the server
  side (:func:`parse_message`, :func:`message_dict`) and the client side
  (:func:`client_codec`, used by :mod:`.client`);
- a client's read timeout (a timedelta on 1.x, seconds on 2.x: :func:`read_timeout`);
- the end of a session: 2.x cancels the session's handlers, 1.x lets them run on, so
  on 1.x the door cancels the session's runs itself (:class:`SessionScope`);
- unknown request methods: 1.x answers -32602 for a method outside its request union,
  so the door answers -32601 itself (:func:`is_unknown_method`);
- the streamable HTTP session manager's constructor arguments, and the records both SDKs
  log with a traceback when a session ends while one of its requests is handed over
  (:func:`quiet_session_end`);
- asking the client (:class:`Peer`): the client's capabilities (``client_params`` on
  1.x, ``client_capabilities`` on 2.x, where a 2026-07-28 connection has no back-channel
  for server requests) and ``elicitation/create`` tied to the tool call's request
  (``ServerRequest`` wrapper on 1.x, snake_case fields on 2.x); on 1.x the session's
  pending requests are iterated over a snapshot when it ends (:class:`_PendingRequests`).
"""

from __future__ import annotations

import contextvars
import logging
import typing
import warnings
from dataclasses import dataclass
from importlib.metadata import version as _dist_version
from typing import Any, Awaitable, Callable

import mcp.types as types
from mcp.server.lowlevel import Server
from mcp.shared.message import ServerMessageMetadata, SessionMessage
from onedoor.wire import jsonrpc

SDK_VERSION = _dist_version("mcp")
MAJOR = int(SDK_VERSION.split(".")[0])
log = logging.getLogger("onedoor.door.mcp")

if MAJOR >= 2:
    from mcp.shared.exceptions import MCPError as _SdkError  # type: ignore[attr-defined]
else:
    from mcp.shared.exceptions import McpError as _SdkError


@dataclass
class Outcome:
    """What a tool call returns: the text for the client and whether it is an error;
    ``structured`` (the structured content, matching the tool's output schema) and
    ``notes`` (more text blocks after the text) when there are any."""

    text: str
    is_error: bool = False
    structured: dict[str, Any] | None = None
    notes: tuple[str, ...] = ()


class ProtocolError(Exception):
    """A JSON-RPC error answer (unknown tool and the like)."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _sdk_error(exc: ProtocolError) -> Exception:
    if MAJOR >= 2:
        return _SdkError(code=exc.code, message=exc.message)
    return _SdkError(types.ErrorData(code=exc.code, message=exc.message))


def _progress_token(meta: Any) -> Any:
    if meta is None:
        return None
    if isinstance(meta, dict):
        for key in ("progressToken", "progress_token"):
            if meta.get(key) is not None:
                return meta[key]
        return None
    return getattr(meta, "progressToken", None)


class Progress:
    """Sends ``notifications/progress`` for one request, tied to that request."""

    def __init__(self, session: Any, token: Any, request_id: Any) -> None:
        self.session = session
        self.token = token
        self.request_id = request_id
        self.count = 0

    async def send(self, message: str, meta: dict[str, Any] | None = None) -> None:
        self.count += 1
        params = types.ProgressNotificationParams(
            progressToken=self.token, progress=float(self.count), message=message, _meta=meta  # type: ignore[arg-type]
        )
        if MAJOR >= 2:
            await self.session.send_notification(
                types.ProgressNotification(params=params), related_request_id=self.request_id
            )
            return
        note = types.JSONRPCNotification(
            jsonrpc="2.0",
            method="notifications/progress",
            params=params.model_dump(by_alias=True, mode="json", exclude_none=True),
        )
        await self.session.send_message(
            SessionMessage(
                message=types.JSONRPCMessage(note),
                metadata=ServerMessageMetadata(related_request_id=self.request_id),
            )
        )


CLIENT_GONE = "onedoor.mcp.client_gone"  # ASGI scope key: an anyio.Event set on http.disconnect


class Peer:
    """The client of one ``tools/call``: can it be asked (form-mode elicitation), and asking it.

    The request goes out tied to the tool call (``related_request_id``), so over
    streamable HTTP it rides the call's own response stream, and over stdio and SLIM the
    session's one channel.
    """

    def __init__(self, session: Any, request_id: Any, request: Any = None) -> None:
        self.session = session
        self.request_id = request_id
        self.request = request  # the HTTP request that carried the call (Starlette), if any

    @property
    def gone(self) -> Any:
        """An event set when the HTTP client of this call disconnects (None off HTTP);
        the door's ASGI app puts it in the request's scope (:data:`CLIENT_GONE`)."""
        scope = getattr(self.request, "scope", None)
        return scope.get(CLIENT_GONE) if isinstance(scope, dict) else None

    def capabilities(self) -> Any:
        """The capabilities the client declared (None if it declared none, e.g. 1.x stateless HTTP)."""
        if MAJOR >= 2:
            return getattr(self.session, "client_capabilities", None)
        params = getattr(self.session, "client_params", None)
        return getattr(params, "capabilities", None)

    @property
    def can_elicit(self) -> bool:
        """The client declared form-mode elicitation and this connection can carry a server request."""
        return self.why_not_asked is None

    @property
    def why_not_asked(self) -> str | None:
        """Why this client cannot be asked (None when it can), in words for the tool result."""
        caps = self.capabilities()
        if caps is None:  # no initialize on this connection: stateless HTTP keeps no session
            return "a stateless HTTP connection keeps no session, so the client's capabilities are unknown"
        elicitation = getattr(caps, "elicitation", None)
        if elicitation is None:
            return "the client did not declare the elicitation capability"
        # ``elicitation: {}`` (before 2025-11-25) means form mode; ``{url: {}}`` alone does not.
        if getattr(elicitation, "form", None) is None and getattr(elicitation, "url", None) is not None:
            return "the client declared URL-mode elicitation only, and the questions are forms"
        if MAJOR >= 2:
            version = getattr(self.session, "protocol_version", "")
            if version in _modern_versions():  # no server-initiated requests (multi-round-trip instead)
                return f"the connection speaks MCP {version}, where the server cannot send the client a request"
            if not getattr(self.session, "can_send_request", True):
                return "the connection cannot carry a request from the server to the client"
        return None

    @property
    def client_name(self) -> str:
        params = getattr(self.session, "client_params", None)
        info = getattr(params, "clientInfo", None) or getattr(params, "client_info", None)
        return str(getattr(info, "name", "") or "")

    async def elicit(self, message: str, schema: dict[str, Any], meta: dict[str, Any] | None = None) -> tuple[str, Any]:
        """Send ``elicitation/create`` (form mode) and return the client's ``(action, content)``.

        Raises what the SDK raises: an error response, a result its model refuses, a
        closed connection.
        """
        if MAJOR >= 2:
            params = types.ElicitRequestFormParams(message=message, requested_schema=schema, _meta=meta)  # type: ignore[call-arg]
            request: Any = types.ElicitRequest(params=params)
        else:
            params = types.ElicitRequestFormParams(message=message, requestedSchema=schema, _meta=meta)  # type: ignore[arg-type]
            request = types.ServerRequest(types.ElicitRequest(params=params))
            _snapshot_pending(self.session)
        result = await self.session.send_request(
            request, types.ElicitResult, metadata=ServerMessageMetadata(related_request_id=self.request_id)
        )
        return result.action, result.content


class _PendingRequests(dict):  # type: ignore[type-arg]
    """A 1.x session's pending server requests, iterated over a snapshot.

    When a 1.x session's input ends, it fails each pending request while iterating this
    dict, and a request whose task wakes meanwhile (a cancelled elicitation) removes its
    entry: "dictionary changed size during iteration" crashes the session with a traceback.
    """

    def items(self) -> Any:
        return list(super().items())


def _snapshot_pending(session: Any) -> None:
    pending = getattr(session, "_response_streams", None)
    if type(pending) is dict:  # swapped before any await: no entry can be lost
        session._response_streams = _PendingRequests(pending)


def _modern_versions() -> tuple[str, ...]:
    try:
        from mcp.shared.inbound import MODERN_PROTOCOL_VERSIONS  # type: ignore[import-not-found]  # 2.x (from mcp-types)
    except ImportError:  # 1.x, or a 2.x without the 2026-07-28 era
        return ()
    return tuple(MODERN_PROTOCOL_VERSIONS)


ListTools = Callable[[], list[dict[str, Any]]]
CallTool = Callable[..., Awaitable[Outcome]]  # (name, arguments, progress[, peer=Peer])
SetLevel = Callable[[str], None]


def _tool(spec: dict[str, Any]) -> Any:
    return types.Tool(
        name=spec["name"],
        title=spec.get("title"),
        description=spec.get("description"),
        inputSchema=spec["inputSchema"],
        outputSchema=spec.get("outputSchema"),
        annotations=types.ToolAnnotations(**spec["annotations"]) if spec.get("annotations") else None,
    )


def _result(outcome: Outcome) -> Any:
    blocks = [types.TextContent(type="text", text=text) for text in (outcome.text, *outcome.notes)]
    return types.CallToolResult(
        content=blocks, structuredContent=outcome.structured, isError=outcome.is_error  # type: ignore[arg-type]
    )


async def _call(call_tool: CallTool, name: str, arguments: Any, progress: Progress | None, peer: Peer | None) -> Any:
    """The tool's result; a ProtocolError as the SDK's error; anything unexpected as an
    internal error logged in one line (the SDKs would log it with a traceback)."""
    try:
        outcome = await (call_tool(name, arguments, progress) if peer is None else call_tool(name, arguments, progress, peer=peer))
        return _result(outcome)
    except ProtocolError as exc:
        raise _sdk_error(exc) from None
    except Exception as exc:  # answered, not crashed (the traceback at DEBUG only)
        detail = f"{type(exc).__name__}: {exc}"
        log.warning("mcp: tools/call %r failed: %s", name, detail, exc_info=log.isEnabledFor(logging.DEBUG))
        raise _sdk_error(ProtocolError(jsonrpc.INTERNAL_ERROR, f"Internal error: {type(exc).__name__}")) from None


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
        return types.ServerResult(types.ListToolsResult(tools=[_tool(t) for t in list_tools()]))

    async def on_call_tool(req: Any) -> Any:
        ctx = server.request_context
        token = _progress_token(ctx.meta)
        progress = Progress(ctx.session, token, ctx.request_id) if token is not None else None
        peer = Peer(ctx.session, ctx.request_id, getattr(ctx, "request", None)) if with_peer else None
        return types.ServerResult(await _call(call_tool, req.params.name, req.params.arguments, progress, peer))

    async def on_set_level(req: Any) -> Any:
        set_level(str(req.params.level))
        return types.ServerResult(types.EmptyResult())

    server.request_handlers[types.ListToolsRequest] = on_list_tools
    server.request_handlers[types.CallToolRequest] = on_call_tool
    server.request_handlers[types.SetLevelRequest] = on_set_level
    _watch_sessions(server)
    return server


def _build_server_2(
    name: str, version: str, instructions: str, list_tools: ListTools, call_tool: CallTool, set_level: SetLevel,
    with_peer: bool,
) -> Any:
    async def on_list_tools(ctx: Any, params: Any) -> Any:
        return types.ListToolsResult(tools=[_tool(t) for t in list_tools()])

    async def on_call_tool(ctx: Any, params: Any) -> Any:
        token = _progress_token(ctx.meta)
        progress = Progress(ctx.session, token, ctx.request_id) if token is not None else None
        peer = Peer(ctx.session, ctx.request_id, getattr(ctx, "request", None)) if with_peer else None
        return await _call(call_tool, params.name, params.arguments, progress, peer)

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


# -- the end of a session cancels its runs (1.x lets handlers run on) ----------------------


class SessionScope:
    """The runs of one MCP session: cancelled when the session's input ends.

    SDK 2.x cancels a session's handlers itself when the session ends. SDK 1.x stops
    reading but lets handlers run to completion (a DELETE of an HTTP session, the end of
    a channel), so on 1.x each ``server.run`` gets a scope in a context variable and its
    read stream is watched.
    """

    def __init__(self) -> None:
        self.cancels: set[Callable[[], None]] = set()
        self.ended = False

    def add(self, cancel: Callable[[], None]) -> None:
        if self.ended:
            cancel()
        else:
            self.cancels.add(cancel)

    def discard(self, cancel: Callable[[], None]) -> None:
        self.cancels.discard(cancel)

    def end(self) -> None:
        if not self.ended:
            self.ended = True
            for cancel in list(self.cancels):
                cancel()


_SCOPE: contextvars.ContextVar[SessionScope | None] = contextvars.ContextVar("onedoor_mcp_session", default=None)


def current_session() -> SessionScope | None:
    return _SCOPE.get()


class _StreamWrapper:
    """Closing and context management delegated to the wrapped anyio stream."""

    _inner: Any

    async def aclose(self) -> None:
        await self._inner.aclose()

    def close(self) -> None:
        self._inner.close()

    async def __aenter__(self) -> Any:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()


class _WatchedReceive(_StreamWrapper):
    """A receive stream that ends the session scope when it ends."""

    def __init__(self, inner: Any, scope: SessionScope) -> None:
        self._inner = inner
        self._scope = scope

    async def receive(self) -> Any:
        import anyio

        try:
            return await self._inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._scope.end()
            raise

    def __aiter__(self) -> Any:
        return self

    async def __anext__(self) -> Any:
        import anyio

        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None


class _QuietSend(_StreamWrapper):
    """A send stream that drops what is sent after the session closed it (a late answer)."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    async def send(self, item: Any) -> None:
        import anyio

        try:
            await self._inner.send(item)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass


def _watch_sessions(server: Any) -> None:
    plain_run = server.run

    async def run(read_stream: Any, write_stream: Any, *args: Any, **kwargs: Any) -> Any:
        scope = SessionScope()
        _SCOPE.set(scope)  # this task's context: the session's handler tasks inherit it
        try:
            return await plain_run(_WatchedReceive(read_stream, scope), _QuietSend(write_stream), *args, **kwargs)
        finally:
            scope.end()

    server.run = run


# -- JSON-RPC messages --------------------------------------------------------------------


def parse_message(data: dict[str, Any]) -> SessionMessage:
    """A SessionMessage from a JSON-RPC message already checked by :mod:`onedoor.jsonrpc`;
    ValueError if the SDK's own model refuses it (e.g. an ``error`` that is not an object)."""
    try:
        if MAJOR >= 2:
            message = types.jsonrpc_message_adapter.validate_python(data, by_name=False)  # type: ignore[attr-defined]
        else:
            message = types.JSONRPCMessage.model_validate(data)
    except Exception:  # noqa: BLE001 - pydantic.ValidationError, or anything the model raises
        raise ValueError("not a JSON-RPC 2.0 request, notification or response MCP accepts") from None
    return SessionMessage(message)


def _root(item: SessionMessage) -> Any:
    message = item.message
    return getattr(message, "root", message)  # 1.x wraps messages in a RootModel


def request_id_of(item: SessionMessage) -> Any:
    """The id of a request (None for notifications and responses)."""
    root = _root(item)
    return root.id if isinstance(root, types.JSONRPCRequest) else None


def response_id_of(item: SessionMessage) -> Any:
    """The id a response or error answers (None for anything else)."""
    root = _root(item)
    return root.id if isinstance(root, (types.JSONRPCResponse, types.JSONRPCError)) else None


def _as_dict(message: Any) -> dict[str, Any]:
    if MAJOR >= 2:
        return message.model_dump(by_alias=True, mode="json", exclude_unset=True)
    return message.model_dump(by_alias=True, mode="json", exclude_none=True)


def message_dict(item: SessionMessage) -> dict[str, Any]:
    """An outgoing SessionMessage as a plain JSON-RPC dict (written with ``jsonrpc.dumps``)."""
    return _as_dict(item.message)


def dump_message(item: SessionMessage) -> str:
    """An outgoing SessionMessage as one line of JSON that always encodes to UTF-8."""
    return jsonrpc.dumps(message_dict(item))


def _models_by_method(union: Any) -> dict[str, Any]:
    """``{method: model}`` for the members of a 1.x RootModel union (ClientRequest, …)."""
    models: dict[str, Any] = {}
    for cls in typing.get_args(union.model_fields["root"].annotation):
        field = getattr(cls, "model_fields", {}).get("method")
        if field is not None:
            models.update((a, cls) for a in typing.get_args(field.annotation) if isinstance(a, str))
    return models


# 2.x answers unknown methods (-32601) and invalid params (-32602) itself, quietly. 1.x
# answers an unknown method with -32602 and logs every refusal with the whole pydantic
# report (dozens of lines): on 1.x the door checks both first.
_REQUESTS = _models_by_method(types.ClientRequest) if MAJOR < 2 else None
_NOTIFICATIONS = _models_by_method(types.ClientNotification) if MAJOR < 2 else None


def is_unknown_method(method: str) -> bool:
    """True when this SDK would not answer the request method with -32601 itself."""
    return _REQUESTS is not None and method not in _REQUESTS


def params_problem(data: dict[str, Any]) -> str | None:
    """Why this SDK would refuse a request's or notification's params, in one line (1.x;
    None on 2.x, which answers such requests quietly itself). An unknown notification
    method is a problem too: 1.x logs it at length."""
    table = _REQUESTS if "id" in data else _NOTIFICATIONS
    if table is None:
        return None
    model = table.get(data["method"])
    if model is None:
        return None if "id" in data else f"unknown notification {data['method']!r}"
    try:
        model.model_validate({key: data[key] for key in ("method", "params") if key in data})
    except Exception as exc:  # noqa: BLE001 - pydantic.ValidationError
        return _first_error(exc)
    return None


def _first_error(exc: Exception) -> str:
    errors = getattr(exc, "errors", None)
    if callable(errors):
        try:
            first = errors()[0]
            where = ".".join(str(part) for part in first.get("loc", ()))
            return f"{where}: {first.get('msg')}" if where else str(first.get("msg"))
        except Exception:  # noqa: BLE001 - fall back on the text
            pass
    text = str(exc)
    return text.splitlines()[0] if text else type(exc).__name__


# -- the client side ----------------------------------------------------------------------


def client_codec() -> tuple[Callable[[dict[str, Any]], Any], Callable[[Any], dict[str, Any]]]:
    """``(parse, dump)`` for a client: a checked JSON-RPC dict to the SDK's message
    (ValueError if the SDK refuses it), and the SDK's message back to a dict."""

    def parse(data: dict[str, Any]) -> Any:
        return parse_message(data).message

    return parse, _as_dict


def read_timeout(seconds: float) -> Any:
    """A ``ClientSession`` read timeout in the form this SDK takes (timedelta on 1.x)."""
    if MAJOR >= 2:
        return seconds
    from datetime import timedelta

    return timedelta(seconds=seconds)


# -- streamable HTTP ----------------------------------------------------------------------


def is_session_end(exc: BaseException) -> bool:
    """``exc`` says the session's streams were closed under a request: the session ended
    (a DELETE, the server stopping) while the request was handed to it."""
    import anyio

    closed = (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream)
    if isinstance(exc, BaseExceptionGroup):
        return all(is_session_end(inner) for inner in exc.exceptions)
    return isinstance(exc, closed)


# What the SDKs log, as errors, of a session that ends under a request; nothing is wrong.
_STREAMABLE_LOGGER = "mcp.server.streamable_http"  # a traceback: the streams were closed (both SDKs)
_SERVER_LOGGER = "mcp.server.lowlevel.server"  # 1.x: a late answer to a request the server gave up
_LATE_ANSWER = "Received response with an unknown request ID"


class _SessionEndFilter(logging.Filter):
    """Turns the SDKs' error records of a session that ended under a request into one
    debug line on the door's logger; every other record passes."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if record.name == _STREAMABLE_LOGGER and exc is not None and is_session_end(exc):
            log.debug("mcp: %s (%s: the session ended)", record.getMessage(), type(exc).__name__)
            return False
        if record.name == _SERVER_LOGGER and _LATE_ANSWER in record.getMessage():
            log.debug("mcp: a late answer to a request the server no longer waits for was dropped")
            return False
        return True


_QUIET = _SessionEndFilter()


def quiet_session_end() -> None:
    """Install :class:`_SessionEndFilter` on the SDK's loggers (once; idempotent)."""
    for name in (_STREAMABLE_LOGGER, _SERVER_LOGGER):
        logger = logging.getLogger(name)
        if _QUIET not in logger.filters:
            logger.addFilter(_QUIET)



def session_manager(
    server: Any, *, stateless: bool, hosts: list[str], origins: list[str], protect: bool, max_body: int
) -> Any:
    """The SDK's streamable HTTP session manager (SSE responses, so progress flows)."""
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
    from mcp.server.transport_security import TransportSecuritySettings

    quiet_session_end()
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=protect, allowed_hosts=hosts, allowed_origins=origins
    )
    kwargs: dict[str, Any] = {"app": server, "json_response": False, "stateless": stateless, "security_settings": security}
    if MAJOR >= 2:
        kwargs["max_request_body_size"] = max_body
    return StreamableHTTPSessionManager(**kwargs)
