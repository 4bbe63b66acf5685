"""POST /chat and POST /chat/stream against a real `onedoor serve --door rest` process."""

from __future__ import annotations

import json

import httpx
import pytest
from onedoor.events import event_from_dict
from rest_helpers import TOKEN, parse_sse

AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture(scope="module")
def client(served):
    with httpx.Client(base_url=served.base_url, headers=AUTH, timeout=30) as c:
        yield c


def test_start_up_lines_name_the_rest_urls(served):
    assert any("listening on http://127.0.0.1:" in line for line in served.lines)
    door_line = next(line for line in served.lines if " rest " in line)
    assert f"{served.base_url}/rest/" in door_line and f"{served.base_url}/rest/docs" in door_line


def test_chat_answers_reply_and_tool_calls(client):
    r = client.post("/rest/chat", json={"message": "count these four words"})
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("application/json")
    body = r.json()
    assert set(body) == {"run_id", "reply", "stop_reason", "tool_calls", "reasoning", "status", "usage"}
    assert body["status"] == "completed"  # "needs_input" when the run waits for answers (test_rest_questions.py)
    assert body["reply"] == "You said: count these four words (4 words, turn 1)"
    assert body["stop_reason"] == "end_turn"
    assert body["tool_calls"] == [
        {
            "call_id": body["tool_calls"][0]["call_id"],
            "name": "word_count",
            "arguments": {"text": "count these four words"},
            "result": {"words": 4},
            "is_error": False,
            "parts": [],
        }
    ]
    # the scripted backend counts the words it was sent (4, no history) and makes one request
    [usage] = body["usage"]
    assert (usage["model"], usage["provider"], usage["input_tokens"], usage["requests"]) == ("scripted", "onedoor", 4, 1)
    assert body["reasoning"].startswith("The user wrote 4 words")


def test_history_comes_from_the_caller_and_each_request_is_fresh(client):
    history = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello", "tool_calls": [{"id": "c1", "name": "word_count", "arguments": {}}]},
        {"role": "tool", "content": "1", "tool_call_id": "c1"},
        {"role": "assistant", "content": "done"},
        {"role": "user", "content": "again"},
        {"role": "assistant", "content": "sure"},
    ]
    with_history = client.post("/rest/chat", json={"message": "third", "history": history}).json()
    assert with_history["reply"].endswith("turn 3)")
    # a fresh agent per request: nothing of the previous call leaks into this one
    again = client.post("/rest/chat", json={"message": "third"}).json()
    assert again["reply"].endswith("turn 1)")
    assert again["run_id"] != with_history["run_id"]


def test_tool_result_in_history_is_reported(client):
    history = [{"role": "tool", "content": "42", "tool_call_id": "x"}]
    body = client.post("/rest/chat", json={"message": "and?", "history": history}).json()
    assert body["reply"] == "The tool returned: 42"


def test_index_lists_the_endpoints(client):
    body = client.get("/rest/").json()
    assert body["chat"] == "/rest/chat" and body["stream"] == "/rest/chat/stream"
    assert body["openapi"] == "/rest/openapi.json"


def test_openapi_documents_typed_models_and_bearer_auth(client):
    spec = client.get("/rest/openapi.json").json()
    schemas = spec["components"]["schemas"]
    assert {"ChatRequest", "ChatResponse", "ErrorBody", "HistoryMessage"} <= set(schemas)
    request = schemas["ChatRequest"]
    assert request["additionalProperties"] is False
    text, parts = request["properties"]["message"]["oneOf"]  # text, or a list of parts
    assert text["maxLength"] == 2000  # the kernel's limit, from -o limits.…
    assert parts["items"] == {"$ref": "#/components/schemas/PartIn"} and "PartIn" in schemas
    body = spec["paths"]["/chat"]["post"]["requestBody"]["content"]
    assert body["application/json"]["schema"] == {"$ref": "#/components/schemas/ChatRequest"}
    upload = body["multipart/form-data"]["schema"]["properties"]
    assert upload["file"]["items"]["format"] == "binary" and upload["message"]["maxLength"] == 2000
    assert spec["components"]["securitySchemes"]["bearer"] == {"type": "http", "scheme": "bearer"}
    stream = spec["paths"]["/chat/stream"]["post"]["responses"]
    assert "text/event-stream" in stream["200"]["content"]
    assert "application/json" in stream["422"]["content"]
    # A browser opens the docs with ?token=: the transport swaps it for a cookie, which the
    # page's own requests (the spec, "try it out") carry; the token stays out of the page.
    with httpx.Client(base_url=client.base_url, timeout=30) as browser:
        docs = browser.get("/rest/docs", params={"token": TOKEN})
        assert docs.status_code == 200 and "swagger" in docs.text.lower()
        assert TOKEN not in docs.text and "openapi.json?token" not in docs.text
        assert "HttpOnly" in docs.headers["set-cookie"] and "SameSite=Strict" in docs.headers["set-cookie"]
        # the page's own fetch says where it comes from (a browser sends this; a replay without it is refused)
        spec_again = browser.get("/rest/openapi.json", headers={"sec-fetch-site": "same-origin"})
        assert spec_again.json()["info"]["title"] == spec["info"]["title"]
        assert browser.get("/rest/openapi.json").status_code == 401, "the cookie alone, with no proof, is refused"


