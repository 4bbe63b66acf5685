"""A small OpenAI-compatible Chat Completions server over real HTTP on 127.0.0.1.

Plain asyncio (no web framework), HTTP/1.1 with keep-alive, SSE streaming with chunked
transfer encoding. Every request is recorded (:class:`RecordedRequest`), including
whether the client closed the connection before the stream ended, so a test can
assert that cancelling a run really closed the model request.

    with FakeModelServer() as server:
        client = OpenAI(base_url=server.base_url, api_key="test")
        ...
        server.wait_for(lambda: server.requests and server.requests[-1].disconnected)
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable

from .script import Plan, plan_for
from .usage import content_parts, usage_for

MODEL = "fake-model"
CONTEXT_LENGTH = 128_000
_MAX_HEADER = 64 * 1024
_MAX_BODY = 16 * 1024 * 1024
_HANG_LIMIT = 60.0  # a hanging stream gives up after this long


@dataclass
class RecordedRequest:
    """One HTTP request the server received."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any  # parsed JSON, or None
    started: float = field(default_factory=time.monotonic)
    chunks_sent: int = 0
    completed: bool = False  # the whole response was written
    disconnected: bool = False  # the client closed the connection before the end
    status: int = 0
    usage: dict[str, Any] | None = None  # the usage the response carried (None: it carried none)

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list((self.body or {}).get("messages") or [])

    @property
    def model(self) -> str:
        """The model the request asked for."""
        return str((self.body or {}).get("model") or "")

    def parts(self, kind: str | None = None) -> list[dict[str, Any]]:
        """Every content part of every message (``{"type": "image_url", ...}``), of one type if ``kind``."""
        return [p for m in self.messages for p in content_parts(m.get("content")) if kind is None or p.get("type") == kind]

    @property
    def image_urls(self) -> list[str]:
        """The URL (or ``data:`` URI) of every ``image_url`` part, in order."""
        return [str((p.get("image_url") or {}).get("url", "")) for p in self.parts("image_url")]

    @property
    def last_user_text(self) -> str:
        for message in reversed(self.messages):
            if message.get("role") == "user":
                content = message.get("content")
                return content if isinstance(content, str) else json.dumps(content)
        return ""


