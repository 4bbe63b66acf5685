"""Content through the ``ask`` tool (#25): attachments in, the agent's parts out as MCP image,
audio, resource and resource_link blocks, refusals before any run. Real servers (stdio and
streamable HTTP) and the MCP Python SDK client (1.x or 2.x); the scripted backend says what
it received, so the reply proves what reached it."""

from __future__ import annotations

import base64
import http.server
import threading
from pathlib import Path
from typing import Any, Iterator

import pytest
from onedoor.builtins.scripted_extras import DOT_PNG
from onedoor.threads.sqlite import SQLiteThreadStore

pytestmark = pytest.mark.timeout(120)

DOT = base64.b64encode(DOT_PNG).decode("ascii")
PDF = b"%PDF-1.4\n" + b"x" * 200


def dump(block: Any) -> dict[str, Any]:
    """A content block in the wire form (camelCase, ``_meta``), under either SDK."""
    return block.model_dump(by_alias=True, mode="json", exclude_none=True)


def meta(result: Any) -> dict[str, Any]:
    return result.meta or {}


@pytest.fixture
def web() -> Iterator[Any]:
    """A web server on 127.0.0.1 that records every request: the door must never fetch."""
    hits: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            hits.append(self.path)
            self.send_response(200)
            self.send_header("content-type", "image/png")
            self.end_headers()
            self.wfile.write(DOT_PNG)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    server.hits = hits  # type: ignore[attr-defined]
    server.url = f"http://127.0.0.1:{server.server_address[1]}"  # type: ignore[attr-defined]
    yield server
    server.shutdown()
    server.server_close()


async def test_attachments_reach_the_backend_and_urls_are_never_fetched(door_at: Any, sdk: Any, web: Any) -> None:
    connect = door_at()
    attachments = [
        {"type": "image", "data": DOT, "mimeType": "image/png", "name": "../../etc/dot.png"},
        {"type": "image", "uri": f"{web.url}/cat.png", "mimeType": "image/png"},
        {"type": "resource", "resource": {"uri": "file:///src/app.py", "mimeType": "text/x-python", "text": "x = 1\n"},
         "lines": [5, 10]},
        {"type": "resource_link", "uri": "file:///src/b.py", "name": "b.py"},
        {"type": "document", "data": base64.b64encode(PDF).decode(), "mimeType": "application/pdf", "name": "r.pdf"},
    ]
    async with connect() as session:
        result = await session.call_tool("ask", {"message": "look", "attachments": attachments})
        again = await session.call_tool("ask", {"message": "plain again"})
    assert not sdk.error(result), sdk.text(result)
    reply = result.content[0].text
    assert reply.startswith(
        f"Received: 2 image (image/png, {len(DOT_PNG)} bytes, dot.png; image/png, {web.url}/cat.png); "
        "1 resource (text/x-python, 6 bytes, file:///src/app.py lines 5-10); 1 resource_link (file:///src/b.py, b.py); "
        f"1 document (application/pdf, {len(PDF)} bytes, r.pdf). You said: look"
    ), reply
    assert web.hits == []  # the URL went to the agent as a URL
    assert sdk.text(again).startswith("You said: plain again")


async def test_the_agents_images_come_back_as_image_blocks(door_at: Any, sdk: Any) -> None:
    connect = door_at()
    progress: list[tuple[str, Any]] = []

    async def seen(value: float, total: float | None, message: str | None) -> None:
        progress.append((message or "", value))

    async with connect() as session:
        result = await session.call_tool("ask", {"message": "/draw /image a dot"}, progress_callback=seen)
    assert not sdk.error(result), sdk.text(result)
    text, *more = [dump(block) for block in result.content]
    assert text["type"] == "text" and text["text"].startswith("You said: a dot")
    # the draw tool's image, then the reply's own, in the order they came
    assert more == [
        {"type": "image", "data": DOT, "mimeType": "image/png", "_meta": {"onedoor/name": "dot.png"}},
        {"type": "image", "data": DOT, "mimeType": "image/png", "_meta": {"onedoor/name": "dot.png"}},
    ]
    assert base64.b64decode(more[0]["data"]) == DOT_PNG
    assert f"[image dot.png: image/png, {len(DOT_PNG)} bytes]\n" in [message for message, _ in progress]


