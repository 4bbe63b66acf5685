"""The runs of one MCP session (:class:`SessionScope`), cancelled when the session's input ends.

SDK 2.x cancels a session's handlers itself when the session ends. SDK 1.x stops reading
but lets handlers run to completion (a DELETE of an HTTP session, the end of a channel),
so on 1.x each ``server.run`` gets a scope in a context variable (:func:`watch_sessions`)
and its read stream is watched; what the server sends after its streams closed is dropped.
"""

from __future__ import annotations

import contextvars
from typing import Any, Callable

import anyio


class SessionScope:
    """The runs of one MCP session: cancelled when the session's input ends."""

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
        try:
            return await self._inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._scope.end()
            raise

    def __aiter__(self) -> Any:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None


class _QuietSend(_StreamWrapper):
    """A send stream that drops what is sent after the session closed it (a late answer)."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    async def send(self, item: Any) -> None:
        try:
            await self._inner.send(item)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass


def watch_sessions(server: Any) -> None:
    """Give each ``server.run`` (one session) a :class:`SessionScope` that ends with its input."""
    plain_run = server.run

    async def run(read_stream: Any, write_stream: Any, *args: Any, **kwargs: Any) -> Any:
        scope = SessionScope()
        _SCOPE.set(scope)  # this task's context: the session's handler tasks inherit it
        try:
            return await plain_run(_WatchedReceive(read_stream, scope), _QuietSend(write_stream), *args, **kwargs)
        finally:
            scope.end()

    server.run = run


__all__ = ["SessionScope", "current_session", "watch_sessions"]
