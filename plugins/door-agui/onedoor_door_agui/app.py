"""The AG-UI door's ASGI app (mounted under the door's prefix, /agui by default).

=====================  =======================================================
GET  /agui/            the chat page (bundle inlined; opened with ``?token=`` the
                       transport swaps the token for a cookie)
POST /agui/            run: a RunAgentInput in, an SSE stream of AG-UI events out
POST /agui/cancel      ``{"runId": ..., "threadId": ...}``: stop a run; its stream
                       ends with RUN_FINISHED and the cancelled outcome
GET  /agui/info        protocol version, endpoint and options
=====================  =======================================================

The input is validated before anything streams: errors are JSON
``{"error": ..., "detail": ...}`` (400 malformed JSON, 422 invalid input or a body
that is not an object, 413 too large, 429 busy with Retry-After, 409 a runId already
running). The HTTP transport's guard has already checked Host, Origin, token and
content type, and decoded the JSON under :mod:`onedoor.wire`; its
:class:`~onedoor_transport_http.sse.EventStream` streams the run, with this door's
per-run :class:`~.translate.Translator` as the encoder. A client that goes away
cancels its run.
"""

from __future__ import annotations

from typing import Any, Awaitable, Callable, MutableMapping

from onedoor.errors import RunRefused
from onedoor.wire import WireError, json_type
from onedoor_transport_http.errors import send_error, send_json, send_refusal
from onedoor_transport_http.guard import read_json
from onedoor_transport_http.sse import EventStream

from .convert import InputError, build_request
from .translate import PROTOCOL_VERSION, Translator, encode_all

Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


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
                await self.run(scope, receive, send)
            elif method in ("GET", "HEAD") and path == "":
                await self.chat_page(send)
            else:
                await send_error(send, 405, "method_not_allowed", f"{method} is not allowed here; POST a RunAgentInput")
        elif path == "/cancel" and method == "POST":
            await self.cancel(scope, receive, send)
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

    async def _object_body(self, scope: dict[str, Any], receive: Any, send: Send, what: str) -> dict[str, Any] | None:
        """The JSON object in the body, or None once an error is answered (or the client left)."""
        try:
            data = await read_json(scope, receive)
        except WireError as exc:
            await send_error(send, 400, "bad_json", f"the request body is refused: {exc}")
            return None
        if data is ...:
            return None
        if not isinstance(data, dict):
            await send_error(send, 422, "invalid_request", f"the body must be a JSON object ({what}), got {json_type(data)}")
            return None
        return data

    async def cancel(self, scope: dict[str, Any], receive: Any, send: Send) -> None:
        data = await self._object_body(scope, receive, send, '{"runId": ..., "threadId": ...}')
        if data is None:
            return
        run_id = data.get("runId")
        if not isinstance(run_id, str):
            await send_error(send, 422, "invalid_request", "send {\"runId\": ..., \"threadId\": ...}")
            return
        found = self.runs.get(run_id)
        if found is None or data.get("threadId", found[0]) != found[0]:
            await send_error(send, 404, "not_found", f"no run {run_id!r} is in progress")
            return
        found[1].cancel()
        await send_json(send, 200, {"cancelled": True, "runId": run_id})

    async def run(self, scope: dict[str, Any], receive: Any, send: Send) -> None:
        data = await self._object_body(scope, receive, send, "a RunAgentInput")
        if data is None:
            return
        try:
            request = build_request(data)
        except InputError as exc:
            await send_error(send, 422, "invalid_request", str(exc))
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
            await send_refusal(send, exc)
            return
        options = self.options
        record = options.snapshot == "always" or (
            options.snapshot != "never"
            and (request.wants_snapshot or (options.snapshot_after > 0 and len(request.messages) >= options.snapshot_after))
        )
        translator = Translator(request.thread_id, request.run_id, record=record, input_messages=request.messages)

        def close(error: str | None) -> bytes:
            """RUN_FINISHED (cancelled) or RUN_ERROR, unless the run already ended."""
            return encode_all(translator.finish(None if error is None else f"the AG-UI door failed: {error}"))

        stream = EventStream(
            run, translator.feed_sse, close=close, keepalive=options.keepalive, coalesce=options.coalesce
        )
        self.runs[request.run_id] = (request.thread_id, run)
        try:
            await stream(scope, receive, send)
        finally:
            self.runs.pop(request.run_id, None)


__all__ = ["AguiApp"]
