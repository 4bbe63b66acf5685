"""Content through the A2A door, with the Python client (a2a-sdk) against real `onedoor serve` processes.

A message's ``raw``, ``url`` and ``data`` parts (and A2A 0.3's FilePart and DataPart)
reach the backend as onedoor parts (the scripted backend says what it received), alone
too; a type the agent does not take is ``ContentTypeNotSupportedError`` before any task
exists; the card's input and output modes are exactly what the door takes and sends
(probed, on servers whose backends take different kinds); reply and tool-result parts go
out as artifact parts; hostile content gets clear errors and the server serves on.
"""

from __future__ import annotations

import base64
import json
import uuid
from importlib.metadata import version
from typing import Any, Iterator

import httpx
import pytest
from a2a.helpers import new_data_part, new_raw_part, new_text_part, new_url_part
from a2a.types import GetTaskRequest, TaskState
from a2a.utils.errors import ContentTypeNotSupportedError
from a2a_helpers import TOKEN, A2aServer, ask_parts, authorized, clients, reply_of, send
from onedoor.builtins.scripted_extras import DOT_PNG
from onedoor.testing.hostile import traceback_in

pytestmark = pytest.mark.timeout(180)

COMPLETED = TaskState.TASK_STATE_COMPLETED
PDF = b"%PDF-1.4\n% a test document\n"
WAV = b"RIFF\x24\x00\x00\x00WAVEfmt "
MP4 = b"\x00\x00\x00\x18ftypmp42"
PNG_PART = new_raw_part(DOT_PNG, "image/png", "dot.png")
PART_LIMIT = 4096  # limits.max_part_bytes of the `strict` server
# one sample file per media type the probes try: (media type, bytes)
SAMPLES = {"image/png": DOT_PNG, "audio/wav": WAV, "video/mp4": MP4, "application/pdf": PDF,
           "text/markdown": b"# notes\n", "text/plain": b"plain words\n", "application/json": b'{"k": [1, 2]}',
           "font/woff": b"wOFF\x00\x01"}
V03 = {"Authorization": f"Bearer {TOKEN}"}  # no A2A-Version header: the 0.3 compatibility endpoint
V1 = {**V03, "A2A-Version": "1.0"}
# a2a-sdk 1.2.3's 0.3 layer answers every A2A error the handler raises as -32603 (with its message)
V03_REFUSAL = -32005 if tuple(int(n) for n in version("a2a-sdk").split(".")[:2]) >= (1, 3) else -32603


def serve(tmp_path_factory: pytest.TempPathFactory, *options: str) -> Iterator[A2aServer]:
    tmp = tmp_path_factory.mktemp("content")
    server = A2aServer(["--token", TOKEN, "-o", f"sqlite.path={tmp / 'threads.sqlite3'}", *options], tmp)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def text_only(tmp_path_factory: pytest.TempPathFactory) -> Iterator[A2aServer]:
    """A backend that takes text only."""
    yield from serve(tmp_path_factory, "-o", "scripted.accepts=")


@pytest.fixture(scope="module")
def pngs_and_pdfs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[A2aServer]:
    """A backend that takes images and documents, on a server that takes only PNGs and PDFs."""
    yield from serve(tmp_path_factory, "-o", "scripted.accepts=image,document",
                     "-o", "limits.media_types=image/png,application/pdf")


@pytest.fixture(scope="module")
def strict(tmp_path_factory: pytest.TempPathFactory) -> Iterator[A2aServer]:
    """Small content limits, for the hostile cases."""
    yield from serve(tmp_path_factory, "-o", f"limits.max_part_bytes={PART_LIMIT}", "-o", "limits.max_parts=4")


def described(kind: str, *what: str) -> str:
    """How the scripted backend names a part it received."""
    return f"1 {kind} ({', '.join(what)})"


def tasks_of(server: A2aServer) -> int:
    body = {"jsonrpc": "2.0", "id": 9, "method": "ListTasks", "params": {}}
    return len(httpx.post(server.a2a_url + "/", json=body, headers=V1, timeout=30).json()["result"].get("tasks", []))


def rpc(server: A2aServer, message: dict[str, Any], *, method: str = "SendMessage", headers: dict[str, str] = V1) -> Any:
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {"message": message}}
    response = httpx.post(server.a2a_url + "/", json=body, headers=headers, timeout=30)
    if response.status_code != 200:  # the HTTP transport refused it before the door
        return {"error": {"code": response.status_code, "message": response.json()["detail"],
                          "data": response.json()}}
    return response.json()


