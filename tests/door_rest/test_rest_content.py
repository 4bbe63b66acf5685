"""Content over the REST door (#25): a message of parts in JSON, file uploads
(multipart/form-data), parts in replies, tool results and threads; refusals before a run.

The door on the HTTP transport's app, uvicorn in a thread on 127.0.0.1 (so a test can count
the runs the kernel started), httpx as the client; the scripted backend, which says what it
received ("Received: 1 image (image/png, 70 bytes, dot.png)"), answers ``/image`` with an
image part and ``/draw`` with a tool whose result is an image.
"""

from __future__ import annotations

import base64
import contextlib
from typing import Any, Iterator

import httpx
import pytest
from onedoor.builtins.scripted_extras import DOT_PNG
from onedoor.kernel import Limits
from onedoor.testing import scripted_kernel
from onedoor.threads.sqlite import SQLiteThreadStore
from onedoor_test_support import Recorder
from onedoor_transport_http import HttpOptions
from rest_helpers import parse_sse, rest_server

DOT = base64.b64encode(DOT_PNG).decode()
IMAGE = {"type": "image", "media_type": "image/png", "data": DOT, "name": "dot.png"}
JPEG = b"\xff\xd8\xff\xe0" + b"\x00" * 60


@contextlib.contextmanager
def served(limits: Limits | None = None, *, max_body: int = 1 << 20, **options: Any) -> Iterator[tuple[Any, httpx.Client]]:
    """(kernel, client) of a REST door on a scripted kernel with an in-memory thread store."""
    kernel = scripted_kernel(limits, store=SQLiteThreadStore(":memory:", max_thread_chars=5000), **options)
    kernel.hooks = Recorder()
    with rest_server(kernel, http=HttpOptions(port=0, max_body_bytes=max_body)) as server:
        with httpx.Client(base_url=server.base_url, timeout=60) as client:
            yield kernel, client


@pytest.fixture(scope="module")
def door() -> Iterator[tuple[Any, httpx.Client]]:
    with served(Limits(max_part_bytes=4096, max_parts=4)) as pair:
        yield pair


def check_error(r: httpx.Response, status: int, code: str, words: str = "") -> None:
    assert r.status_code == status, (r.status_code, r.text)
    body = r.json()
    assert set(body) == {"error", "detail"} and body["error"] == code, body
    assert words in body["detail"], body


def started(kernel: Any) -> int:
    return len(kernel.hooks.started)


# -- in: JSON parts, uploads ----------------------------------------------------------------
def test_a_json_message_of_text_and_an_image_reaches_the_backend(door):
    _, client = door
    r = client.post("/rest/chat", json={"message": [{"type": "text", "text": "what is this?"}, IMAGE]})
    assert r.status_code == 200, r.text
    assert r.json()["reply"].startswith("Received: 1 image (image/png, 70 bytes, dot.png). You said: what is this?")


def test_an_upload_with_a_message_and_files_reaches_the_backend(door):
    _, client = door
    r = client.post("/rest/chat", data={"message": "two files"}, files=[
        ("file", ("../../etc/dot.png", DOT_PNG, "image/png")),  # a path: only its base name is kept
        ("file", ("notes.txt", b"hello notes", "text/plain")),
    ])
    assert r.status_code == 200, r.text
    assert r.json()["reply"].startswith("Received: 1 image (image/png, 70 bytes, dot.png); 1 document (text/plain, "
                                        "11 bytes, notes.txt). You said: two files")


def test_an_upload_without_a_type_is_named_by_its_file_name_and_may_come_alone(door):
    _, client = door
    r = client.post("/rest/chat", files={"file": ("photo.jpg", JPEG, "application/octet-stream")})
    assert r.status_code == 200, r.text
    assert r.json()["reply"].startswith("Received: 1 image (image/jpeg, 64 bytes, photo.jpg).")


def test_a_stream_takes_an_upload_too(door):
    _, client = door
    r = client.post("/rest/chat/stream", data={"message": "look"}, files={"file": ("dot.png", DOT_PNG, "image/png")})
    events, _ = parse_sse(r.text)
    assert events[-1][0] == "run_finished" and events[-1][1]["text"].startswith("Received: 1 image")


