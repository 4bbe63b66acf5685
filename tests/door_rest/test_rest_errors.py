"""Bad input: each refusal is the right 4xx with a JSON body, and the server keeps serving."""

from __future__ import annotations

import json
import threading

import httpx
import pytest
from rest_helpers import TOKEN, parse_sse

AUTH = {"Authorization": f"Bearer {TOKEN}"}
JSON = {"content-type": "application/json"}

CASES = [
    # (id, kwargs for client.request, status, error code, words expected in detail)
    ("malformed-json", dict(content=b'{"message": "hi"', headers=JSON), 400, "bad_json", "not valid JSON"),
    ("not-json-at-all", dict(content=b"hello", headers=JSON), 400, "bad_json", "not valid JSON"),
    ("body-is-a-string", dict(json="hello"), 422, "invalid_request", "body"),
    ("message-is-a-number", dict(json={"message": 5}), 422, "invalid_request", "message"),
    ("message-is-null", dict(json={"message": None}), 422, "invalid_request", "message"),
    ("history-is-an-object", dict(json={"message": "hi", "history": {"role": "user"}}), 422, "invalid_request", "history"),
    ("history-bad-role", dict(json={"message": "hi", "history": [{"role": "wizard", "content": "x"}]}), 422,
     "invalid_request", "history[0].role"),
    ("history-content-number", dict(json={"message": "hi", "history": [{"role": "user", "content": 3}]}), 422,
     "invalid_request", "history[0].content"),
    ("empty-message", dict(json={"message": ""}), 422, "invalid_request", "empty"),
    ("blank-message", dict(json={"message": "   \n "}), 422, "invalid_request", "empty"),
    ("missing-message", dict(json={"history": []}), 422, "invalid_request", "'message' is required"),
    ("empty-body", dict(content=b"", headers=JSON), 422, "invalid_request", "body is required"),
    ("unknown-field", dict(json={"message": "hi", "temperature": 2}), 422, "invalid_request", "unknown field 'temperature'"),
    ("unknown-history-field", dict(json={"message": "hi", "history": [{"role": "user", "content": "x", "name": "b"}]}),
     422, "invalid_request", "unknown field 'history[0].name'"),
    ("message-too-long", dict(json={"message": "x" * 2001}), 422, "too_large", "2000"),
    ("history-too-large", dict(json={"message": "hi", "history": [{"role": "user", "content": "y" * 1999}] * 600}),
     413, "too_large", "65536"),  # over the transport's 64 KiB body cap on this server
    ("oversized-body", dict(content=b'{"message": "' + b"z" * 70000 + b'"}', headers=JSON), 413, "too_large", "65536"),
    ("wrong-content-type", dict(content=b'{"message": "hi"}', headers={"content-type": "text/plain"}), 415,
     "unsupported_media_type", "text/plain"),
    ("form-content-type", dict(data={"message": "hi"}), 415, "unsupported_media_type", "application/json"),
    ("no-content-type", dict(content=b'{"message": "hi"}', headers={"content-type": ""}), 415,
     "unsupported_media_type", "none"),
]


@pytest.fixture(scope="module")
def client(served):
    with httpx.Client(base_url=served.base_url, headers=AUTH, timeout=30) as c:
        yield c


def check_error(r: httpx.Response, status: int, code: str, words: str = "") -> dict:
    assert r.status_code == status, r.text
    assert r.headers["content-type"].startswith("application/json")
    body = r.json()
    assert set(body) == {"error", "detail"}, body
    assert body["error"] == code, body
    assert words in body["detail"], body
    assert "Traceback" not in r.text and 'File "' not in r.text
    return body