def v1_message(*parts: dict[str, Any]) -> dict[str, Any]:
    return {"messageId": uuid.uuid4().hex, "role": "ROLE_USER", "parts": list(parts)}


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON"])
async def test_raw_url_and_data_parts_reach_the_backend(served: Any, binding: str) -> None:
    parts = [new_text_part("look at these"), PNG_PART, new_url_part("https://example.com/report.pdf", "application/pdf"),
             new_data_part({"n": 3, "tags": ["a"]})]
    async with authorized() as http:
        _, client, _ = await clients(http, served.a2a_url, binding)
        task = await send(client, ask_parts(*parts))
    assert task.status.state == COMPLETED
    received = "; ".join([described("image", "image/png", f"{len(DOT_PNG):,} bytes", "dot.png"),
                          described("document", "application/pdf", "https://example.com/report.pdf"),
                          described("data", "application/json")])
    assert reply_of(task).startswith(f"Received: {received}. You said: look at these"), reply_of(task)
    data = reply_of(task).rsplit("\n", 1)[-1].rsplit(" (", 1)[0]  # the data part, as the text reader sees it
    assert json.loads(data) == {"n": 3, "tags": ["a"]} and '"n":3,' in data or data.endswith('"n":3}'), data
    # (whole numbers stay integers: a protobuf Value holds doubles)


@pytest.mark.parametrize(("part", "said"), [
    (PNG_PART, described("image", "image/png", f"{len(DOT_PNG):,} bytes", "dot.png")),
    (new_url_part("https://example.com/song.mp3"), described("audio", "audio/mpeg", "https://example.com/song.mp3")),
    (new_url_part("https://example.com/page"), described("resource_link", "https://example.com/page")),
    (new_data_part([1, 2]), described("data", "application/json")),
], ids=["raw", "url-typed-by-its-name", "url-of-no-type", "data"])
async def test_a_part_alone_is_a_message(served: Any, part: Any, said: str) -> None:
    async with authorized() as http:
        _, client, _ = await clients(http, served.a2a_url)
        task = await send(client, ask_parts(part))
    assert task.status.state == COMPLETED and reply_of(task).startswith(f"Received: {said}. You said: "), reply_of(task)


@pytest.mark.parametrize(("binding", "streaming"), [("JSONRPC", False), ("JSONRPC", True), ("HTTP+JSON", False)])
async def test_a_type_the_agent_does_not_take_is_refused_before_any_task(served: Any, binding: str,
                                                                          streaming: bool) -> None:
    before = tasks_of(served)
    async with authorized() as http:
        _, plain, streams = await clients(http, served.a2a_url, binding)
        with pytest.raises(ContentTypeNotSupportedError, match="font/woff is not a type this agent takes"):
            async for _ in (streams if streaming else plain).send_message(
                    ask_parts(new_text_part("a font"), new_raw_part(SAMPLES["font/woff"], "font/woff", "a.woff"))):
                pass
    assert tasks_of(served) == before
    assert traceback_in(served.stderr()) is None, served.stderr()[-3000:]


def sample_part(mode: str) -> Any:
    """A file part of a card mode: the pattern's first sample type."""
    media_type = next(t for t in SAMPLES if t == mode or (mode.endswith("/*") and t.startswith(mode[:-1])))
    return new_raw_part(SAMPLES[media_type], media_type, "sample")


def covered(media_type: str, modes: list[str]) -> bool:
    return any(m == media_type or (m.endswith("/*") and media_type.startswith(m[:-1])) for m in modes)


@pytest.mark.parametrize("which", ["served", "text_only", "pngs_and_pdfs"])
async def test_the_card_modes_are_what_the_door_takes_and_sends(which: str, request: pytest.FixtureRequest) -> None:
    server = request.getfixturevalue(which)
    async with authorized() as http:
        card, client, _ = await clients(http, server.a2a_url)
        takes = list(card.default_input_modes)
        assert list(card.default_output_modes) == takes
        assert takes[:2] == ["text/plain", "application/json"]
        for mode in takes:  # a file of every mode the card names is taken
            task = await send(client, ask_parts(new_text_part(f"a {mode} file"), sample_part(mode)))
            assert task.status.state == COMPLETED, (mode, task.status)
        for media_type, data in SAMPLES.items():  # and one of a type it does not name is refused
            if covered(media_type, takes):
                continue
            with pytest.raises(ContentTypeNotSupportedError):
                await send(client, ask_parts(new_text_part("no"), new_raw_part(data, media_type, "x")))
        image = await send(client, ask_parts(new_text_part("/image a picture")))
    parts = [p for a in image.artifacts for p in a.parts]
    if covered("image/png", takes):  # what it sends: the reply's image as a file, or named in text
        assert any(p.raw == DOT_PNG and p.media_type == "image/png" for p in parts), parts
    else:
        assert not any(p.raw for p in parts) and "[image dot.png: image/png" in reply_of(image), parts
    assert traceback_in(server.stderr()) is None, server.stderr()[-3000:]