async def test_a_thread_keeps_the_attachments(door_at: Any, sdk: Any, tmp_path: Path) -> None:
    db = tmp_path / "threads.sqlite3"
    connect = door_at("-o", f"sqlite.path={db}")
    async with connect() as session:
        first = await session.call_tool("ask", {"message": "see", "new_thread": True, "attachments": [
            {"type": "image", "data": DOT, "mimeType": "image/png", "name": "dot.png"}]})
        thread_id = (first.structuredContent if hasattr(first, "structuredContent") else first.structured_content)["thread"]
    store = SQLiteThreadStore(db)
    try:
        thread = await store.get("local", thread_id)
    finally:
        await store.close()
    user = next(m for m in thread.messages if m.role == "user")
    assert [(p.kind, p.media_type, p.data, p.name) for p in user.parts if p.kind != "text"] == [
        ("image", "image/png", DOT_PNG, "dot.png")]


# -- refusals: an isError result naming the reason, before any run ----------------------------


REFUSED = [
    ({"type": "image", "data": "not base64!", "mimeType": "image/png"}, "invalid", "not valid base64"),
    ({"type": "image", "data": base64.b64encode(b"GIF89a....").decode(), "mimeType": "image/png"}, "invalid",
     "the bytes are not image/png"),
    ({"type": "image", "uri": "file:///etc/passwd", "mimeType": "image/png"}, "invalid", "must be http(s)"),
    ({"type": "audio", "data": DOT, "mimeType": "image/png"}, "invalid", "cannot be image/png"),
    ({"type": "resource", "resource": {"uri": "file:///a"}}, "invalid", "either text or data"),
]
MALFORMED = [
    ("a string", "'attachments' must be an array"),
    (["x"], "attachments[0] must be an object"),
    ([{"type": "hologram"}], "'type' must be one of"),
    ([{"type": "image", "data": DOT, "mime_type": "image/png"}], "unknown field(s) 'mime_type'"),
    ([{"type": "image", "data": 5}], "'data' must be a string"),
    ([{"type": "text", "resource": {"uri": "x:y", "text": "t"}}], "'resource' belongs to a block of type resource"),
]


async def test_bad_attachments_are_refused_before_a_run(door_at: Any, sdk: Any, outcomes: Any, tmp_path: Path) -> None:
    db = tmp_path / "threads.sqlite3"
    connect = door_at("-o", f"sqlite.path={db}")
    async with connect() as session:
        refused = [await session.call_tool("ask", {"message": f"refused {n}", "new_thread": True, "attachments": [a]})
                   for n, (a, _, _) in enumerate(REFUSED)]
        malformed = [await session.call_tool("ask", {"message": f"malformed {n}", "attachments": a})
                     for n, (a, _) in enumerate(MALFORMED)]
        after = await session.call_tool("ask", {"message": "still serving"})
    for result, (_, reason, needle) in zip(refused, REFUSED):
        assert sdk.error(result) and needle in sdk.text(result), sdk.text(result)
        assert f"({reason})" in sdk.text(result) and meta(result)["onedoor/refused"] == reason
    for result, (_, needle) in zip(malformed, MALFORMED):
        assert sdk.error(result) and needle in sdk.text(result), sdk.text(result)
    assert sdk.text(after) == "You said: still serving (2 words, turn 1)"
    outcomes.wait_for(lambda r: r["message"] == "still serving")
    assert not [r for r in outcomes.read() if r["message"].startswith(("refused", "malformed"))]  # nothing ran
    store = SQLiteThreadStore(db)
    try:
        assert await store.list("local", limit=10) == []  # no thread was left behind
    finally:
        await store.close()


async def test_what_the_backend_does_not_take_is_refused(door_at: Any, sdk: Any, outcomes: Any) -> None:
    connect = door_at("-o", "scripted.accepts=document", "-o", "limits.max_part_bytes=100")
    async with connect() as session:
        tools = (await session.list_tools()).tools
        image = await session.call_tool("ask", {"message": "an image", "attachments": [
            {"type": "image", "data": DOT, "mimeType": "image/png"}]})
        big = await session.call_tool("ask", {"message": "a big pdf", "attachments": [
            {"type": "document", "data": base64.b64encode(PDF).decode(), "mimeType": "application/pdf"}]})
        text = await session.call_tool("ask", {"message": "a text resource", "attachments": [
            {"type": "resource", "uri": "file:///n.txt", "text": "notes"}]})
    schema = tools[0].inputSchema if hasattr(tools[0], "inputSchema") else tools[0].input_schema
    assert "this agent takes document and only resources with text" in schema["properties"]["attachments"]["description"]
    assert sdk.error(image) and meta(image)["onedoor/refused"] == "unsupported_content"
    assert "does not take image parts (it takes: document)" in sdk.text(image)
    assert sdk.error(big) and meta(big)["onedoor/refused"] == "too_large" and "limit is 100" in sdk.text(big)
    assert not sdk.error(text) and sdk.text(text).startswith("Received: 1 resource (5 bytes, file:///n.txt)")  # text reaches any backend
    outcomes.wait_for(lambda r: r["message"].startswith("a text resource"))
    assert not [r for r in outcomes.read() if r["message"] in ("an image", "a big pdf")]


