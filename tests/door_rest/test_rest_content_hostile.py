"""Hostile content on the REST door: the shared corpus (onedoor.testing.hostile) over a
message of parts, and the REST door's own cases (uploads, names, URLs, sizes, nesting).

Each case gets a clear 4xx JSON error (or a normal reply, for what is harmless), never a 5xx
or a traceback in the server's log; nothing is half-stored (a refused turn leaves its thread
as it was) and the server keeps serving. The door on uvicorn in a thread on 127.0.0.1, so the
test counts the runs the kernel started.
"""

from __future__ import annotations

import base64
import contextlib
import json
import logging
from typing import Any, Iterator

import httpx
import pytest
from onedoor.builtins.scripted_extras import DOT_PNG
from onedoor.kernel import Limits
from onedoor.testing import scripted_kernel
from onedoor.testing.hostile import all_raw, mutations, traceback_in
from onedoor.threads.sqlite import SQLiteThreadStore
from onedoor_test_support import Recorder, wait_for
from onedoor_transport_http import HttpOptions
from rest_helpers import rest_server

DOT = base64.b64encode(DOT_PNG).decode()
IMAGE = {"type": "image", "media_type": "image/png", "data": DOT, "name": "dot.png"}
URLSAFE = base64.urlsafe_b64encode(DOT_PNG + b"\xfb\xff\xfe").decode()  # "-" and "_" where base64 has "+" and "/"
TEMPLATE = {"message": [{"type": "text", "text": "look"}, IMAGE], "history": [{"role": "user", "content": [IMAGE]}],
            "state": {"a": 1}}


class ServerErrors(logging.Handler):
    """Everything logged at ERROR while the cases run (an exception out of the app would be here)."""

    def __init__(self) -> None:
        super().__init__(level=logging.ERROR)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))


@contextlib.contextmanager
def hostile_door() -> Iterator[tuple[Any, httpx.Client, ServerErrors]]:
    kernel = scripted_kernel(Limits(max_part_bytes=8192, max_parts=8, max_message_chars=20_000),
                             store=SQLiteThreadStore(":memory:"))
    kernel.hooks = Recorder()
    errors = ServerErrors()
    logging.getLogger().addHandler(errors)
    try:
        with rest_server(kernel, http=HttpOptions(port=0, max_body_bytes=512 * 1024)) as server:
            with httpx.Client(base_url=server.base_url, timeout=60) as client:
                yield kernel, client, errors
    finally:
        logging.getLogger().removeHandler(errors)
    logs = "\n".join(errors.lines)
    assert traceback_in(logs) is None and not errors.lines, logs[-3000:]


def check(r: httpx.Response, name: str) -> None:
    assert r.status_code < 500, (name, r.status_code, r.text[:300])
    if r.status_code >= 400:
        assert set(r.json()) == {"error", "detail"}, (name, r.text[:300])
        assert "Traceback" not in r.text


@pytest.mark.timeout(600)
def test_the_shared_corpus_over_a_message_of_parts():
    with hostile_door() as (kernel, client, _):
        cases = all_raw(line_framed=False) + list(mutations(TEMPLATE))
        assert len(cases) > 300
        statuses: dict[int, int] = {}
        for index, case in enumerate(cases):
            path = ("/rest/chat", "/rest/chat/stream")[index % 2]
            r = client.post(path, content=case.payload, headers={"content-type": "application/json"})
            statuses[r.status_code] = statuses.get(r.status_code, 0) + 1
            check(r, case.name)
        wait_for(lambda: kernel.active_runs == 0, "every run to end")
        assert client.post("/rest/chat", json=TEMPLATE).json()["reply"].startswith("Received: 1 image")
    print(f"\nshared corpus over parts: {len(cases)} cases, statuses {statuses}")


def _nested(depth: int) -> Any:
    value: Any = "bottom"
    for _ in range(depth):
        value = {"a": value}
    return value


def _png_as(media_type: str, **extra: Any) -> dict[str, Any]:
    return {**IMAGE, "media_type": media_type, **extra}