async def test_each_server_names_its_own_modes(served: Any, text_only: Any, pngs_and_pdfs: Any) -> None:
    """The modes come from the backend and the server's limits, not from a fixed list."""
    async with authorized() as http:
        cards = [(await clients(http, s.a2a_url))[0] for s in (served, text_only, pngs_and_pdfs)]
    modes = [list(card.default_input_modes) for card in cards]
    assert modes[1] == ["text/plain", "application/json"]
    assert modes[2] == ["text/plain", "application/json", "image/png", "application/pdf"]
    assert {"image/*", "audio/*", "video/*"} <= set(modes[0])


async def test_text_and_json_files_go_as_text_to_a_backend_without_documents(text_only: Any) -> None:
    async with authorized() as http:
        _, client, _ = await clients(http, text_only.a2a_url)
        task = await send(client, ask_parts(new_text_part("read this"), new_raw_part(b"line one\n", "text/plain", "a.txt"),
                                            new_raw_part(b'{"k": 1}', "application/json", "k.json")))
        with pytest.raises(ContentTypeNotSupportedError, match="image/png"):
            await send(client, ask_parts(new_text_part("see"), PNG_PART))
    reply = reply_of(task)
    assert reply.startswith(f"Received: {described('data', 'application/json')}. You said: read this"), reply
    assert "--- a.txt ---\nline one" in reply and '{"k":1}' in reply


async def test_reply_and_tool_result_parts_go_out_as_artifact_parts(served: Any) -> None:
    async with authorized() as http:
        _, client, streaming = await clients(http, served.a2a_url)
        updates, task_id = [], ""
        async for event in streaming.send_message(ask_parts(new_text_part("/image /draw make pictures"))):
            if event.HasField("task"):
                task_id = event.task.id
            elif event.HasField("artifact_update"):
                updates.append(event.artifact_update)
        stored = await client.get_task(GetTaskRequest(id=task_id))
        described_only = await send(client, ask_parts(new_text_part("/image text please"),
                                                      accepted_output_modes=["text/plain"]))
    reply = [u for u in updates if u.artifact.artifact_id == "reply"]
    assert any(p.raw == DOT_PNG for u in reply[:-1] for p in u.artifact.parts)  # streamed in its place
    final = [p.WhichOneof("content") for p in reply[-1].artifact.parts]
    assert reply[-1].last_chunk and final == ["raw", "text"], final  # the image, then the text as one part
    by_id = {a.artifact_id: a for a in stored.artifacts}
    assert [(p.raw, p.media_type, p.filename) for p in by_id["reply"].parts[:1]] == [(DOT_PNG, "image/png", "dot.png")]
    tools = [a for a in stored.artifacts if a.artifact_id.startswith("tool-")]
    assert len(tools) == 1 and tools[0].name == "draw" and tools[0].metadata["onedoor"] == "tool_result"
    assert [(p.raw, p.media_type) for p in tools[0].parts] == [(DOT_PNG, "image/png")]
    # a client that takes only text gets the image named in the text
    assert not any(p.raw for a in described_only.artifacts for p in a.parts)
    assert "[image dot.png: image/png" in reply_of(described_only)


def test_a2a_0_3_file_and_data_parts_reach_the_backend(served: Any) -> None:
    parts = [{"kind": "text", "text": "old client"},
             {"kind": "file", "file": {"bytes": b64(DOT_PNG), "mimeType": "image/png", "name": "dot.png"}},
             {"kind": "file", "file": {"uri": "https://example.com/a.pdf", "mimeType": "application/pdf"}},
             {"kind": "data", "data": {"n": 1}}]
    message = {"kind": "message", "messageId": uuid.uuid4().hex, "role": "user", "parts": parts}
    task = rpc(served, message, method="message/send", headers=V03)["result"]
    assert task["kind"] == "task" and task["status"]["state"] == "completed", task
    received = "; ".join([described("image", "image/png", f"{len(DOT_PNG):,} bytes", "dot.png"),
                          described("document", "application/pdf", "https://example.com/a.pdf"),
                          described("data", "application/json")])
    text = "".join(p["text"] for a in task["artifacts"] for p in a["parts"])
    assert text.startswith(f"Received: {received}. You said: old client"), text
    font = {**message, "parts": [{"kind": "file", "file": {"bytes": b64(SAMPLES["font/woff"]), "mimeType": "font/woff"}}]}
    refused = rpc(served, {**font, "messageId": uuid.uuid4().hex}, method="message/send", headers=V03)
    assert refused["error"]["code"] == V03_REFUSAL and "font/woff" in refused["error"]["message"], refused
    body = {"jsonrpc": "2.0", "id": 2, "method": "message/stream", "params": {"message": {**font, "messageId": "s"}}}
    streamed = httpx.post(served.a2a_url + "/", json=body, headers=V03, timeout=30).text
    assert f'"code":{V03_REFUSAL}' in streamed.replace(" ", "") and "font/woff" in streamed, streamed
    assert traceback_in(served.stderr()) is None, served.stderr()[-3000:]


