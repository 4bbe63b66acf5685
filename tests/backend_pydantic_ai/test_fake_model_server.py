"""The shared fake model server itself: HTTP details other tests rely on."""

from __future__ import annotations

import json

import httpx
from onedoor_fake_model_server import fake_model_server, plan_for


def test_non_streaming_completion_with_tool_calls(server):
    body = {"model": "fake-model", "messages": [{"role": "user", "content": '/tool a {"x": 1} /tool b {}'}]}
    reply = httpx.post(f"{server.base_url}/chat/completions", json=body, timeout=10).json()
    calls = reply["choices"][0]["message"]["tool_calls"]
    assert [c["function"]["name"] for c in calls] == ["a", "b"]
    assert json.loads(calls[0]["function"]["arguments"]) == {"x": 1}
    assert len({c["id"] for c in calls}) == 2 and reply["choices"][0]["finish_reason"] == "tool_calls"


def test_tool_call_ids_are_unique_across_servers():
    ids = set()
    for _ in range(2):
        with fake_model_server() as srv:
            body = {"model": "m", "messages": [{"role": "user", "content": "/tool t {}"}]}
            for _ in range(3):
                reply = httpx.post(f"{srv.base_url}/chat/completions", json=body, timeout=10).json()
                ids.add(reply["choices"][0]["message"]["tool_calls"][0]["id"])
    assert len(ids) == 6


def test_sse_framing_and_keep_alive(server):
    body = {"model": "fake-model", "stream": True, "messages": [{"role": "user", "content": "a b"}]}
    with httpx.Client(timeout=10) as client:
        for _ in range(2):  # the same connection serves both
            with client.stream("POST", f"{server.base_url}/chat/completions", json=body) as response:
                assert response.headers["content-type"] == "text/event-stream"
                raw = "".join(response.iter_text())
            frames = [f for f in raw.split("\n\n") if f]
            assert frames[-1] == "data: [DONE]"
            deltas = [json.loads(f[6:])["choices"][0]["delta"].get("content") for f in frames[:-1]]
            assert "".join(d for d in deltas if d) == "You said: a b (turn 1)"
    assert [r.completed for r in server.chat_requests()] == [True, True]


def test_bad_requests(server):
    assert httpx.post(f"{server.base_url}/chat/completions", content=b"not json", timeout=10).status_code == 400
    assert httpx.post(f"{server.base_url}/chat/completions", json={"model": "m"}, timeout=10).status_code == 400
    missing = httpx.get(f"{server.url}/nowhere", timeout=10)
    assert missing.status_code == 404 and "no route" in missing.json()["error"]["message"]
    models = httpx.get(f"{server.base_url}/models", timeout=10).json()
    assert models["data"][0]["id"] == "fake-model"


def test_plan_directives():
    plan = plan_for({"messages": [{"role": "user", "content": "/think /slow 0.2 /long 3 x"}]})
    assert plan.delay == 0.2 and plan.text == ["w0 ", "w1 ", "w2 "] and plan.reasoning
    plan = plan_for({"messages": [{"role": "user", "content": "/error 503"}]})
    assert plan.error_status == 503
    plan = plan_for({"messages": [{"role": "user", "content": "/reply exactly this"}]})
    assert "".join(plan.text) == "exactly this"
    plan = plan_for({"messages": [{"role": "user", "content": "q"}, {"role": "tool", "content": "42", "tool_call_id": "c"}]})
    assert "".join(plan.text) == "The tool returned: 42"


def test_usage_counts_words_media_and_the_cached_prefix(server):
    from onedoor_fake_model_server import MEDIA_TOKENS

    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
    body = {"model": "vision-model", "messages": [
        {"role": "system", "content": "be brief please"},
        {"role": "user", "content": [{"type": "text", "text": "what is this"}, image]},
    ]}
    reply = httpx.post(f"{server.base_url}/chat/completions", json=body, timeout=10).json()
    words = reply["choices"][0]["message"]["content"].split()
    assert reply["usage"] == {
        "prompt_tokens": 3 + 3 + MEDIA_TOKENS, "completion_tokens": len(words), "total_tokens": 6 + MEDIA_TOKENS + len(words),
        "prompt_tokens_details": {"cached_tokens": 3, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0},
    }
    [request] = server.chat_requests()
    assert request.usage == reply["usage"] and request.model == "vision-model" and reply["model"] == "vision-model"
    assert request.image_urls == ["data:image/png;base64,AAAA"] and request.parts("image_url") == [image]


def test_streamed_usage_counts_the_chunks_it_sent(server):
    body = {"model": "fake-model", "stream": True, "stream_options": {"include_usage": True},
            "messages": [{"role": "user", "content": "/think one two"}]}
    with httpx.stream("POST", f"{server.base_url}/chat/completions", json=body, timeout=10) as response:
        frames = [json.loads(f[6:]) for f in response.read().decode().split("\n\n") if f and f != "data: [DONE]"]
    deltas = [c["choices"][0]["delta"] for c in frames if c["choices"]]
    reasoning = [d for d in deltas if d.get("reasoning_content")]
    text = [d for d in deltas if d.get("content")]
    [last] = [c for c in frames if not c["choices"]]
    assert last["usage"]["completion_tokens"] == len(reasoning) + len(text) > len(reasoning) > 0
    assert last["usage"]["completion_tokens_details"]["reasoning_tokens"] == len(reasoning)
    assert last["usage"]["prompt_tokens"] == 3 and last["usage"]["prompt_tokens_details"]["cached_tokens"] == 0
    assert server.chat_requests()[-1].usage == last["usage"]
    body.pop("stream_options")
    with httpx.stream("POST", f"{server.base_url}/chat/completions", json=body, timeout=10) as response:
        assert '"usage"' not in response.read().decode()
    assert server.chat_requests()[-1].usage is None, "no usage sent, none recorded"


def test_models_listed():
    with fake_model_server(models=("a", "b")) as srv:
        listed = httpx.get(f"{srv.base_url}/models", timeout=10).json()
    assert [m["id"] for m in listed["data"]] == ["a", "b"]