def test_history_may_hold_parts(door):
    _, client = door
    history = [{"role": "user", "content": [{"type": "text", "text": "see"}, IMAGE]}, {"role": "assistant", "content": "ok"}]
    r = client.post("/rest/chat", json={"message": "and now?", "history": history})
    assert r.status_code == 200 and r.json()["reply"].endswith("turn 2)"), r.text


# -- refused before a run ------------------------------------------------------------------
@pytest.mark.parametrize("request_kwargs, status, code, words", [
    ({"files": {"file": ("cat.png", b"not a png at all", "image/png")}}, 422, "invalid_request",
     "the bytes are not image/png"),
    ({"json": {"message": [{**IMAGE, "data": "not base64!"}]}}, 422, "invalid_request", "not valid base64"),
    ({"json": {"message": [{**IMAGE, "data": base64.b64encode(JPEG).decode()}]}}, 422, "invalid_request",
     "the bytes are not image/png"),
    ({"json": {"message": [{"type": "image", "uri": "file:///etc/passwd", "media_type": "image/png"}]}}, 422,
     "invalid_request", "must be http(s) or data:"),
    ({"json": {"message": [{"type": "binary", "data": DOT}]}}, 422, "invalid_request", "message[0].type"),
    ({"files": {"file": ("big.png", DOT_PNG + b"\x00" * 5000, "image/png")}}, 413, "too_large", "limit is 4,096"),
    ({"json": {"message": [IMAGE] * 5}}, 413, "too_large", "at most 4 parts"),
    ({"files": [("file", ("dot.png", DOT_PNG, "image/png"))] * 5}, 422, "too_large", "at most 4 parts"),
    ({"data": {"message": "  "}, "files": {}}, 415, "unsupported_media_type", ""),  # a form post is not an upload
    ({"data": {"note": "x"}, "files": {"file": ("dot.png", DOT_PNG, "image/png")}}, 422, "invalid_request",
     "unknown field 'note'"),
    ({"files": {"message": ("m.txt", b"hi", "text/plain")}}, 422, "invalid_request", "message: a text field"),
    ({"data": {"file": "not a file", "message": "hi"}, "files": {"file2": ("a.png", DOT_PNG, "image/png")}}, 422,
     "invalid_request", ""),
    ({"content": b"--x\r\nbroken", "headers": {"content-type": "multipart/form-data"}}, 400, "bad_multipart",
     "boundary"),
])
def test_content_that_cannot_be_taken_is_refused_before_any_run(door, request_kwargs, status, code, words):
    kernel, client = door
    before = started(kernel)
    for path in ("/rest/chat", "/rest/chat/stream"):
        check_error(client.post(path, **request_kwargs), status, code, words)
    assert started(kernel) == before
    assert client.post("/rest/chat", json={"message": "still here"}).status_code == 200


@pytest.mark.parametrize("path", ["/rest/threads", "/rest/runs/r1/answers", "/rest/runs/r1/answers/stream"])
def test_an_upload_to_a_call_that_takes_json_only_is_415(door, path):
    _, client = door
    r = client.post(path, data={"title": "x"}, files={"file": ("dot.png", DOT_PNG, "image/png")})
    check_error(r, 415, "unsupported_media_type", "application/json")


def test_a_kind_the_backend_does_not_take_is_415_and_text_like_parts_still_go():
    with served(accepts="") as (kernel, client):  # a text-only backend
        for body in ({"json": {"message": [IMAGE]}}, {"files": {"file": ("dot.png", DOT_PNG, "image/png")}}):
            check_error(client.post("/rest/chat", **body), 415, "unsupported_content", "does not take image")
        assert started(kernel) == 0
        resource = {"type": "resource", "uri": "file:///notes.md", "text": "line one", "lines": [3, 3]}
        r = client.post("/rest/chat", json={"message": [{"type": "text", "text": "read"}, resource]})
        assert r.status_code == 200 and "line one" in r.json()["reply"], r.text