@pytest.mark.parametrize("path", ["/rest/chat", "/rest/chat/stream"])
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_bad_input_is_refused_with_json(client, case, path):
    _, kwargs, status, code, words = case
    kwargs = dict(kwargs)
    if kwargs.get("headers", {}).get("content-type") == "":
        kwargs["headers"] = {}
        r = client.send(client.build_request("POST", path, content=kwargs["content"]))
        assert "content-type" not in r.request.headers
    else:
        r = client.request("POST", path, **kwargs)
    check_error(r, status, code, words)
    assert client.post("/rest/chat", json={"message": "still here"}).status_code == 200


@pytest.mark.parametrize("headers, detail", [({}, "missing bearer token"), ({"Authorization": "Bearer nope-nope-nope-nope"},
                         "wrong bearer token"), ({"Authorization": f"Basic {TOKEN}"}, "missing bearer token")])
@pytest.mark.parametrize("method, path", [("POST", "/rest/chat"), ("POST", "/rest/chat/stream"), ("GET", "/rest/"),
                                          ("GET", "/rest/openapi.json"), ("GET", "/rest/docs")])
def test_missing_or_wrong_token_is_401(served, headers, detail, method, path):
    r = httpx.request(method, served.base_url + path, json={"message": "hi"}, headers=headers, timeout=10)
    check_error(r, 401, "unauthorized", detail)
    assert r.headers["www-authenticate"].startswith("Bearer")


def test_token_in_query_is_accepted_for_pages(served):
    r = httpx.get(served.base_url + "/rest/docs", params={"token": TOKEN}, timeout=10)
    assert r.status_code == 200


def test_wrong_method_and_unknown_route(client):
    check_error(client.get("/rest/chat"), 405, "method_not_allowed")
    check_error(client.get("/rest/nothing-here"), 404, "not_found", "/rest/nothing-here")
    check_error(client.post("/rest/nothing-here", json={}), 404, "not_found")


def test_busy_is_429_with_retry_after(served, client):
    # this server allows 4 concurrent runs: hold 4 with /hang streams, the 5th is refused
    opened = []
    ready = threading.Barrier(5, timeout=20)
    stop = threading.Event()

    def hold() -> None:
        with httpx.Client(base_url=served.base_url, headers=AUTH, timeout=30) as c:
            with c.stream("POST", "/rest/chat/stream", json={"message": "/hang hold the slot"}) as r:
                chunks = r.iter_text()  # keep the iterator: dropping it would close the stream
                opened.append(next(chunks))
                ready.wait()
                stop.wait(20)

    threads = [threading.Thread(target=hold, daemon=True) for _ in range(4)]
    for t in threads:
        t.start()
    try:
        ready.wait()
        assert all("run_started" in first for first in opened)
        for path in ("/rest/chat", "/rest/chat/stream"):
            r = client.post(path, json={"message": "one more"})
            body = check_error(r, 429, "busy", "limit")
            assert int(r.headers["retry-after"]) >= 1, body
        health = httpx.get(served.base_url + "/healthz", headers=AUTH, timeout=10).json()
        assert health["active_runs"] == 4
    finally:
        stop.set()
        for t in threads:
            t.join(20)
    # the slots come back once the holders leave (their runs are cancelled)
    for _ in range(200):
        if httpx.get(served.base_url + "/healthz", headers=AUTH, timeout=10).json()["active_runs"] == 0:
            break
        threading.Event().wait(0.05)
    assert client.post("/rest/chat", json={"message": "free again"}).status_code == 200


def test_chunked_upload_over_the_cap_is_413(client):
    def body():
        yield b'{"message": "'
        for _ in range(20):
            yield b"w" * 4096
        yield b'"}'

    r = client.post("/rest/chat", content=body(), headers=JSON)
    assert "content-length" not in r.request.headers
    check_error(r, 413, "too_large")


def test_server_still_streams_after_all_that(client):
    with client.stream("POST", "/rest/chat/stream", json={"message": "final check"}) as r:
        events, _ = parse_sse(r.read().decode())
    assert events[-1][0] == "run_finished"
    assert json.loads(json.dumps(events[-1][1]))["stop_reason"] == "end_turn"
