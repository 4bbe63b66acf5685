"""The AG-UI door's ASGI app (mounted under the door's prefix, /agui by default).

=====================  =======================================================
GET  /agui/            the chat page (bundle inlined, so ``?token=`` suffices)
POST /agui/            run: a RunAgentInput in, an SSE stream of AG-UI events out
POST /agui/cancel      ``{"runId": ..., "threadId": ...}``: stop a run; its stream
                       ends with RUN_FINISHED and the cancelled outcome
GET  /agui/info        protocol version, endpoint and options
=====================  =======================================================

The input is validated before anything streams: errors are JSON
``{"error": ..., "detail": ...}`` (400 malformed JSON, 422 invalid input, 413 too
large, 429 busy with Retry-After, 409 a runId already running). A client that goes
away cancels its run.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any, Awaitable, Callable

from onedoor.errors import RunRefused

from .convert import InputError, build_request
from .translate import PROTOCOL_VERSION, Translator, encode_sse

Send = Callable[[dict[str, Any]], Awaitable[None]]

SSE_HEADERS = [
    (b"content-type", b"text/event-stream; charset=utf-8"),
    (b"cache-control", b"no-cache"),
    (b"x-accel-buffering", b"no"),
]
KEEPALIVE = b": keepalive\n\n"
MAX_PENDING_FRAMES = 4096  # frames translated but not yet sent before the pump waits
_REFUSED_STATUS = {"busy": 429, "too_large": 413, "invalid": 422}


async def send_json(send: Send, status: int, payload: Any, headers: list[tuple[bytes, bytes]] = ()) -> None:  # type: ignore[assignment]
    body = json.dumps(payload).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), *headers],
        }
    )
    await send({"type": "http.response.body", "body": body})


async def send_error(send: Send, status: int, code: str, detail: str, headers: list[tuple[bytes, bytes]] = ()) -> None:  # type: ignore[assignment]
    await send_json(send, status, {"error": code, "detail": detail}, headers)


async def read_body(receive: Any) -> bytes | None:
    """The whole request body, or None if the client went away first."""
    chunks = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks)


class AguiApp:
    def __init__(self, kernel: Any, options: Any, door_name: str = "agui", page: bytes | None = None) -> None:
        self.kernel = kernel
        self.options = options
        self.door_name = door_name
        self.page = page
        self.runs: dict[str, tuple[str, Any]] = {}  # runId -> (threadId, RunStream)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Send) -> None:
        if scope["type"] != "http":
            return
        path = scope["path"]
        root = scope.get("root_path", "")
        if root and path.startswith(root):
            path = path[len(root) :]
        path = path.rstrip("/")
        method = scope["method"]
        if path in ("", "/run"):
            if method == "POST":
                await self.run(receive, send)
            elif method in ("GET", "HEAD") and path == "":
                await self.chat_page(send)
            else:
                await send_error(send, 405, "method_not_allowed", f"{method} is not allowed here; POST a RunAgentInput")
        elif path == "/cancel" and method == "POST":
            await self.cancel(receive, send)
        elif path == "/info" and method in ("GET", "HEAD"):
            await send_json(
                send,
                200,
                {"protocolVersion": PROTOCOL_VERSION, "endpoint": "POST " + (root or "") + "/", "door": self.door_name},
            )
        else:
            await send_error(send, 404, "not_found", f"no route for {method} {scope['path']}")

    async def chat_page(self, send: Send) -> None:
        if self.page is None:
            await send_error(send, 404, "not_found", "the chat page is turned off (page=false)")
            return
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [
                    (b"content-type", b"text/html; charset=utf-8"),
                    (b"content-length", str(len(self.page)).encode()),
                    (b"cache-control", b"no-cache"),
                    (b"referrer-policy", b"no-referrer"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": self.page})

    async def _json_body(self, receive: Any, send: Send) -> Any:
        body = await read_body(receive)
        if body is None:
            return None
        try:
            return json.loads(body)
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            await send_error(send, 400, "bad_request", f"the body is not valid JSON: {exc}")
            return None

    async def cancel(self, receive: Any, send: Send) -> None:
        data = await self._json_body(receive, send)
        if data is None:
            return
        run_id = data.get("runId") if isinstance(data, dict) else None
        if not isinstance(run_id, str):
            await send_error(send, 422, "invalid_input", "send {\"runId\": ..., \"threadId\": ...}")
            return
        found = self.runs.get(run_id)
        if found is None or data.get("threadId", found[0]) != found[0]:
            await send_error(send, 404, "not_found", f"no run {run_id!r} is in progress")
            return
        found[1].cancel()
        await send_json(send, 200, {"cancelled": True, "runId": run_id})

    async def run(self, receive: Any, send: Send) -> None:
        data = await self._json_body(receive, send)
        if data is None:
            return
        try:
            request = build_request(data)
        except InputError as exc:
            await send_error(send, 422, "invalid_input", str(exc))
            return
        if request.run_id in self.runs:
            await send_error(send, 409, "conflict", f"run {request.run_id!r} is already in progress")
            return
        try:
            run = self.kernel.run(
                request.prompt,
                history=request.history,
                tools=request.tools,
                door=self.door_name,
                run_id=request.run_id,
                extras=request.extras,
            )
        except RunRefused as exc:
            status = _REFUSED_STATUS.get(exc.reason, 422)
            headers = []
            if exc.retry_after is not None:
                headers.append((b"retry-after", str(max(1, round(exc.retry_after))).encode()))
            await send_error(send, status, exc.reason, str(exc), headers)
            return
        options = self.options
        record = options.snapshot == "always" or (
            options.snapshot != "never"
            and (request.wants_snapshot or (options.snapshot_after > 0 and len(request.messages) >= options.snapshot_after))
        )
        translator = Translator(request.thread_id, request.run_id, record=record, input_messages=request.messages)
        self.runs[request.run_id] = (request.thread_id, run)
        try:
            await self._stream(run, translator, receive, send)
        finally:
            self.runs.pop(request.run_id, None)

    async def _stream(self, run: Any, translator: Translator, receive: Any, send: Send) -> None:
        """Stream the run. A pump task translates events into SSE frames as they come;
        this coroutine sends whatever has piled up each time the pump waits for the
        backend, so a burst of deltas leaves in one write and a slow one leaves at once."""
        await send({"type": "http.response.start", "status": 200, "headers": SSE_HEADERS})
        frames: list[bytes] = []
        ready = asyncio.Event()
        room = asyncio.Event()
        room.set()
        done = False
        sent = 0

        async def pump() -> None:
            nonlocal done
            encode = translator.feed_sse
            try:
                async with run:
                    async for event in run:
                        data = encode(event)
                        if data:
                            frames.append(data)
                            ready.set()
                            if len(frames) >= MAX_PENDING_FRAMES:  # a slow client: wait for room
                                room.clear()
                                await room.wait()
            except Exception as exc:  # the door itself failed: still end the stream properly
                frames.append(_encode_all(translator.finish(f"the AG-UI door failed: {type(exc).__name__}: {exc}")))
            finally:
                frames.append(_encode_all(translator.finish()))
                done = True
                ready.set()

        async def watch_disconnect() -> None:
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    run.cancel()
                    return

        async def keepalive(interval: float) -> None:
            seen = -1
            while True:
                await asyncio.sleep(interval)
                if sent == seen and not done:
                    await send({"type": "http.response.body", "body": KEEPALIVE, "more_body": True})
                seen = sent

        coalesce = self.options.coalesce
        pumping = asyncio.ensure_future(pump())
        helpers = [asyncio.ensure_future(watch_disconnect())]
        if self.options.keepalive > 0:
            helpers.append(asyncio.ensure_future(keepalive(self.options.keepalive)))
        finished = False
        try:
            while True:
                await ready.wait()
                ready.clear()
                if frames:
                    batch = [frames[0] if len(frames) == 1 else b"".join(frames)] if coalesce else list(frames)
                    frames.clear()
                    room.set()
                    sent += 1
                    for body in batch:
                        await send({"type": "http.response.body", "body": body, "more_body": True})
                if done and not frames:
                    break
            finished = True
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            for task in helpers:
                task.cancel()
            if not pumping.done():
                pumping.cancel()
                await asyncio.gather(pumping, return_exceptions=True)
            if not finished:  # cut short (server shutdown, a failed write): still try to end properly
                try:
                    await send({"type": "http.response.body", "body": b"".join(frames), "more_body": False})
                except Exception:
                    pass


def _encode_all(events: list[dict[str, Any]]) -> bytes:
    return b"".join(map(encode_sse, events))