# (name, JSON message, expected status, error code or "" for a reply)
JSON_CASES: list[tuple[str, Any, int, str]] = [
    ("base64-with-newlines", [{**IMAGE, "data": DOT[:20] + "\n" + DOT[20:]}], 422, "invalid_request"),
    ("base64-url-alphabet", [{**IMAGE, "data": URLSAFE}], 422, "invalid_request"),
    ("base64-unpadded", [{**IMAGE, "data": DOT.rstrip("=")}], 422, "invalid_request"),
    ("png-claiming-jpeg", [_png_as("image/jpeg")], 422, "invalid_request"),
    ("png-as-audio", [{**_png_as("audio/mpeg"), "type": "audio"}], 422, "invalid_request"),
    ("image-as-document", [{**IMAGE, "type": "document"}], 422, "invalid_request"),
    ("media-type-with-crlf", [_png_as("image/png\r\nX-Injected: 1")], 422, "invalid_request"),
    ("media-type-params", [_png_as("image/png; charset=binary")], 422, "invalid_request"),  # the schema: type/subtype
    ("data-and-url", [{**IMAGE, "uri": "https://example.com/a.png"}], 422, "invalid_request"),
    ("no-data-no-url", [{"type": "image", "media_type": "image/png"}], 422, "invalid_request"),
    ("file-url-image", [{"type": "image", "media_type": "image/png", "uri": "file:///etc/passwd"}], 422,
     "invalid_request"),
    ("javascript-url", [{"type": "image", "media_type": "image/png", "uri": "javascript:alert(1)"}], 422,
     "invalid_request"),
    ("data-url-not-base64", [{"type": "image", "uri": "data:image/png,hello"}], 422, "invalid_request"),
    ("data-url-lying", [{"type": "image", "uri": "data:image/png;base64," + base64.b64encode(b"GIF89a..").decode()}],
     422, "invalid_request"),
    ("url-image-is-not-fetched", [{"type": "image", "media_type": "image/png", "uri": "http://127.0.0.1:1/x.png"}],
     200, ""),
    ("file-link-outside-the-workspace", [{"type": "resource_link", "uri": "file:///etc/shadow"}], 200, ""),
    ("resource-lines-backwards", [{"type": "resource", "uri": "file:///a.py", "text": "x", "lines": [9, 2]}], 422,
     "invalid_request"),
    ("resource-lines-three", [{"type": "resource", "uri": "file:///a.py", "text": "x", "lines": [1, 2, 3]}], 422,
     "invalid_request"),
    ("negative-size", [{"type": "resource_link", "uri": "https://a/b", "size": -1}], 422, "invalid_request"),
    ("metadata-not-object", [{**IMAGE, "metadata": [1]}], 422, "invalid_request"),
    ("unknown-part-field", [{**IMAGE, "mimeType": "image/png"}], 422, "invalid_request"),
    ("legacy-binary-part", [{"type": "binary", "mimeType": "image/png", "data": DOT}], 422, "invalid_request"),
    ("part-not-object", ["just text"], 422, "invalid_request"),
    ("nested-part-list", [[IMAGE]], 422, "invalid_request"),
    ("empty-part-list", [], 422, "invalid_request"),
    ("too-many-parts", [{"type": "text", "text": "x"}] * 9, 413, "too_large"),
    ("many-parts", [{"type": "text", "text": "x"}] * 5000, 413, "too_large"),
    ("part-over-the-limit", [{**IMAGE, "data": base64.b64encode(DOT_PNG + b"\0" * 9000).decode()}], 413, "too_large"),
    ("data-nested-60", [{"type": "data", "value": _nested(60)}], 200, ""),
    ("text-over-the-limit", [{"type": "text", "text": "t" * 20_001}], 413, "too_large"),
    ("name-traversal-and-escapes", [{**IMAGE, "name": "../../\x1b[31mevil\u202e\x00.png"}], 200, ""),
    ("name-very-long", [{**IMAGE, "name": "n" * 10_000 + ".png"}], 200, ""),
]


@pytest.mark.timeout(300)
def test_the_doors_own_content_cases_and_nothing_is_half_stored():
    with hostile_door() as (kernel, client, _):
        thread_id = client.post("/rest/threads", json={}).json()["id"]
        for name, message, status, code in JSON_CASES:
            before = len(kernel.hooks.started)
            count = client.get(f"/rest/threads/{thread_id}").json()["message_count"]
            r = client.post(f"/rest/threads/{thread_id}/chat", json={"message": message})
            check(r, name)
            assert r.status_code == status, (name, r.status_code, r.text[:300])
            if code:
                assert r.json()["error"] == code, (name, r.text[:300])
                assert len(kernel.hooks.started) == before, name  # refused before a run
                assert client.get(f"/rest/threads/{thread_id}").json()["message_count"] == count, name
        names = [p.get("name") for m in client.get(f"/rest/threads/{thread_id}").json()["messages"]
                 for p in m.get("parts", ()) if p["type"] == "image" and m["role"] == "user"]
        # a safe base name: no directories, no control or format characters (the escape, the RTL override)
        assert "[31mevil.png" in names and all(n is None or ("/" not in n and len(n) <= 200) for n in names), names