# -- every kind of output part, through the SDK client (in memory: a backend of the test's own) --


WAV = b"RIFF\x24\x00\x00\x00WAVEfmt "


def made_parts() -> list[Any]:
    from onedoor import Part

    return [
        Part.media("audio", "audio/wav", data=WAV, name="beep.wav"),
        Part.media("video", "video/mp4", data=b"\x00\x00\x00\x18ftypmp42", name="clip one.mp4"),
        Part.media("document", "application/pdf", uri="https://example.com/r.pdf", name="r.pdf"),
        Part.resource("file:///src/app.py", text="x = 1\n", media_type="text/x-python", lines=(5, 10)),
        Part.resource("file:///src/logo.bin", data=b"\x01\x02", media_type="application/octet-stream"),
        Part.link("file:///src/b.py", name="b.py", media_type="text/x-python", size=12),
        Part.of_data({"n": 1, "ok": True}),
    ]


class Maker:
    """An agent whose reply carries one part of each kind."""

    def cancel(self) -> None:
        pass

    async def run(self, message: str, *, history: Any = None, context: Any = None) -> Any:
        from onedoor import ReplyPart, RunFinished, RunStarted, TextDelta

        yield RunStarted(context.run_id)
        yield TextDelta("made")
        for part in made_parts():
            yield ReplyPart(part)
        yield RunFinished(context.run_id, "made")


async def test_every_kind_of_part_becomes_its_mcp_block() -> None:
    from mcp import ClientSession
    from onedoor import ServeContext
    from onedoor.testing import kernel_for_agent, serve_in_memory
    from onedoor_door_mcp import McpOptions, door
    from onedoor_door_mcp.client import mcp_streams, read_timeout

    kernel = kernel_for_agent(Maker, "maker")
    ctx = ServeContext(kernel=kernel, options={"mcp": McpOptions()}, door_names=["mcp"])
    async with serve_in_memory(door(), ctx) as channel, mcp_streams(channel) as (read, write):
        async with ClientSession(read, write, read_timeout_seconds=read_timeout(15)) as session:
            await session.initialize()
            await session.list_tools()  # the client checks structuredContent against the outputSchema listed
            result = await session.call_tool("ask", {"message": "make"})
    assert not (getattr(result, "isError", None) or getattr(result, "is_error", None)), result
    blocks = [dump(block) for block in result.content]
    run_id = blocks[2]["resource"]["uri"].split("/")[3]  # onedoor://runs/{run_id}/parts/1/...
    assert blocks == [
        {"type": "text", "text": "made"},
        {"type": "audio", "data": base64.b64encode(WAV).decode(), "mimeType": "audio/wav", "_meta": {"onedoor/name": "beep.wav"}},
        {"type": "resource", "resource": {"uri": f"onedoor://runs/{run_id}/parts/1/clip%20one.mp4", "mimeType": "video/mp4",
                                          "blob": base64.b64encode(b"\x00\x00\x00\x18ftypmp42").decode()}},
        {"type": "resource_link", "uri": "https://example.com/r.pdf", "name": "r.pdf", "mimeType": "application/pdf"},
        {"type": "resource", "resource": {"uri": "file:///src/app.py", "mimeType": "text/x-python", "text": "x = 1\n",
                                          "_meta": {"onedoor/lines": [5, 10]}}},
        {"type": "resource", "resource": {"uri": "file:///src/logo.bin", "mimeType": "application/octet-stream",
                                          "blob": base64.b64encode(b"\x01\x02").decode()}},
        {"type": "resource_link", "uri": "file:///src/b.py", "name": "b.py", "mimeType": "text/x-python", "size": 12},
        {"type": "resource", "resource": {"uri": f"onedoor://runs/{run_id}/parts/6", "mimeType": "application/json",
                                          "text": '{"n": 1, "ok": true}'}},
    ]
