"""Server-Sent Events for one run: the event pump every HTTP door uses.

A door supplies only how its protocol writes an event::

    encode(event) -> bytes            # whole SSE frames ("...\\n\\n") for one core event;
                                      # b"" drops the event
    close(error) -> bytes             # optional: the frames that end the stream when the
                                      # run's own events did not (error=None: the run was cut
                                      # short, e.g. the server stopped; error="...": the door
                                      # itself failed while encoding). b"" when already ended.

and answers with ``EventStream(run, encode, close=...)`` (a plain ASGI app). This layer
does the rest, the same way for every door:

- headers: ``text/event-stream; charset=utf-8``, ``Cache-Control: no-cache``,
  ``X-Accel-Buffering: no``; frames end with ``\\n\\n`` (never ``\\r\\n``);
- a pump task reads the run and encodes events while the response task writes: the
  frames that are ready when the socket can take more leave together in one write
  (``coalesce=False``: one write per frame), and the pump waits once
  :data:`MAX_PENDING` frames are queued, so a slow client slows the backend, not memory;
- a silence of ``keepalive`` seconds or more sends one ``: keepalive`` comment
  (0 turns them off);
- the client going away (``http.disconnect``) cancels the run, which tells the backend;
- exactly one ending: without ``close``, a stream whose last encoded event was not the
  run's terminal event gets one (the run's outcome, or RunFailed if the door failed).

Encoders write JSON with :func:`onedoor.wire.encode_json`, which never fails on text
(lone surrogates leave as ``\\u`` escapes).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Awaitable, Callable, MutableMapping

from onedoor import STOP_CANCELLED, RunFailed, RunFinished

log = logging.getLogger("onedoor.transport.http")

SSE_HEADERS: list[tuple[bytes, bytes]] = [
    (b"content-type", b"text/event-stream; charset=utf-8"),
    (b"cache-control", b"no-cache"),
    (b"x-accel-buffering", b"no"),
]
KEEPALIVE = b": keepalive\n\n"
MAX_PENDING = 1024  # frames encoded but not yet written before the pump waits for the socket

Encode = Callable[[Any], bytes]
Close = Callable[[str | None], bytes]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


async def cancel_on_disconnect(receive: Receive, run: Any) -> None:
    """Wait for the client to go away, then cancel the run (unless this response ended with
    the run parked for answers: a later request continues it)."""
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            if not getattr(run, "suspended", False):
                run.cancel()
            return


class EventStream:
    """One run as Server-Sent Events (an ASGI app answering 200 and streaming).

    ``run`` is a kernel RunStream the door has started; this app owns it from here.
    """

    def __init__(
        self,
        run: Any,
        encode: Encode,
        *,
        close: Close | None = None,
        keepalive: float = 15.0,
        coalesce: bool = True,
        headers: list[tuple[bytes, bytes]] | None = None,
    ) -> None:
        self.run = run
        self.encode = encode
        self.close = close
        self.keepalive = keepalive
        self.coalesce = coalesce
        self.headers = SSE_HEADERS if headers is None else headers
        self._last: Any = None  # the last event handed to encode (for the default ending)

    # -- the ending -------------------------------------------------------------------
    def _ending(self, error: str | None) -> bytes:
        """Closing frames, computed once, after the run's events have stopped."""
        try:
            if self.close is not None:
                return self.close(error)
            if type(self._last) in (RunFinished, RunFailed) and error is None:
                return b""
            run = self.run
            if error is not None:
                return self.encode(RunFailed(run.run_id, error))
            outcome = run.outcome or RunFinished(run.run_id, "", STOP_CANCELLED)
            return self.encode(outcome)
        except Exception:  # the door's encoder failed twice (logged): end without it
            log.error("could not write the ending of run %s", getattr(self.run, "run_id", "?"), exc_info=True)
            return b""

    # -- ASGI -------------------------------------------------------------------------
    def _flow(self) -> "_Flow":
        """What fills and empties this response's frames (a subclass may push them instead)."""
        return _Flow(self)

    async def __call__(self, scope: dict[str, Any], receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": self.headers})
        flow = self._flow()
        loop = asyncio.get_running_loop()
        pumping = loop.create_task(flow.pump())
        helpers = [loop.create_task(cancel_on_disconnect(receive, self.run))]
        if self.keepalive > 0:
            helpers.append(loop.create_task(flow.tick(self.keepalive)))
        try:
            await flow.write(send)
        finally:
            flow.stopping = True
            flow.room.set()
            for task in helpers:
                task.cancel()
            if not pumping.done():
                if not getattr(self.run, "suspended", False):
                    self.run.cancel()
                pumping.cancel()
                await asyncio.gather(pumping, return_exceptions=True)
            if not flow.finished:  # cut short (server shutdown, a failed write): still try to end properly
                try:
                    await send({"type": "http.response.body", "body": b"".join(flow.frames), "more_body": False})
                except Exception:  # noqa: BLE001 - the connection is gone; nothing left to tell
                    pass


class _Flow:
    """One response's moving parts: the pump fills ``frames``, the writer empties them."""

    def __init__(self, stream: EventStream) -> None:
        self.stream = stream
        self.frames: list[bytes] = []
        self.ready = asyncio.Event()  # frames (or a keep-alive) wait to be written
        self.room = asyncio.Event()  # the pump may queue more frames
        self.room.set()
        self.done = False  # the pump has stopped: what is queued is all there is
        self.stopping = False  # the writer has stopped: the pump must not wait for room
        self.finished = False  # the last body message went out
        self.writes = 0
        self.idle = False

    async def pump(self) -> None:
        stream, run, encode = self.stream, self.stream.run, self.stream.encode
        frames, ready, room = self.frames, self.ready, self.room
        error: str | None = None
        event: Any = None
        try:
            async with run:
                async for event in run:
                    data = encode(event)
                    if data:
                        frames.append(data)
                        ready.set()
                        if len(frames) >= MAX_PENDING and not self.stopping:
                            room.clear()
                            await room.wait()
        except Exception as exc:  # the door itself failed: still end the stream properly
            error = f"the door failed while streaming: {type(exc).__name__}: {exc}"
            log.error("streaming run %s failed", getattr(run, "run_id", "?"), exc_info=True)
        finally:
            stream._last = event
            tail = stream._ending(error)
            if tail:
                frames.append(tail)
            self.done = True
            ready.set()

    async def tick(self, interval: float) -> None:
        """Ask for a keep-alive after a whole interval without a write."""
        seen = -1
        while True:
            await asyncio.sleep(interval)
            if self.writes == seen:
                self.idle = True
                self.ready.set()
            seen = self.writes

    async def write(self, send: Send) -> None:
        frames, ready = self.frames, self.ready
        while not self.finished:
            await ready.wait()
            ready.clear()
            last = self.done
            if frames:
                batch: list[bytes] = []
                if self.stream.coalesce or len(frames) == 1:
                    body = frames[0] if len(frames) == 1 else b"".join(frames)
                else:
                    body, batch = frames[-1], frames[:-1]
                frames.clear()
                self.room.set()
                self.writes += 1
                self.idle = False
                for each in batch:  # one write per frame (coalesce=False)
                    await send({"type": "http.response.body", "body": each, "more_body": True})
                self.finished = last
                await send({"type": "http.response.body", "body": body, "more_body": not last})
            elif self.idle:
                self.idle = False
                self.writes += 1
                await send({"type": "http.response.body", "body": KEEPALIVE, "more_body": True})
            if self.done and not frames and not self.finished:
                self.finished = True
                await send({"type": "http.response.body", "body": b"", "more_body": False})


__all__ = ["KEEPALIVE", "MAX_PENDING", "SSE_HEADERS", "EventStream", "cancel_on_disconnect"]