def hostile_cases() -> list[Any]:
    """(method, message, JSON-RPC code (or the HTTP status of the transport's refusal), the refusal's
    code or '' for the SDK's own error), by name."""
    big_png = b"\x89PNG\r\n\x1a\n" + b"\x00" * PART_LIMIT
    deep: Any = 1
    for _ in range(80):
        deep = [deep]
    cases = [
        ("bad-base64", "SendMessage", v1_message({"raw": "not*base64!", "mediaType": "image/png"}), -32602, ""),
        ("lying-media-type", "SendMessage", v1_message({"raw": b64(b"GIF89a..."), "mediaType": "image/png"}),
         -32602, "invalid_request"),
        ("oversize", "SendMessage", v1_message({"raw": b64(big_png), "mediaType": "image/png"}), -32602, "too_large"),
        ("too-many-parts", "SendMessage", v1_message(*[{"data": {"i": i}} for i in range(5)]), -32602, "too_large"),
        ("file-url", "SendMessage", v1_message({"url": "file:///etc/passwd", "mediaType": "application/pdf"}),
         -32602, "invalid_request"),
        ("empty-part", "SendMessage", v1_message({"mediaType": "image/png"}), -32602, "invalid_request"),
        ("deep-data", "SendMessage", v1_message({"data": deep}), 400, "bad_json"),  # the transport's JSON limits
        ("bad-state-version", "SendMessage", v1_message({"data": {"a": 1}, "metadata": {
            "onedoor": "state", "state_version": 1.5}}), -32602, "invalid_request"),
        ("not-a-type", "SendMessage", v1_message({"raw": b64(b"x"), "mediaType": "no type"}), -32602, "invalid_request"),
    ]
    for name, data in (("0.3-bad-base64", "%%%"), ("0.3-bad-padding", "abc")):
        message = {"kind": "message", "messageId": "m", "role": "user",
                   "parts": [{"kind": "file", "file": {"bytes": data, "mimeType": "image/png"}}]}
        cases.append((name, "message/send", message, -32602, "invalid_request"))
    return [pytest.param(*case[1:], id=case[0]) for case in cases]


@pytest.mark.parametrize(("method", "message", "code", "refusal"), hostile_cases())
def test_hostile_content_gets_a_clear_error_and_the_server_serves_on(strict: Any, method: str, message: dict[str, Any],
                                                                     code: int, refusal: str) -> None:
    before = tasks_of(strict)
    answer = rpc(strict, message, method=method, headers=V1 if method == "SendMessage" else V03)
    error = answer.get("error")
    assert error is not None and error["code"] == code and error["message"], answer
    if refusal:
        data = error["data"][0]["metadata"] if isinstance(error["data"], list) else error["data"]
        assert data["error"] == refusal and data["detail"], error
    if method == "SendMessage":  # the HTTP+JSON binding answers alike
        rest = httpx.post(strict.a2a_url + "/rest/message:send", json={"message": message}, headers=V1, timeout=30)
        assert 400 <= rest.status_code < 500, rest.text
        if refusal:
            assert rest.json()["error"] == refusal, rest.text
    assert tasks_of(strict) == before  # no task made
    after = rpc(strict, v1_message({"text": "still here"}))
    assert after["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED", after
    assert strict.alive() and traceback_in(strict.stderr()) is None, strict.stderr()[-3000:]


def test_a_part_that_would_overfill_its_context_is_refused_before_any_task(tmp_path_factory: pytest.TempPathFactory,
                                                                             ) -> None:
    """The thread's size limit counts a part's bytes (``sqlite.max_thread_chars``): the
    image that would pass it gets -32602 ``thread_too_large`` before a task exists, and the
    context goes on (before, only the text was counted and the run failed keeping it)."""
    image = {"raw": b64(b"\x89PNG\r\n\x1a\n" + bytes(20_000)), "mediaType": "image/png"}
    for server in serve(tmp_path_factory, "-o", "sqlite.max_thread_chars=30000"):
        context = uuid.uuid4().hex
        first = rpc(server, {**v1_message({"text": "look"}, image), "contextId": context})
        assert first["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED", first
        before = tasks_of(server)
        refused = rpc(server, {**v1_message({"text": "and this"}, image), "contextId": context})
        error = refused.get("error")
        assert error is not None and error["code"] == -32602, refused
        data = error["data"][0]["metadata"] if isinstance(error["data"], list) else error["data"]
        assert data["error"] == "thread_too_large" and "30000" in data["detail"], error
        assert tasks_of(server) == before, "no task was made"
        after = rpc(server, {**v1_message({"text": "still here?"}), "contextId": context})
        assert after["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED", after
        assert traceback_in(server.stderr()) is None, server.stderr()[-3000:]
