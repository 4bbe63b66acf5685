"""Bridge a onedoor :class:`~onedoor.composition.Channel` to the ``acp`` library.

``acp.connection.Connection`` speaks to a message-level transport (``send`` /
``receive`` of decoded dicts). :class:`ChannelTransport` is that transport over any
channel (stdio lines today, SLIM sessions later). It also answers bad input itself, so
the connection only ever sees well-formed JSON-RPC:

* a line that is not JSON            -> -32700 Parse error (id null)
* JSON that is not a JSON-RPC message -> -32600 Invalid request (with its id if usable)
* a message over the transport limit  -> -32600 Invalid request (id null)

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
import json
import logging
from typing import Any, Awaitable, Callable

from onedoor.composition import ChannelClosed, MessageTooLarge

log = logging.getLogger("onedoor.door.acp")

REQUEST_ID: contextvars.ContextVar[Any] = contextvars.ContextVar("onedoor_acp_request_id", default=None)

_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def _error(id_: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": id_, "error": error}


def check_message(msg: Any) -> str | None:
    """Why ``msg`` is not a JSON-RPC 2.0 request, notification or response (None if it is)."""
    if isinstance(msg, list):
        return "batches are not supported by ACP; send one message per line"
    if not isinstance(msg, dict):
        return "a JSON-RPC message must be a JSON object"
    if msg.get("jsonrpc") != "2.0":
        return 'the "jsonrpc" member must be "2.0"'
    if "id" in msg:
        id_ = msg["id"]
        if isinstance(id_, bool) or not isinstance(id_, (str, int, type(None))):
            return "the id must be a string, a whole number or null"
    if "method" in msg:
        if not isinstance(msg["method"], str) or not msg["method"]:
            return 'the "method" member must be a non-empty string'
        params = msg.get("params")
        if params is not None and not isinstance(params, (dict, list)):
            return 'the "params" member must be an object'
        return None
    if "id" in msg and ("result" in msg or "error" in msg):
        return None
    return 'a message needs a "method" (request or notification) or an "id" with "result" or "error"'


class ChannelTransport:
    """An ``acp`` message transport over a onedoor channel."""

    def __init__(self, channel: Any, notifications: frozenset[str] = frozenset({"session/cancel"})) -> None:
        self.channel = channel
        self.notifications = notifications  # the others are dropped here (JSON-RPC: no reply)
        self.on_cancel_request: Callable[[Any], None] | None = None  # "$/cancel_request" goes here
        self.closed = False
        self._after: dict[Any, list[Callable[[], Awaitable[None]]]] = {}

    async def receive(self) -> dict[str, Any] | None:
        while True:
            try:
                text = await self.channel.recv()
            except MessageTooLarge as exc:
                await self._send_quietly(_error(None, -32600, "Invalid request", {"details": str(exc)}))
                continue
            if text is None:
                self.closed = True
                return None
            try:
                msg = json.loads(text)
            except (ValueError, RecursionError) as exc:
                await self._send_quietly(_error(None, -32700, "Parse error", {"details": f"not JSON: {exc}"}))
                continue
            problem = check_message(msg)
            if problem is not None:
                id_ = msg.get("id") if isinstance(msg, dict) else None
                if isinstance(id_, bool) or not isinstance(id_, (str, int)):
                    id_ = None
                await self._send_quietly(_error(id_, -32600, "Invalid request", {"details": problem}))
                continue
            if "method" in msg:
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
                        await self._send_quietly(
                            _error(msg["id"], -32602, "Invalid params", {"details": "ACP params are an object"})
                        )
                    continue
                REQUEST_ID.set(msg.get("id"))
            return msg

    async def send(self, message: dict[str, Any]) -> None:
        try:
            await self.channel.send(_dumps(message))
        except ChannelClosed as exc:
            self.closed = True
            raise ConnectionError(str(exc)) from None
        if self._after and "method" not in message:
            callbacks = self._after.pop(message.get("id"), None)
            for callback in callbacks or ():
                try:
                    await callback()
                except Exception:  # noqa: BLE001 - a follow-up must not break the reply path
                    log.exception("follow-up after reply failed")

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
            await self.channel.send(_dumps(payload))
        except ChannelClosed:
            self.closed = True
