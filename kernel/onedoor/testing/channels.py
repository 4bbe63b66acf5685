"""An in-memory :class:`~onedoor.composition.Channel`: test a channel door with no transport.

Like httpx's ``MockTransport``: :func:`channel_pair` gives two connected ends; the door
serves one, the test drives the other. Whatever one end sends, the other receives, in
order; closing one end ends the other's stream (``recv`` returns None once the messages
already sent are read) and makes sending to it raise ``ChannelClosed``.

    async with serve_in_memory(door, ctx) as client:
        await client.send_json({"jsonrpc": "2.0", "id": 1, "method": "ping"})
        reply = await client.recv_json()

Transports' habits can be imitated: ``max_message_bytes`` turns an oversized message
into ``MessageTooLarge`` at the receiving end (as stdio and SLIM do);
:meth:`MemoryChannel.send_bytes` delivers raw bytes as those transports do (what is not
UTF-8 arrives as ``surrogateescape`` text); :meth:`MemoryChannel.inject` makes the next
``recv`` raise any exception; ``line_framed=True`` refuses a message holding a line
break (what NDJSON framing could not carry). Text a door sends must encode to UTF-8, as
on a real transport: a lone surrogate fails the door's ``send``.
"""

from __future__ import annotations

import asyncio
import json
from contextlib import asynccontextmanager
from typing import Any, AsyncIterator

from ..composition import ChannelClosed, MessageTooLarge

_END = object()  # the peer closed its end


class MemoryChannel:
    """One end of an in-memory channel pair (see :func:`channel_pair`)."""

    def __init__(self, peer: str, *, max_message_bytes: int | None = None, line_framed: bool = False) -> None:
        """``max_message_bytes`` limits what this end sends (it arrives as MessageTooLarge)."""
        self.peer = peer
        self.sent: list[str] = []  # everything this end sent, in order (for assertions)
        self._inbox: asyncio.Queue[Any] = asyncio.Queue()
        self._other: MemoryChannel | None = None
        self._limit = max_message_bytes
        self._line_framed = line_framed
        self._closed = False  # this end was closed
        self._ended = False  # this end has read the peer's end of stream

    @property
    def closed(self) -> bool:
        return self._closed

    async def recv(self) -> str | None:
        if self._ended or self._closed:
            return None
        item = await self._inbox.get()
        if item is _END:
            self._ended = True
            return None
        if isinstance(item, BaseException):
            raise item
        return item

    async def send(self, message: str) -> None:
        other = self._other
        if self._closed or other is None or other._closed:
            raise ChannelClosed(f"in-memory channel to {self.peer} is closed")
        if not isinstance(message, str):
            raise TypeError(f"a channel message is text, not {type(message).__name__}")
        if self._line_framed and ("\n" in message or "\r" in message):
            raise AssertionError(f"a line-framed message must hold no line break: {message[:200]!r}")
        size = len(message.encode("utf-8"))  # as a transport would: a lone surrogate fails here too
        self.sent.append(message)
        if self._limit is not None and size > self._limit:
            other._inbox.put_nowait(MessageTooLarge(size, self._limit))
        else:
            other._inbox.put_nowait(message)

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._inbox.put_nowait(_END)  # a recv pending on this end returns None
        if self._other is not None:
            self._other._inbox.put_nowait(_END)

    def inject(self, exc: BaseException) -> None:
        """Make this end's next ``recv`` (after what is already queued) raise ``exc``."""
        self._inbox.put_nowait(exc)

    # -- conveniences for the driving side ------------------------------------------------

    async def send_json(self, value: Any) -> None:
        await self.send(json.dumps(value))

    async def send_bytes(self, data: bytes) -> None:
        """Raw bytes, delivered as stdio and SLIM deliver them: decoded with ``surrogateescape``
        (bytes that are not UTF-8 reach the other end for its JSON policy to refuse)."""
        other = self._other
        if self._closed or other is None or other._closed:
            raise ChannelClosed(f"in-memory channel to {self.peer} is closed")
        if self._limit is not None and len(data) > self._limit:
            other._inbox.put_nowait(MessageTooLarge(len(data), self._limit))
            return
        text = data.decode("utf-8", "surrogateescape")
        self.sent.append(text)
        other._inbox.put_nowait(text)

    async def recv_json(self, timeout: float = 15.0) -> Any:
        """The next message decoded; AssertionError naming the wait if none comes in time."""
        try:
            text = await asyncio.wait_for(self.recv(), timeout)
        except TimeoutError:
            raise AssertionError(f"no message from {self.peer} within {timeout:g} s") from None
        if text is None:
            raise AssertionError(f"{self.peer} closed the channel")
        return json.loads(text)

    async def reply_to(self, request_id: Any, timeout: float = 15.0, seen: list[Any] | None = None) -> dict[str, Any]:
        """Read until the response to ``request_id``; other messages go to ``seen``."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            left = deadline - loop.time()
            if left <= 0:
                raise AssertionError(f"no reply to request {request_id!r} from {self.peer} within {timeout:g} s")
            message = await self.recv_json(left)
            if isinstance(message, dict) and message.get("id") == request_id and "method" not in message:
                return message
            if seen is not None:
                seen.append(message)


def channel_pair(
    peer: str = "memory", *, max_message_bytes: int | None = None, line_framed: bool = False
) -> tuple[MemoryChannel, MemoryChannel]:
    """Two connected ends: ``(door_end, client_end)``.

    ``max_message_bytes`` applies to what reaches the door end (a transport's limit on
    incoming messages); ``line_framed`` refuses line breaks in both directions.
    """
    door_end = MemoryChannel(peer, line_framed=line_framed)
    client_end = MemoryChannel("door", max_message_bytes=max_message_bytes, line_framed=line_framed)
    door_end._other, client_end._other = client_end, door_end
    return door_end, client_end


@asynccontextmanager
async def serve_in_memory(
    door: Any, ctx: Any, *, timeout: float = 15.0, **pair_options: Any
) -> AsyncIterator[MemoryChannel]:
    """Serve ``door`` on one end of a fresh pair; yield the other end to the test.

    On exit the client end is closed and the door must end its session within
    ``timeout`` seconds (AssertionError otherwise); an exception the door raised is
    re-raised here.
    """
    door_end, client_end = channel_pair(**pair_options)
    task = asyncio.ensure_future(door.serve_channel(door_end, ctx))
    try:
        yield client_end
    finally:
        await client_end.close()
        done, _ = await asyncio.wait({task}, timeout=timeout)
        if not done:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            name = getattr(door, "name", door)
            raise AssertionError(f"door {name!r} did not end within {timeout:g} s of the peer closing")
        task.result()


__all__ = ["MemoryChannel", "channel_pair", "serve_in_memory"]