class FakeModelServer:
    """The server, run on its own event loop in a daemon thread (or on yours: ``serve``)."""

    def __init__(
        self, host: str = "127.0.0.1", port: int = 0, *, delay: float = 0.0, models: tuple[str, ...] = (MODEL,),
    ) -> None:
        self.host = host
        self.port = port
        self.delay = delay
        self.models = tuple(models) or (MODEL,)  # what GET /models lists (any model name is answered)
        self.requests: list[RecordedRequest] = []
        self._cond = threading.Condition()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.base_events.Server | None = None
        self._thread: threading.Thread | None = None
        self._stopping: asyncio.Event | None = None

    # -- lifecycle -----------------------------------------------------------------------
    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def base_url(self) -> str:
        """What an OpenAI client takes as base_url."""
        return f"{self.url}/v1"

    async def start_async(self) -> None:
        self._stopping = asyncio.Event()
        self._loop = asyncio.get_running_loop()
        self._server = await asyncio.start_server(self._handle, self.host, self.port, limit=_MAX_HEADER)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop_async(self) -> None:
        if self._stopping is not None:
            self._stopping.set()
        if self._server is not None:
            self._server.close()
            try:
                await asyncio.wait_for(self._server.wait_closed(), 2)
            except TimeoutError:
                pass

    def start(self) -> "FakeModelServer":
        ready = threading.Event()
        failure: list[BaseException] = []

        def main() -> None:
            loop = asyncio.new_event_loop()
            asyncio.set_event_loop(loop)
            try:
                loop.run_until_complete(self.start_async())
            except BaseException as exc:  # noqa: BLE001 - reported to start()
                failure.append(exc)
                ready.set()
                return
            ready.set()
            try:
                loop.run_until_complete(self._stopping.wait())  # type: ignore[union-attr]
                loop.run_until_complete(self.stop_async())
                pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
                for task in pending:  # connections still open: end their handlers
                    task.cancel()
                if pending:
                    loop.run_until_complete(asyncio.wait(pending, timeout=2))
            finally:
                loop.close()

        self._thread = threading.Thread(target=main, name="fake-model-server", daemon=True)
        self._thread.start()
        if not ready.wait(10):
            raise RuntimeError("the fake model server did not start within 10 s")
        if failure:
            raise failure[0]
        return self

    def stop(self) -> None:
        loop, stopping = self._loop, self._stopping
        if loop is not None and stopping is not None and not loop.is_closed():
            try:
                loop.call_soon_threadsafe(stopping.set)
            except RuntimeError:
                pass
        if self._thread is not None:
            self._thread.join(5)

    def __enter__(self) -> "FakeModelServer":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # -- observing ---------------------------------------------------------------------
    def chat_requests(self) -> list[RecordedRequest]:
        with self._cond:
            return [r for r in self.requests if r.path.endswith("/chat/completions")]

    def wait_for(self, predicate: Callable[[], Any], timeout: float = 10.0) -> bool:
        """Block until ``predicate()`` is true (re-checked on every request change)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while not predicate():
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(min(left, 0.2))
        return True

    def _changed(self) -> None:
        with self._cond:
            self._cond.notify_all()

    # -- HTTP ----------------------------------------------------------------------------
    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                keep_alive = await self._one_request(reader, writer)
                if not keep_alive:
                    break
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass
        except asyncio.CancelledError:
            pass
        finally:
            try:
                writer.close()
            except Exception:  # noqa: BLE001
                pass

    async def _one_request(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except asyncio.IncompleteReadError:
            return False
        lines = head.decode("latin-1").split("\r\n")
        try:
            method, target, _version = lines[0].split(" ", 2)
        except ValueError:
            await self._send_json(writer, 400, {"error": {"message": "bad request line"}}, close=True)
            return False
        headers: dict[str, str] = {}
        for line in lines[1:]:
            if ":" in line:
                key, _, value = line.partition(":")
                headers[key.strip().lower()] = value.strip()
        length = int(headers.get("content-length") or 0)
        if length > _MAX_BODY:
            await self._send_json(writer, 413, {"error": {"message": "body too large"}}, close=True)
            return False
        raw = await reader.readexactly(length) if length else b""
        body: Any = None
        if raw:
            try:
                body = json.loads(raw)
            except ValueError:
                body = None
        path = target.split("?", 1)[0]
        record = RecordedRequest(method, path, headers, body)
        with self._cond:
            self.requests.append(record)
        self._changed()
        keep_alive = headers.get("connection", "").lower() != "close"
        try:
            if method == "POST" and path.rstrip("/").endswith("/chat/completions"):
                if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
                    await self._reply_json(record, writer, 400, _error("the body needs a messages list", "invalid_request_error"))
                else:
                    await self._chat(record, reader, writer, body)
            elif method == "GET" and path.rstrip("/").endswith("/models"):
                await self._reply_json(record, writer, 200, {
                    "object": "list",
                    "data": [{"id": name, "object": "model", "owned_by": "onedoor", "context_length": CONTEXT_LENGTH}
                             for name in self.models],
                })
            else:
                await self._reply_json(record, writer, 404, _error(f"no route {method} {path}", "not_found"))
        finally:
            self._changed()
        return keep_alive and not record.disconnected

    async def _reply_json(self, record: RecordedRequest, writer: asyncio.StreamWriter, status: int, data: Any) -> None:
        record.status = status
        record.completed = True  # before the bytes leave (see _stream)
        await self._send_json(writer, status, data)

    async def _send_json(self, writer: asyncio.StreamWriter, status: int, data: Any, close: bool = False) -> None:
        payload = json.dumps(data).encode()
        head = (
            f"HTTP/1.1 {status} {_REASONS.get(status, 'Status')}\r\n"
            "Content-Type: application/json\r\n"
            f"Content-Length: {len(payload)}\r\n"
            + ("Connection: close\r\n" if close else "")
            + "\r\n"
        )
        writer.write(head.encode() + payload)
        await writer.drain()

    async def _chat(self, record: RecordedRequest, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, body: dict) -> None:
        plan = plan_for(body, self.delay)
        if plan.error_status:
            kind = "server_error" if plan.error_status >= 500 else "invalid_request_error"
            await self._reply_json(record, writer, plan.error_status, _error(plan.error_message, kind))
            return
        model = body.get("model") or MODEL
        if not body.get("stream"):
            record.usage = usage_for(body, plan)
            await self._reply_json(record, writer, 200, _completion(plan, model, record.usage))
            return
        await self._stream(record, reader, writer, plan, model, body)

    async def _stream(
        self, record: RecordedRequest, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
        plan: Plan, model: str, body: dict,
    ) -> None:
        record.status = 200
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n"
        )
        gone = asyncio.ensure_future(reader.read(1))  # EOF (b"") = the client hung up
        chunk_id = f"chatcmpl-{uuid.uuid4().hex[:16]}"
        created = int(time.time())

        def chunk(delta: dict[str, Any], finish: str | None = None, usage: dict | None = None) -> dict:
            out: dict[str, Any] = {
                "id": chunk_id, "object": "chat.completion.chunk", "created": created, "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            }
            if usage is not None:
                out["usage"] = usage
            return out

        async def send(data: Any) -> bool:
            if gone.done():
                return False
            text = data if isinstance(data, str) else json.dumps(data)
            frame = f"data: {text}\n\n".encode()
            writer.write(b"%x\r\n%s\r\n" % (len(frame), frame))
            await writer.drain()
            record.chunks_sent += 1
            self._changed()
            if plan.delay:
                await asyncio.wait({gone}, timeout=plan.delay)
            else:
                await asyncio.sleep(0)
            return not gone.done()

        try:
            steps: list[dict[str, Any]] = [chunk({"role": "assistant", "content": ""})]
            steps += [chunk({"reasoning_content": piece}) for piece in plan.reasoning]
            steps += [chunk({"content": piece}) for piece in plan.text]
            for index, call in enumerate(plan.tool_calls):
                args = call["arguments"]
                half = len(args) // 2
                steps.append(chunk({"tool_calls": [{
                    "index": index, "id": call["id"], "type": "function",
                    "function": {"name": call["name"], "arguments": args[:half]},
                }]}))
                steps.append(chunk({"tool_calls": [{"index": index, "function": {"arguments": args[half:]}}]}))
            steps.append(chunk({}, plan.finish_reason))
            if (body.get("stream_options") or {}).get("include_usage"):
                record.usage = usage_for(body, plan)
                steps.append({
                    "id": chunk_id, "object": "chat.completion.chunk", "created": created, "model": model,
                    "choices": [], "usage": record.usage,
                })
            for index, step in enumerate(steps):
                if not await send(step):
                    break
                if plan.hang and index == min(1, len(steps) - 1):
                    await asyncio.wait({gone}, timeout=_HANG_LIMIT)
                    break
            else:
                if not gone.done():
                    frame = b"data: [DONE]\n\n"
                    record.completed = True  # set before the bytes leave, so a client never sees it unset
                    record.chunks_sent += 1
                    writer.write(b"%x\r\n%s\r\n0\r\n\r\n" % (len(frame), frame))
                    await writer.drain()
        except ConnectionError:
            pass
        finally:
            record.disconnected = gone.done() and not record.completed
            if not gone.done():
                gone.cancel()
                await asyncio.wait({gone})  # let the read let go before the next request
            if not record.completed:
                writer.close()
            self._changed()


def _error(message: str, kind: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": None, "code": None}}


def _completion(plan: Plan, model: str, usage: dict[str, Any]) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": "".join(plan.text) or None}
    if plan.reasoning:
        message["reasoning_content"] = "".join(plan.reasoning)
    if plan.tool_calls:
        message["tool_calls"] = [
            {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
            for c in plan.tool_calls
        ]
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex[:16]}", "object": "chat.completion", "created": int(time.time()),
        "model": model, "choices": [{"index": 0, "message": message, "finish_reason": plan.finish_reason}],
        "usage": usage,
    }


_REASONS = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 404: "Not Found", 413: "Payload Too Large",
            429: "Too Many Requests", 500: "Internal Server Error", 503: "Service Unavailable"}
