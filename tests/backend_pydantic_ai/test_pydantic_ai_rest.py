"""End to end: `onedoor serve --door rest -b pydantic-ai` in a subprocess, the fake model behind it."""

from __future__ import annotations

import json

import httpx
import pytest

pytest.importorskip("onedoor_door_rest", reason="the REST door (plugins/door-rest) is not installed in this environment")
testing = pytest.importorskip("onedoor_transport_http.testing", reason="the HTTP transport is not installed")


@pytest.fixture
def served(server):
    args = ["--door", "rest", "-b", "pydantic-ai", "-o", "model=fake-model", "-o", f"base_url={server.base_url}",
            "-o", "api_key=sk-rest-secret", "-o", "retries=0"]
    with testing.start_server(args) as proc:
        yield proc


def sse_events(lines):
    for line in lines:
        if line.startswith("data:"):
            yield json.loads(line[5:].strip())


def test_chat_json(served, server):
    with httpx.Client(base_url=served.base_url, timeout=30) as client:
        first = client.post("/rest/chat", json={"message": "/think hello"})
        assert first.status_code == 200, first.text
        body = first.json()
        assert body["reply"] == "You said: hello (turn 1)" and body["stop_reason"] == "end_turn"
        assert body["reasoning"].startswith("The user wrote")
        history = [{"role": "user", "content": "/think hello"}, {"role": "assistant", "content": body["reply"]}]
        second = client.post("/rest/chat", json={"message": "again", "history": history})
        assert second.json()["reply"] == "You said: again (turn 2)"
        failed = client.post("/rest/chat", json={"message": "/error 400 broken"})
        assert failed.status_code == 502 and "broken" in failed.json()["detail"]
        assert "sk-rest-secret" not in failed.text
    assert all(r.headers["authorization"] == "Bearer sk-rest-secret" for r in server.chat_requests())


def test_chat_stream_and_disconnect_cancels_the_model_request(served, server):
    with httpx.Client(base_url=served.base_url, timeout=30) as client:
        with client.stream("POST", "/rest/chat/stream", json={"message": "hi there"}) as response:
            events = list(sse_events(response.iter_lines()))
        kinds = [e["type"] for e in events]
        assert kinds[0] == "run_started" and kinds[-1] == "run_finished" and kinds.count("text_delta") > 3
        assert events[-1]["text"] == "You said: hi there (turn 1)"
        sent = server.chat_requests()[-1].usage
        assert events[-1]["usage"] == [{
            "model": "fake-model", "provider": "openai", "input_tokens": sent["prompt_tokens"],
            "output_tokens": sent["completion_tokens"], "cache_read_tokens": 0, "cache_write_tokens": 0,
            "reasoning_tokens": 0, "requests": 1,
        }], "the run's usage reaches the door's stream, as the model server counted it"
        with client.stream("POST", "/rest/chat/stream", json={"message": "/slow 0.05 /long 400"}) as response:
            for event in sse_events(response.iter_lines()):
                if event["type"] == "text_delta":
                    break  # the client goes away mid-stream
    request = server.chat_requests()[-1]
    assert server.wait_for(lambda: request.disconnected, 15), "the model request should close when the client leaves"
    assert not request.completed
