"""Bridge a onedoor :class:`~onedoor.composition.Channel` to the ``acp`` library.

``acp.connection.Connection`` speaks to a message-level transport (``send`` /
``receive`` of decoded dicts). :class:`ChannelTransport` is that transport over any
channel (stdio lines, SLIM sessions, an in-memory pair in tests). Every incoming message
goes through :mod:`onedoor.wire.jsonrpc` (the wire policy, then the shape rules, ACP's
flavour: a null id and positional params are legal JSON-RPC), and what it refuses is
answered here, so the connection only ever sees well-formed JSON-RPC:

* bytes or text that are not JSON (or too deep, a lone surrogate…) -> -32700, id null
* JSON that is not one JSON-RPC message -> -32600 (with its id if usable)
* a message over the transport limit     -> -32600, id null
* positional (array) params              -> -32602 (ACP params are objects)

Each refusal is logged once, in one line. Every outgoing message is written with
:func:`onedoor.wire.jsonrpc.dumps`, which never fails on text.

A response (to the door's own requests: permission, elicitation) whose ``error`` is not
a JSON-RPC error object is given one (-32603), so the waiting request fails cleanly.

Notifications other than ``session/cancel`` are dropped here (JSON-RPC gives them no
reply), except ``$/cancel_request`` (the TypeScript SDK's request cancellation), which
goes to :attr:`ChannelTransport.on_cancel_request`.

Replies that must follow a response (ACP: ``available_commands_update`` after the
``session/new`` reply) are registered with :meth:`after_reply`; the id of the request
being handled is known through :data:`REQUEST_ID`, a context variable set when the
request is received (each request's handler task copies it).
"""

from __future__ import annotations

import contextvars
import logging
from typing import Any, Awaitable, Callable

from onedoor import ChannelClosed, MessageTooLarge
from onedoor.wire import jsonrpc

log = logging.getLogger("onedoor.door.acp")

REQUEST_ID: contextvars.ContextVar[Any] = contextvars.ContextVar("onedoor_acp_request_id", default=None)
# the W3C trace context of the message being handled (its params' ``_meta``), for kernel.run
REQUEST_META: contextvars.ContextVar[dict[str, str] | None] = contextvars.ContextVar("onedoor_acp_request_meta", default=None)


def parse(text: str) -> jsonrpc.Incoming:
    """One incoming line under ACP's JSON-RPC rules (null ids and array params pass the shape check)."""
    return jsonrpc.parse_message(text, null_id=True, array_params=True)


class ChannelTransport:
    """An ``acp`` message transport over a onedoor channel."""

    def __init__(self, channel: Any, notifications: frozenset[str] = frozenset({"session/cancel"})) -> None:
        self.channel = channel
        self.peer = getattr(channel, "peer", "peer")
        self.notifications = notifications  # the others are dropped here (JSON-RPC: no reply)
        self.on_cancel_request: Callable[[Any], None] | None = None  # "$/cancel_request" goes here
        self.closed = False
        self._after: dict[Any, list[Callable[[], Awaitable[None]]]] = {}

    def _refused(self, problem: str) -> None:
        log.warning("acp: refused a message from %s: %.300s", self.peer, problem)

    async def receive(self) -> dict[str, Any] | None:
        while True:
            try:
                text = await self.channel.recv()
            except MessageTooLarge as exc:
                self._refused(str(exc))
                await self._send_quietly(jsonrpc.error_response(None, jsonrpc.INVALID_REQUEST, str(exc)))
                continue
            except ChannelClosed:
                text = None
            except Exception as exc:  # noqa: BLE001 - a broken transport ends the connection, quietly
                log.warning("acp: the channel from %s failed: %s", self.peer, exc)
                text = None
            if text is None:
                self.closed = True
                return None
            incoming = parse(text)
            if incoming.reply is not None:
                self._refused(incoming.problem or "")
                await self._send_quietly(incoming.reply)
                continue
            msg = incoming.message
            if msg is None:
                log.info("acp: %s", incoming.problem)
                continue
            if "method" not in msg:  # a response to one of the door's requests
                _fix_error(msg, self._refused)
                return msg
            if "id" not in msg and msg["method"] == "$/cancel_request":
                params = msg.get("params")
                if self.on_cancel_request is not None and isinstance(params, dict):
                    self.on_cancel_request(params.get("requestId"))
                continue
            if "id" not in msg and msg["method"] not in self.notifications:
                log.debug("ignoring notification %r", msg["method"])
                continue
            if msg.get("params") is None:
                msg["params"] = {}
            elif isinstance(msg["params"], list):
                if "id" in msg:
                    self._refused(f"{msg['method']}: positional params")
                    await self._send_quietly(
                        jsonrpc.error_response(msg["id"], jsonrpc.INVALID_PARAMS, "ACP params are an object")
                    )
                continue
            REQUEST_ID.set(msg.get("id"))
            return msg

    async def send(self, message: dict[str, Any]) -> None:
        try:
            await self.channel.send(jsonrpc.dumps(message))
        except ChannelClosed as exc:
            self.closed = True
            raise ConnectionError(str(exc)) from None
        if self._after and "method" not in message:
            callbacks = self._after.pop(message.get("id"), None)
            for callback in callbacks or ():
                try:
                    await callback()
                except Exception:
                    debug = log.isEnabledFor(logging.DEBUG)
                    log.warning("acp: a follow-up after the reply to %r failed", message.get("id"), exc_info=debug)

    async def close(self) -> None:
        self.closed = True

    def after_reply(self, callback: Callable[[], Awaitable[None]]) -> bool:
        """Run ``callback`` right after the reply to the request being handled is sent."""
        id_ = REQUEST_ID.get()
        if id_ is None:
            return False
        self._after.setdefault(id_, []).append(callback)
        return True

    async def _send_quietly(self, payload: dict[str, Any]) -> None:
        try:
            await self.channel.send(jsonrpc.dumps(payload))
        except ChannelClosed:
            self.closed = True


