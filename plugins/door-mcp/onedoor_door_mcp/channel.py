"""Serve MCP over any onedoor Channel (stdio, one channel per SLIM session, in memory in tests).

Each incoming message is one JSON-RPC message as text. :mod:`onedoor.jsonrpc` reads it
first (the wire policy, then the shape rules, MCP's flavour: no null id, params an
object); what it refuses is answered here with -32700 or -32600 (a malformed
notification is dropped: JSON-RPC never answers one), and so is what the SDK would not
answer well itself: an oversized message, an unknown method on SDK 1.x, a message the
SDK's model refuses. A response to a request the server never sent is dropped. Each
refusal is logged once, in one line. Everything else goes to the SDK's server session
through anyio memory streams of SessionMessage.

While the server waits for the peer's answer to a request of its own (an elicitation:
the agent asked a question), an answer the SDK cannot read, or a message too broken to
tell, fails that request with an error for the SDK: the question is answered no, and
the tool call completes, instead of waiting for an answer that will never come.

All output goes through one writer and :func:`onedoor.jsonrpc.dumps`, so messages never
interleave and never fail to encode (a lone surrogate goes out as a ``\\u`` escape).
When the peer closes the channel, in-flight calls are cancelled (their backends
stopped) and the session ends.
"""

from __future__ import annotations

import logging
from typing import Any

from onedoor import ChannelClosed, Kernel, MessageTooLarge
from onedoor.wire import jsonrpc

from . import sdk
from .options import McpOptions
from .server import build

log = logging.getLogger("onedoor.door.mcp")

SHUTDOWN_GRACE = 5.0  # seconds the session may take to answer what it has, once the peer closed


def decode(text: str) -> tuple[Any, str | None]:
    """What to do with one incoming message, and why it was refused (None if it was not).

    The first item is a SessionMessage for the SDK, an error response (a dict) to send
    back, or None to drop (a notification JSON-RPC never answers).
    """
    incoming = jsonrpc.parse_message(text)  # MCP: the id is never null, params are an object
    if incoming.message is None:
        return incoming.reply, incoming.problem
    data = incoming.message
    method = data.get("method")
    if method is not None:
        if "id" in data and sdk.is_unknown_method(method):
            name = method if len(method) <= 100 else method[:99] + "…"
            return jsonrpc.error_response(data["id"], jsonrpc.METHOD_NOT_FOUND, name), f"unknown method {name!r}"
        problem = sdk.params_problem(data)
        if problem is not None:
            if "id" not in data:
                return None, f"dropped notification {method!r}: {problem}"
            return jsonrpc.error_response(data["id"], jsonrpc.INVALID_PARAMS, f"{method}: {problem}"), problem
    try:
        return sdk.parse_message(data), None
    except ValueError as exc:
        if method is not None and "id" not in data:
            return None, f"dropped notification {method!r}: {exc}"
        if method is None:
            # A response the SDK cannot read (e.g. a non-object result to elicitation/create):
            # the request it answers fails with an error instead of waiting for ever.
            problem = f"unreadable response to request {data['id']!r}: {exc}"
            error = jsonrpc.error_response(data["id"], jsonrpc.INVALID_REQUEST, f"the client's response could not be read: {exc}")
            return sdk.parse_message(error), problem
        return jsonrpc.error_response(data.get("id"), jsonrpc.INVALID_REQUEST, str(exc)), str(exc)


async def serve(
    channel: Any, kernel: Kernel, options: McpOptions | None = None, door: str = "mcp", transport: str = ""
) -> None:
    """Serve one MCP session over ``channel`` until the peer closes it.

    When the peer closes its side (end of stdin: the MCP stdio shutdown), runs in
    progress are cancelled (their backends stopped), requests already read are still
    answered, and the session ends within :data:`SHUTDOWN_GRACE` seconds.
    """
    await ChannelSession(channel, kernel, options, door, transport).serve()