def _upload(*parts: tuple[str, bytes], boundary: str = "b0undary") -> tuple[bytes, dict[str, str]]:
    """A multipart body written out by hand: (each part's headers, its bytes)."""
    body = b"".join(b"--" + boundary.encode() + b"\r\n" + head.encode("latin-1") + b"\r\n\r\n" + data + b"\r\n"
                    for head, data in parts) + b"--" + boundary.encode() + b"--\r\n"
    return body, {"content-type": f"multipart/form-data; boundary={boundary}"}


def _file(name: str, media_type: str = "image/png", data: bytes = DOT_PNG) -> tuple[str, bytes]:
    return f'Content-Disposition: form-data; name="file"; filename="{name}"\r\nContent-Type: {media_type}', data


MESSAGE = ('Content-Disposition: form-data; name="message"', b"look")

UPLOAD_CASES: list[tuple[str, tuple[bytes, dict[str, str]], int, str]] = [
    ("traversal-file-name", _upload(_file("../../../../etc/passwd.png")), 200, ""),
    ("lying-part-type", _upload(_file("a.png", "image/jpeg")), 422, "invalid_request"),
    ("part-type-with-params", _upload(_file("a.png", "image/png; charset=binary")), 200, ""),
    ("no-part-type-unknown-name", _upload((
        'Content-Disposition: form-data; name="file"; filename="blob"', b"\x00\x01")), 200, ""),
    ("empty-file-name", _upload(_file("")), 200, ""),
    ("file-over-the-limit", _upload(_file("big.png", data=DOT_PNG + b"\0" * 9000)), 413, "too_large"),
    ("too-many-files", _upload(*[_file(f"{i}.png") for i in range(9)]), 422, "too_large"),
    ("two-messages", _upload(MESSAGE, MESSAGE), 422, "invalid_request"),
    ("message-as-file", _upload(('Content-Disposition: form-data; name="message"; filename="m.txt"', b"hi")), 422,
     "invalid_request"),
    ("no-field-name", _upload(("Content-Disposition: form-data", b"hi")), 400, "bad_multipart"),
    ("unknown-field", _upload(('Content-Disposition: form-data; name="history"', b"[]")), 422, "invalid_request"),
    ("message-over-the-limit", _upload(('Content-Disposition: form-data; name="message"', b"m" * 90_000)), 422,
     "too_large"),
    ("nothing-at-all", _upload(), 422, "invalid_request"),
    ("blank-message-only", _upload(('Content-Disposition: form-data; name="message"', b"  \t ")), 422,
     "invalid_request"),
    ("cut-short", (_upload(MESSAGE)[0][:-12], _upload(MESSAGE)[1]), 422, "invalid_request"),  # no part ended
    ("wrong-boundary", (_upload(MESSAGE)[0], {"content-type": "multipart/form-data; boundary=other"}), 400,
     "bad_multipart"),
    ("no-boundary", (_upload(MESSAGE)[0], {"content-type": "multipart/form-data"}), 400, "bad_multipart"),
    ("invalid-utf8-message", _upload(('Content-Disposition: form-data; name="message"', b"caf\xe9 \xff")), 200, ""),
]


@pytest.mark.timeout(300)
def test_hostile_uploads_and_nothing_is_half_stored():
    with hostile_door() as (kernel, client, _):
        thread_id = client.post("/rest/threads", json={}).json()["id"]
        for name, (body, headers), status, code in UPLOAD_CASES:
            before = len(kernel.hooks.started)
            count = client.get(f"/rest/threads/{thread_id}").json()["message_count"]
            for path in ("/rest/chat", f"/rest/threads/{thread_id}/chat"):
                r = client.post(path, content=body, headers=headers)
                check(r, name)
                assert r.status_code == status, (name, path, r.status_code, r.text[:300])
                if code:
                    assert r.json()["error"] == code, (name, r.text[:300])
            if code:
                assert len(kernel.hooks.started) == before, name
                assert client.get(f"/rest/threads/{thread_id}").json()["message_count"] == count, name
        kept = [p for m in client.get(f"/rest/threads/{thread_id}").json()["messages"] for p in m.get("parts", ())]
        assert "passwd.png" in [p.get("name") for p in kept]
        assert client.post("/rest/chat", json={"message": "still serving"}).status_code == 200


def test_deeply_nested_content_is_refused_by_the_transport():
    with hostile_door() as (_, client, _):
        deep = json.dumps({"message": [{"type": "data", "value": _nested(100)}]})
        r = client.post("/rest/chat", content=deep, headers={"content-type": "application/json"})
        assert r.status_code == 400 and r.json()["error"] == "bad_json", r.text[:300]