def _fix_error(response: dict[str, Any], refused: Callable[[str], None]) -> None:
    """A response whose ``error`` is not ``{"code": int, "message": str}`` gets a well-formed
    one (-32603) in its place: ``acp``'s connection would die on it, and the request that
    waits for it fails cleanly instead."""
    error = response.get("error")
    if "error" not in response or (
        isinstance(error, dict) and type(error.get("code")) is int and isinstance(error.get("message"), str)
    ):
        return
    refused(f"malformed error in the response to {response.get('id')!r}: {error!r}")
    response["error"] = jsonrpc.error_object(jsonrpc.INTERNAL_ERROR, "the client answered with a malformed error")


def guarded(
    router: Callable[[str, Any, bool], Awaitable[Any]], hooks: Any = None, transport: str = "",
) -> Callable[[str, Any, bool], Awaitable[Any]]:
    """The ``acp`` router, with whatever it raises on odd input answered in one logged line,
    each message served inside :func:`onedoor.observe.observed_request` (door ``acp``, the
    message's method, the trace context of its ``_meta``; also in :data:`REQUEST_META`).

    ``acp``'s connection answers ``RequestError`` and a pydantic ``ValidationError``
    (-32602) itself, but logs anything else with a traceback, and a failing notification
    always (there is no reply to carry it). Here a bad notification is logged in one
    line and dropped, and an unexpected failure becomes -32603 (traceback at DEBUG only).
    """
    from acp import RequestError
    from onedoor.observe import observed_request, trace_meta
    from pydantic import ValidationError

    async def handle(method: str, params: Any, is_notification: bool) -> Any:
        meta = trace_meta(params.get("_meta")) if isinstance(params, dict) else {}
        REQUEST_META.set(meta)  # each message is handled in a task of its own
        async with observed_request(hooks, door="acp", transport=transport, method=method, meta=meta):
            return await _handle(method, params, is_notification)

    async def _handle(method: str, params: Any, is_notification: bool) -> Any:
        try:
            return await router(method, params, is_notification)
        except RequestError:
            if is_notification:
                return None
            raise
        except ValidationError as exc:
            if is_notification:
                log.warning("acp: dropped notification %s: %s", method, _one_line(exc))
                return None
            raise _invalid_params(method, exc) from None
        except Exception as exc:
            log.warning("acp: %s failed: %s", method, _one_line(exc), exc_info=log.isEnabledFor(logging.DEBUG))
            if is_notification:
                return None
            raise RequestError.internal_error({"details": _one_line(exc)}) from None

    return handle


def _invalid_params(method: str, exc: Any) -> Exception:
    """-32602 naming the first thing wrong (the errors in ``data``, without the input they
    quote: a client's megabytes are not sent back)."""
    from acp import RequestError

    errors = exc.errors(include_url=False, include_context=False, include_input=False)
    first = errors[0] if errors else {}
    where = ".".join(str(p) for p in first.get("loc", ()))
    detail = f"{where}: {first.get('msg', '')}" if where else str(first.get("msg", ""))
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return RequestError(jsonrpc.INVALID_PARAMS, f"Invalid params: {method}: {detail[:300]}{more}", {"errors": errors[:20]})


def _one_line(exc: BaseException) -> str:
    text = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