class ChannelSession:
    """One MCP session over one channel: a reader, a writer and the SDK's server between them."""

    def __init__(self, channel: Any, kernel: Kernel, options: McpOptions | None, door: str, transport: str = "") -> None:
        import anyio

        self.channel = channel
        self.peer = getattr(channel, "peer", "peer")
        self.server, self.tool = build(kernel, options, door, transport or "channel")
        self.to_server, self.from_peer = anyio.create_memory_object_stream[Any](64)  # SessionMessages
        self.to_peer, self.outgoing = anyio.create_memory_object_stream[Any](64)  # SessionMessages and error dicts
        self.answers = self.to_peer.clone()  # the bridge's own error responses share the one writer
        self.session = anyio.CancelScope()
        self.reading = anyio.CancelScope()
        self.finished = anyio.Event()
        self.pending: set[Any] = set()  # ids of requests read and not yet answered
        self.answered = anyio.Event()  # set (and replaced) whenever a pending request is answered
        self.asked: set[Any] = set()  # ids of requests the server sent the peer, not yet answered
        self.closing = False

    async def serve(self) -> None:
        import anyio

        async with anyio.create_task_group() as tg:
            tg.start_soon(self.read)
            tg.start_soon(self.write)
            await self.run()
            self.reading.cancel()

    def refused(self, problem: str) -> None:
        log.warning("mcp: refused a message from %s: %.300s", self.peer, problem)

    # -- from the peer --------------------------------------------------------------------

    async def read(self) -> None:
        with self.reading:
            await self.receive()
            await self.shut_down()

    async def next_text(self) -> str | None:
        """The next message from the peer (None at its end); an oversized one is answered here."""
        while True:
            try:
                return await self.channel.recv()
            except MessageTooLarge as exc:
                self.refused(str(exc))
                await self.answers.send(jsonrpc.error_response(None, jsonrpc.INVALID_REQUEST, str(exc)))
                await self.fail_asked(list(self.asked), str(exc))
            except ChannelClosed:
                return None
            except Exception as exc:  # noqa: BLE001 - a broken transport ends the session, quietly
                log.warning("mcp: the channel from %s failed: %s", self.peer, exc)
                return None

    async def receive(self) -> None:
        import anyio

        async with self.answers:
            while (text := await self.next_text()) is not None:
                item, problem = decode(text)
                if problem is not None:
                    self.refused(problem)
                if item is None:
                    continue
                if isinstance(item, dict):
                    await self.answers.send(item)
                    if self.asked:
                        await self.fail_asked(self.left_unanswered(text, item), problem or "unreadable")
                    continue
                if not self.expected(item):
                    continue
                try:
                    await self.to_server.send(item)
                except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                    return  # the session has ended

    def left_unanswered(self, text: str, reply: dict[str, Any]) -> list[Any]:
        """The server's open requests that a refused message leaves without an answer: the
        one it answered, if it was a response; every one, if it could not be read far
        enough to tell (no id); none, if it was a request."""
        from onedoor import WireError, decode_json

        refused_id = reply.get("id")
        if refused_id is None:
            return list(self.asked)
        try:
            value = decode_json(text)
        except WireError:
            return list(self.asked)
        is_response = isinstance(value, dict) and "method" not in value
        return [refused_id] if is_response and refused_id in self.asked else []

    async def fail_asked(self, failing: list[Any], why: str) -> None:
        """The server's requests ``failing`` (an elicitation) get an error in place of the
        peer's unreadable answer, so the agent's question is answered no instead of waiting
        for ever. A later answer to one is dropped as an answer to a request never sent."""
        import anyio

        for asked_id in failing:
            self.asked.discard(asked_id)
            error = jsonrpc.error_response(asked_id, jsonrpc.INVALID_REQUEST, f"the client's answer could not be read: {why}")
            log.info("mcp: request %r to %s fails: its answer could not be read", asked_id, self.peer)
            try:
                await self.to_server.send(sdk.parse_message(error))
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                return

    def expected(self, item: Any) -> bool:
        """Note a request's id; False for a response to a request the server never sent."""
        answered_id = sdk.response_id_of(item)
        if answered_id is not None:
            if answered_id not in self.asked:
                log.info("mcp: dropped a response from %s to a request never sent (id %r)", self.peer, answered_id)
                return False
            self.asked.discard(answered_id)
        request_id = sdk.request_id_of(item)
        if request_id is not None:
            self.pending.add(request_id)
        return True

    async def shut_down(self) -> None:
        """The peer has gone: stop the runs, let the session answer what it has read, end."""
        import anyio

        self.closing = True
        self.tool.cancel_all()
        with anyio.move_on_after(SHUTDOWN_GRACE):
            while self.pending:
                self.answered = anyio.Event()
                await self.answered.wait()
        if not self.pending:
            await self.to_server.aclose()  # the SDK ends the session on its own
            with anyio.move_on_after(SHUTDOWN_GRACE):
                await self.finished.wait()
        self.session.cancel()

    # -- to the peer ----------------------------------------------------------------------

    def encode(self, item: Any) -> str:
        """One outgoing message as text ("" to skip it); never fails on what the SDK built."""
        if isinstance(item, dict):
            return jsonrpc.dumps(item)
        answered_id = sdk.response_id_of(item)
        if answered_id is not None and answered_id in self.pending:
            self.pending.discard(answered_id)
            self.answered.set()
        asked_id = sdk.request_id_of(item)
        if asked_id is not None:
            self.asked.add(asked_id)
        try:
            return sdk.dump_message(item)
        except Exception as exc:  # noqa: BLE001 - an SDK object that will not serialise
            log.warning("mcp: could not write a message to %s: %s", self.peer, exc)
            if answered_id is None:
                return ""
            reply = jsonrpc.error_response(answered_id, jsonrpc.INTERNAL_ERROR, "the reply could not be encoded")
            return jsonrpc.dumps(reply)

    async def write(self) -> None:
        async with self.outgoing:
            async for item in self.outgoing:
                text = self.encode(item)
                if not text:
                    continue
                try:
                    await self.channel.send(text)
                except ChannelClosed:
                    self.tool.cancel_all()
                    self.session.cancel()
                    return

    # -- the SDK's session ----------------------------------------------------------------

    async def run(self) -> None:
        try:
            with self.session:
                await sdk.run_server(self.server, self.from_peer, self.to_peer)
        except Exception as exc:  # noqa: BLE001 - e.g. a late answer after the peer left
            if self.closing:
                log.debug("MCP session with %s ended with %r", self.peer, exc)
            else:
                log.warning("mcp: the session with %s failed: %s", self.peer, _first_line(exc))
        finally:
            self.to_server.close()
            self.finished.set()
            await self.to_peer.aclose()  # the writer drains what is queued, then ends


def _first_line(exc: BaseException) -> str:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
