"""The stdio transport: one channel over the process's stdin and stdout.

stdout carries only protocol bytes. :func:`protect_stdout` keeps a private duplicate of
file descriptor 1 for the protocol, then points fd 1 (and ``sys.stdout``) at stderr, so
stray prints, native libraries' logs and child processes cannot corrupt the stream.

Framing: a door with ``framing = "ndjson"`` (JSON-RPC doors) gets one message per line,
in and out; a ``"text"`` door (the terminal) gets lines in and raw text out.

Bytes that are not UTF-8 never stop the reader. An NDJSON line is decoded with
``surrogateescape``, so the door's JSON policy (:mod:`onedoor.wire`) refuses it as "not
UTF-8" and answers with a protocol error; a text line gets U+FFFD in their place (it is
what the user typed). Output never fails on encoding either (:func:`onedoor.wire.encode_text`).

End of input from a pipe or a file is the end of the session. For a text door on a
terminal it is Ctrl-D, typed by a person who may go on typing: each one is one ``None``
from ``recv()``, and the door decides what it means (the terminal door ends the chat at
its prompt, and answers no to a question).
"""

from __future__ import annotations

import asyncio
import os
import sys
import threading
from dataclasses import dataclass, field
from typing import Any

from ..composition import ChannelClosed, MessageTooLarge, ServeContext
from ..wire import encode_text

_protocol_fd: int | None = None
_QUEUED_LINES = 64


def protect_stdout() -> int:
    """Reserve the real stdout for the protocol; return its file descriptor. Idempotent."""
    global _protocol_fd
    if _protocol_fd is None:
        try:
            sys.stdout.flush()
        except Exception:  # noqa: BLE001
            pass
        _protocol_fd = os.dup(1)
        os.dup2(2, 1)
        sys.stdout = sys.stderr
    return _protocol_fd


@dataclass
class StdioOptions:
    max_message_bytes: int = field(
        default=16 * 1024 * 1024, metadata={"help": "longest message accepted on stdin, in bytes"}
    )


class StdioChannel:
    """The process's own stdin/stdout as a channel (one session)."""

    peer = "stdio"

    def __init__(self, in_fd: int, out_fd: int, *, framing: str = "ndjson", max_message_bytes: int = 16 * 1024 * 1024) -> None:
        self._in = os.fdopen(os.dup(in_fd), "rb", buffering=0)
        self._out_fd = out_fd
        self._newline = framing == "ndjson"
        self._terminal = not self._newline and _isatty(in_fd)  # end of input is Ctrl-D, not the end
        self._errors = "surrogateescape" if self._newline else "replace"  # see the module docstring
        self._limit = max_message_bytes
        self._queue: asyncio.Queue[Any] = asyncio.Queue()  # bounded by _room
        self._room = threading.Semaphore(_QUEUED_LINES)  # lines read ahead of the door (backpressure)
        self._loop = asyncio.get_running_loop()
        self._closed = False
        self._reader = threading.Thread(target=self._read_lines, name="onedoor-stdin", daemon=True)
        self._reader.start()

    def _deliver(self, item: Any) -> bool:
        """Hand one item to the loop (one cheap hop; no round trip back to this thread)."""
        while not self._room.acquire(timeout=0.5):
            if self._loop.is_closed():
                return False
        try:
            self._loop.call_soon_threadsafe(self._queue.put_nowait, item)
            return True
        except RuntimeError:  # the loop has closed
            return False

    def _read_lines(self) -> None:
        import io

        reader = io.BufferedReader(self._in, buffer_size=65536)
        while True:
            try:
                line = reader.readline(self._limit + 1)
            except (OSError, ValueError):  # the terminal hung up, or stdin is unreadable: the end
                self._deliver(None)
                return
            if not line:
                if self._deliver(None) and self._terminal:
                    continue
                return
            if len(line) > self._limit and not line.endswith(b"\n"):
                size = len(line)
                while True:  # discard the rest of the oversized line
                    more = reader.readline(65536)
                    size += len(more)
                    if not more or more.endswith(b"\n"):
                        break
                if not self._deliver(MessageTooLarge(size, self._limit)):
                    return
                continue
            end = len(line)
            while end and line[end - 1] in b"\r\n":
                end -= 1
            with memoryview(line) as view:  # decoded in place: a big line is not copied before it is decoded
                text = str(view[:end], "utf-8", self._errors)
            del line
            if self._newline and not text.strip():
                continue  # blank lines between NDJSON messages are ignored
            if not self._deliver(text):
                return

    async def recv(self) -> str | None:
        if self._closed:
            return None
        item = await self._queue.get()
        self._room.release()
        if item is None:
            self._closed = not self._terminal
            return None
        if isinstance(item, MessageTooLarge):
            raise item
        return item

    async def send(self, message: str) -> None:
        data = encode_text(message + "\n" if self._newline else message)
        view = memoryview(data)
        try:
            while view:
                written = os.write(self._out_fd, view)
                view = view[written:]
        except (BrokenPipeError, OSError) as exc:
            raise ChannelClosed(f"stdout closed: {exc}") from None

    async def close(self) -> None:
        self._closed = True


def _isatty(fd: int) -> bool:
    try:
        return os.isatty(fd)
    except OSError:
        return False


class StdioTransport:
    name = "stdio"
    shape = "channel"
    max_doors = 1
    Options = StdioOptions

    def early(self) -> None:
        """Guard stdout before door and hook modules are imported: a print at import
        time must not reach the protocol stream."""
        protect_stdout()

    def prepare(self, options: StdioOptions | None) -> None:
        protect_stdout()

    def serve(self, doors: list[Any], ctx: ServeContext) -> int:
        door = doors[0]
        options = ctx.options_for(self.name) or StdioOptions()
        out_fd = protect_stdout()

        async def main() -> None:
            channel = StdioChannel(
                0, out_fd, framing=getattr(door, "framing", "ndjson"), max_message_bytes=options.max_message_bytes
            )
            try:
                await door.serve_channel(channel, ctx)
            finally:
                await channel.close()

        try:
            asyncio.run(main())
        except KeyboardInterrupt:
            return 130
        return 0


transport = StdioTransport