def test_the_index_says_what_the_backend_takes(door):
    _, client = door
    assert client.get("/rest/").json()["accepts"] == ["audio", "document", "image", "resource", "video"]
    with served(accepts="image") as (_, text_and_images):
        assert text_and_images.get("/rest/").json()["accepts"] == ["image"]


def test_the_media_type_allow_list_is_the_servers():
    with served(Limits(media_types=("image/*",))) as (_, client):
        pdf = {"type": "document", "media_type": "application/pdf", "data": base64.b64encode(b"%PDF-1.4 x").decode()}
        check_error(client.post("/rest/chat", json={"message": [pdf]}), 415, "unsupported_content", "application/pdf")
        assert client.post("/rest/chat", json={"message": [IMAGE]}).status_code == 200


# -- out: reply parts, tool results ----------------------------------------------------------
def test_a_reply_with_an_image_answers_its_parts_in_order(door):
    _, client = door
    body = client.post("/rest/chat", json={"message": "/image here you go"}).json()
    parts = body["parts"]
    image = next(p for p in parts if p["type"] == "image")
    assert base64.b64decode(image["data"]) == DOT_PNG and image["media_type"] == "image/png"
    assert "".join(p["text"] for p in parts if p["type"] == "text") == body["reply"]
    assert "parts" not in client.post("/rest/chat", json={"message": "plain text"}).json()


def test_the_stream_sends_reply_parts_and_tool_result_parts(door):
    _, client = door
    events, _ = parse_sse(client.post("/rest/chat/stream", json={"message": "/image /draw a dot"}).text)
    names = [name for name, _ in events]
    part = next(data for name, data in events if name == "reply_part")["part"]
    assert base64.b64decode(part["data"]) == DOT_PNG
    drawn = next(data for name, data in events if name == "tool_finished" and data["name"] == "draw")
    assert drawn["parts"][0]["type"] == "image" and base64.b64decode(drawn["parts"][0]["data"]) == DOT_PNG
    assert names[-1] == "run_finished"


def test_a_tool_result_with_an_image_is_in_the_json_reply(door):
    _, client = door
    calls = client.post("/rest/chat", json={"message": "/draw a dot"}).json()["tool_calls"]
    draw = next(c for c in calls if c["name"] == "draw")
    assert [p["media_type"] for p in draw["parts"]] == ["image/png"]
    assert all(c["parts"] == [] for c in calls if c["name"] != "draw")


# -- threads keep the parts -----------------------------------------------------------------------
def test_a_thread_keeps_what_was_sent_and_what_came_back(door):
    _, client = door
    thread_id = client.post("/rest/threads", json={}).json()["id"]
    r = client.post(f"/rest/threads/{thread_id}/chat", data={"message": "/image keep this"},
                    files={"file": ("dot.png", DOT_PNG, "image/png")})
    assert r.status_code == 200 and r.json()["thread_id"] == thread_id, r.text
    user, *_, reply = client.get(f"/rest/threads/{thread_id}").json()["messages"]
    sent = next(p for p in user["parts"] if p["type"] == "image")
    assert base64.b64decode(sent["data"]) == DOT_PNG and sent["name"] == "dot.png"
    assert "[image dot.png: image/png, 70 bytes]" in user["content"]  # what a text-only reader sees
    assert any(p["type"] == "image" for p in reply["parts"]) and reply["usage"][0]["model"] == "scripted"


def test_a_message_whose_bytes_would_overfill_the_thread_is_refused_before_it_runs(door):
    kernel, client = door  # the store keeps at most 5,000 characters a thread; bytes of parts count
    thread_id = client.post("/rest/threads", json={}).json()["id"]
    big = {**IMAGE, "data": base64.b64encode(DOT_PNG + b"\x00" * 3000).decode()}
    before = started(kernel)
    assert client.post(f"/rest/threads/{thread_id}/chat", json={"message": [big]}).status_code == 200
    kept = client.get(f"/rest/threads/{thread_id}").json()["message_count"]
    check_error(client.post(f"/rest/threads/{thread_id}/chat", json={"message": [big]}), 413, "thread_too_large")
    assert started(kernel) == before + 1
    assert client.get(f"/rest/threads/{thread_id}").json()["message_count"] == kept