def test_stream_is_sse_with_one_core_event_per_event(client):
    with client.stream("POST", "/rest/chat/stream", json={"message": "one two three"}) as r:
        assert r.status_code == 200
        assert r.headers["content-type"].startswith("text/event-stream")
        assert r.headers["cache-control"] == "no-cache"
        assert r.headers["x-accel-buffering"] == "no"
        raw = r.read().decode()
    assert raw.endswith("\n\n") and "\r" not in raw
    events, _ = parse_sse(raw)
    core = [event_from_dict(data) for _, data in events]
    assert [name for name, _ in events] == [data["type"] for _, data in events]
    assert events[0][0] == "run_started" and events[-1][0] == "run_finished"
    names = [name for name, _ in events]
    assert {"reasoning_delta", "tool_started", "tool_finished", "text_delta"} <= set(names)
    text = "".join(e.text for e in core if type(e).__name__ == "TextDelta")
    assert text == core[-1].text == "You said: one two three (3 words, turn 1)"
    assert core[-1].stop_reason == "end_turn"
    assert len({e.run_id for e in (core[0], core[-1])}) == 1
    # usage on the terminal event: the scripted backend counts one output token per text delta
    usage = events[-1][1]["usage"]
    assert usage == [{"model": "scripted", "provider": "onedoor", "input_tokens": 3, "output_tokens": names.count("text_delta"),
                      "cache_read_tokens": 0, "cache_write_tokens": 0, "reasoning_tokens": 0, "requests": 1}]


@pytest.mark.parametrize("directive", ["/fail", "/error"])
def test_backend_failure_mid_stream_ends_with_run_failed(client, directive):
    with client.stream("POST", "/rest/chat/stream", json={"message": f"{directive} one two three four"}) as r:
        assert r.status_code == 200
        events, _ = parse_sse(r.read().decode())
    names = [name for name, _ in events]
    assert names[0] == "run_started" and names[-1] == "run_failed"
    assert names.count("run_failed") == 1 and "run_finished" not in names
    assert "text_delta" in names  # it failed half-way, after some text
    error = events[-1][1]["error"]
    assert "Traceback" not in error and "\n" not in error


@pytest.mark.parametrize(
    "directive, expected",
    [("/fail", "ScriptedFailure: scripted failure in the middle of the reply"), ("/error", "reports an error")],
)
def test_backend_failure_on_chat_is_a_clear_5xx_json(client, directive, expected):
    r = client.post("/rest/chat", json={"message": f"{directive} one two three four"})
    assert r.status_code == 502
    body = r.json()
    assert body["error"] == "run_failed" and expected in body["detail"]
    assert set(body) == {"error", "detail"}
    assert "Traceback" not in r.text and 'File "' not in r.text


def test_keepalive_comment_during_a_long_silence(client):
    # /hang: the backend goes silent; keepalive is 0.3 s on this server. Read until a
    # comment arrives, then leave: the run is cancelled.
    seen = ""
    with client.stream("POST", "/rest/chat/stream", json={"message": "/hang quiet please"}) as r:
        for chunk in r.iter_text():
            seen += chunk
            if ": keepalive\n\n" in seen:
                break
    assert ": keepalive\n\n" in seen
    events, comments = parse_sse(seen)
    assert "keepalive" in comments and events[0][0] == "run_started"


def test_unicode_survives_and_lone_surrogates_are_refused(client):
    headers = {"content-type": "application/json"}
    body = json.dumps({"message": "h\u00e9llo \u2028 \U0001f600"}, ensure_ascii=False).encode()
    r = client.post("/rest/chat", content=body, headers=headers)
    assert r.status_code == 200
    assert "h\u00e9llo \u2028 \U0001f600" in r.json()["reply"]
    with client.stream("POST", "/rest/chat/stream", content=body, headers=headers) as s:
        events, _ = parse_sse(s.read().decode("utf-8"))
    assert events[-1][0] == "run_finished" and "\U0001f600" in events[-1][1]["text"]
    # \ud800 is valid JSON but no text: refused by the transport (onedoor.wire) before a run
    r = client.post("/rest/chat", content=json.dumps({"message": "a \ud800"}), headers=headers)
    assert r.status_code == 400 and r.json()["error"] == "bad_json" and "surrogate" in r.json()["detail"]
