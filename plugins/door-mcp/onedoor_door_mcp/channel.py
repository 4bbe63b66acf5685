"""Serve MCP over any onedoor Channel (stdio now, one channel per SLIM session later).

Each incoming message is one JSON-RPC message as text. The bridge answers what the
SDK would not answer well itself (a line that is not JSON, a JSON value that is not
JSON-RPC, a batch, an oversized message, an unknown method on 1.x) with a JSON-RPC
error, and hands everything else to the SDK's server session through anyio memory
streams of SessionMessage. All output goes through one writer, so messages never
interleave. When the peer closes the channel, in-flight calls are cancelled (their
backends stopped) and the session ends.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from onedoor.composition import ChannelClosed, MessageTooLarge
from onedoor.kernel import Kernel

from . import compat
from .options import McpOptions
from .server import build

log = logging.getLogger("onedoor.door.mcp")


def _request_id(data: dict[str, Any]) -> Any:
    rid = data.get("id")
    if isinstance(rid, bool) or not isinstance(rid, (str, int)):
        return None
    return rid


def _shape_problem(data: dict[str, Any]) -> str | None:
    """What makes ``data`` not a JSON-RPC 2.0 message MCP accepts (SDKs are lenient)."""
    if data.get("jsonrpc") != "2.0":
        return "'jsonrpc' must be \"2.0\""
    if "id" in data and _request_id(data) is None:
        return "'id' must be a string or an integer"
    if "method" in data:
        if not isinstance(data["method"], str):
            return "'method' must be a string"
        if "params" in data and not isinstance(data["params"], dict):
            return "'params' must be an object"
        return None
    if "id" not in data or ("result" in data) == ("error" in data):
        return "not a request, a notification or a response"
    return None


def decode(text: str) -> Any:
    """A SessionMessage for the SDK, an error response (str) to send back, or None to drop."""
    try:
        data = json.loads(text)
    except ValueError:
        return compat.error_response(None, compat.PARSE_ERROR, "Parse error: the message is not valid JSON")
    if isinstance(data, list):
        return compat.error_response(None, compat.INVALID_REQUEST, "Invalid Request: JSON-RPC batches are not supported")
    if not isinstance(data, dict):
        return compat.error_response(None, compat.INVALID_REQUEST, "Invalid Request: expected a JSON-RPC object")
    rid = _request_id(data)
    problem = _shape_problem(data)
    if problem is not None:
        if "id" not in data and isinstance(data.get("method"), str):
            log.warning("dropped an invalid notification: %s", problem)
            return None  # never answer a notification
        return compat.error_response(rid, compat.INVALID_REQUEST, f"Invalid Request: {problem}")
    method = data.get("method")
    is_request = "id" in data and isinstance(method, str)
    if is_request and rid is not None and compat.is_unknown_method(method):
        return compat.error_response(rid, compat.METHOD_NOT_FOUND, f"Method not found: {method}")
    try:
        return compat.parse_message(data)
    except ValueError as exc:
        if "id" not in data and isinstance(method, str):
            log.warning("dropped an invalid notification %r: %s", method, exc)
            return None  # never answer a notification
        return compat.error_response(rid, compat.INVALID_REQUEST, f"Invalid Request: {exc}")


SHUTDOWN_GRACE = 5.0  # seconds the session may take to answer what it has, once the peer closed


async def serve(channel: Any, kernel: Kernel, options: McpOptions | None = None, door: str = "mcp") -> None:
    """Serve one MCP session over ``channel`` until the peer closes it.

    When the peer closes its side (end of stdin: the MCP stdio shutdown), runs in
    progress are cancelled (their backends stopped), requests already read are still
    answered, and the session ends within :data:`SHUTDOWN_GRACE` seconds.
    """
    import anyio

    server, tool = build(kernel, options, door)
    to_server, from_peer = anyio.create_memory_object_stream(64)
    to_peer, outgoing = anyio.create_memory_object_stream(64)
    answers = to_peer.clone()  # the bridge's own error responses share the one writer
    session = anyio.CancelScope()
    finished = anyio.Event()

    pending: set[Any] = set()  # ids of requests read and not yet answered
    answered = [anyio.Event()]  # set (and replaced) whenever a pending request is answered

    reading = anyio.CancelScope()

    async def read() -> None:
        with reading:
            await receive()
            await shut_down()

    async def receive() -> None:
        async with answers:
            while True:
                try:
                    text = await channel.recv()
                except MessageTooLarge as exc:
                    await answers.send(compat.error_response(None, compat.INVALID_REQUEST, f"Invalid Request: {exc}"))
                    continue
                except ChannelClosed:
                    text = None
                if text is None:
                    break
                item = decode(text)
                if item is None:
                    continue
                if isinstance(item, str):
                    await answers.send(item)
                    continue
                rid = compat.request_id_of(item)
                if rid is not None:
                    pending.add(rid)
                try:
                    await to_server.send(item)
                except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                    return  # the session has ended

    async def shut_down() -> None:
        """The peer has gone: stop the runs, let the session answer what it has read, end."""
        tool.cancel_all()
        with anyio.move_on_after(SHUTDOWN_GRACE):
            while pending:
                answered[0] = anyio.Event()
                await answered[0].wait()
        if not pending:
            await to_server.aclose()  # the SDK ends the session on its own
            with anyio.move_on_after(SHUTDOWN_GRACE):
                await finished.wait()
        session.cancel()

    async def write() -> None:
        async with outgoing:
            async for item in outgoing:
                if isinstance(item, str):
                    text = item
                else:
                    text = compat.dump_message(item)
                    rid = compat.response_id_of(item)
                    if rid is not None and rid in pending:
                        pending.discard(rid)
                        answered[0].set()
                try:
                    await channel.send(text)
                except ChannelClosed:
                    tool.cancel_all()
                    session.cancel()
                    return

    async def run() -> None:
        try:
            with session:
                await compat.run_server(server, from_peer, to_peer)
        except Exception as exc:  # noqa: BLE001 - e.g. a late answer after the peer left
            log.debug("MCP session ended with %r", exc)
        finally:
            to_server.close()
            finished.set()
            await to_peer.aclose()  # the writer drains what is queued, then ends

    async with anyio.create_task_group() as tg:
        tg.start_soon(read)
        tg.start_soon(write)
        await run()
        reading.cancel()
