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
        await send({"type": "http.response.start", "status": 200, "headers": SSE_HEADERS})
        sent = 0

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
                if sent == seen:
                    await send({"type": "http.response.body", "body": KEEPALIVE, "more_body": True})
                seen = sent

        helpers = [asyncio.ensure_future(watch_disconnect())]
        if self.options.keepalive > 0:
            helpers.append(asyncio.ensure_future(keepalive(self.options.keepalive)))
        feed = translator.feed
        tail: list[dict[str, Any]] = []
        try:
            async with run:
                async for event in run:
                    out = feed(event)
                    if not out:
                        continue
                    body = encode_sse(out[0]) if len(out) == 1 else b"".join(map(encode_sse, out))
                    sent += 1
                    await send({"type": "http.response.body", "body": body, "more_body": True})
        except Exception as exc:  # the door itself failed: still end the stream properly
            tail = translator.finish(f"the AG-UI door failed: {type(exc).__name__}: {exc}")
        finally:
            for task in helpers:
                task.cancel()
            tail += translator.finish()
            try:
                await send({"type": "http.response.body", "body": b"".join(map(encode_sse, tail)), "more_body": False})
            except Exception:  # the client is gone
                pass
