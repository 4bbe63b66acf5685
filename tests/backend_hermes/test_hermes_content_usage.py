"""Images, audio and documents through the hermes backend, its token usage, and switching models."""

from __future__ import annotations

import base64

import pytest
from onedoor.builtins.scripted_extras import DOT_PNG
from onedoor.errors import RunRefused
from onedoor.events import RunFailed, RunFinished, ToolStarted, UsageReported
from onedoor.plugins.discovery import backend_accepts
from onedoor.testing import collect, kernel_for_agent
from onedoor.usage import ModelUsage, add_usage
from onedoor_backend_hermes import HermesOptions, hermes_backend

PDF = b"%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n"
WAV = b"RIFF" + (36).to_bytes(4, "little") + b"WAVEfmt " + bytes(24) + b"data" + bytes(4)
TODO = '/tool todo {"todos": [{"id": "1", "content": "buy milk", "status": "pending"}]}'


def options(server, home, **extra):
    return HermesOptions(model="fake-model", base_url=server.base_url, api_key="k", home=home, **extra)


def make_kernel(server, home, **extra):
    opts = options(server, home, **extra)
    accepts = backend_accepts(hermes_backend, "hermes", opts)
    return kernel_for_agent(lambda: hermes_backend(opts), "hermes", accepts=accepts)


def b64(data):
    return base64.b64encode(data).decode()


def image():
    return {"type": "image", "media_type": "image/png", "data": b64(DOT_PNG), "name": "dot.png"}


def served(requests):
    sent = [r.usage for r in requests if r.usage is not None]
    return ModelUsage(
        model="fake-model", provider="custom",
        input_tokens=sum(u["prompt_tokens"] for u in sent),
        output_tokens=sum(u["completion_tokens"] for u in sent),
        cache_read_tokens=sum(u["prompt_tokens_details"]["cached_tokens"] for u in sent),
        reasoning_tokens=sum(u["completion_tokens_details"]["reasoning_tokens"] for u in sent),
        requests=len(sent),
    )


async def test_with_vision_an_image_reaches_the_model_as_it_is(server, hermes_home):
    events = await collect(make_kernel(server, hermes_home, vision=True), [{"type": "text", "text": "what is this"}, image()])
    assert isinstance(events[-1], RunFinished), events[-1]
    assert events[-1].text == "You said: what is this (turn 1)"
    [request] = server.chat_requests()
    assert request.image_urls == [f"data:image/png;base64,{b64(DOT_PNG)}"]
    assert request.messages[-1]["content"][0] == {"type": "text", "text": "what is this"}


async def test_without_known_vision_hermes_describes_the_image_in_an_extra_request(server, hermes_home):
    events = await collect(make_kernel(server, hermes_home), [{"type": "text", "text": "what is this"}, image()])
    assert isinstance(events[-1], RunFinished), events[-1]
    describe, main = server.chat_requests()
    assert describe.image_urls == [f"data:image/png;base64,{b64(DOT_PNG)}"] and not describe.body.get("stream")
    assert main.image_urls == [], "the main request carries the description instead"
    assert "what is this" in str(main.messages[-1]["content"])
    assert events[-1].usage == (served([main]),), "hermes does not count its side requests"


async def test_vision_false_refuses_images_before_the_run(server, hermes_home):
    kernel = make_kernel(server, hermes_home, vision=False)
    assert "image" not in kernel.backend.accepts
    with pytest.raises(RunRefused) as refused:
        await collect(kernel, [{"type": "text", "text": "x"}, image()])
    assert refused.value.reason == "unsupported_content" and server.chat_requests() == []


async def test_audio_and_a_pdf_go_as_chat_completions_parts(server, hermes_home):
    clip = {"type": "audio", "media_type": "audio/wav", "data": b64(WAV)}
    doc = {"type": "document", "media_type": "application/pdf", "data": b64(PDF), "name": "a.pdf"}
    events = await collect(make_kernel(server, hermes_home), [{"type": "text", "text": "both"}, clip, doc])
    assert isinstance(events[-1], RunFinished), events[-1]
    [request] = server.chat_requests()
    assert [p["input_audio"] for p in request.parts("input_audio")] == [{"data": b64(WAV), "format": "wav"}]
    assert [p["file"] for p in request.parts("file")] == [
        {"file_data": f"data:application/pdf;base64,{b64(PDF)}", "filename": "a.pdf"}]


@pytest.mark.parametrize(("part", "why"), [
    ({"type": "audio", "media_type": "audio/ogg", "data": b64(b"OggS" + bytes(20))}, "WAV or MP3 only"),
    ({"type": "document", "media_type": "application/pdf", "uri": "https://d.example/a.pdf"}, "inline only"),
])
async def test_what_hermes_cannot_send_fails_clearly(server, hermes_home, part, why):
    events = await collect(make_kernel(server, hermes_home), [{"type": "text", "text": "x"}, part])
    assert isinstance(events[-1], RunFailed) and why in events[-1].error
    assert server.chat_requests() == []


def test_audio_and_documents_only_with_base_url(hermes_home, monkeypatch):
    monkeypatch.setenv("OPENROUTER_API_KEY", "k")
    opts = HermesOptions(model="m", provider="openrouter", home=hermes_home)
    assert backend_accepts(hermes_backend, "hermes", opts) == {"image"}
    with pytest.raises(ValueError, match="vision must be true, false or auto"):
        HermesOptions(model="m", provider="openrouter", home=hermes_home, vision="maybe")


async def test_history_with_an_image(server, hermes_home):
    history = [
        {"role": "user", "content": [{"type": "text", "text": "remember this"}, image()]},
        {"role": "assistant", "content": "A dot."},
    ]
    events = await collect(make_kernel(server, hermes_home, vision=True), "what was it?", history=history)
    assert events[-1].text == "You said: what was it? (turn 2)"
    request = server.chat_requests()[-1]
    assert request.image_urls == [f"data:image/png;base64,{b64(DOT_PNG)}"]
    [first] = [m for m in request.messages if m["role"] == "user" and isinstance(m["content"], list)]
    assert first["content"][0] == {"type": "text", "text": "remember this"}


async def test_usage_equals_the_servers(server, hermes_home):
    events = await collect(make_kernel(server, hermes_home), "/think hello")
    [usage] = events[-1].usage
    [request] = server.chat_requests()
    assert usage == served([request]) and usage.reasoning_tokens > 0 and usage.cache_read_tokens > 0


async def test_usage_over_a_tool_call_is_reported_as_it_goes(server, hermes_home):
    events = await collect(make_kernel(server, hermes_home, toolsets=["todo"]), TODO)
    assert isinstance(events[-1], RunFinished), events[-1]
    requests = server.chat_requests()
    assert len(requests) == 2 and events[-1].usage == (served(requests),)
    reported = [i for i, e in enumerate(events) if isinstance(e, UsageReported)]
    started = next(i for i, e in enumerate(events) if isinstance(e, ToolStarted))
    assert reported and reported[0] < started, "the first call's usage comes before the tool it asked for"
    assert len(add_usage(*[events[i].usage for i in reported])) == 1, "one model"


async def test_switching_models(server, hermes_home):
    opts = options(server, hermes_home, models=["bigger-model", "llama3:8b"])
    listed = hermes_backend.models(opts)
    assert [(m["id"], m["name"]) for m in listed] == [
        ("fake-model", "fake-model"), ("bigger-model", "bigger-model"), ("llama3:8b", "llama3:8b")]
    switched = hermes_backend.with_model(opts, "llama3:8b")
    assert (switched.model, switched.base_url, switched.models) == ("llama3:8b", server.base_url, ["fake-model", "bigger-model"])
    events = await collect(kernel_for_agent(lambda: hermes_backend(switched), "hermes"), "hi")
    assert isinstance(events[-1], RunFinished), events[-1]
    assert server.chat_requests()[-1].model == "llama3:8b" and events[-1].usage[0].model == "llama3:8b"
    with pytest.raises(ValueError, match="unknown model 'nope'"):
        hermes_backend.with_model(opts, "nope")


def test_switching_to_another_provider(server, hermes_home, monkeypatch):
    monkeypatch.setenv("OPENROUTER_API_KEY", "or-key")
    opts = options(server, hermes_home, models=["openrouter:anthropic/claude-sonnet-4.5"])
    [_, other] = hermes_backend.models(opts)
    assert other == {"id": "openrouter:anthropic/claude-sonnet-4.5", "name": "anthropic/claude-sonnet-4.5",
                     "description": "hermes, provider openrouter"}
    switched = hermes_backend.with_model(opts, other["id"])
    assert (switched.provider, switched.model, switched.base_url, switched.api_key) == (
        "openrouter", "anthropic/claude-sonnet-4.5", "", "")
    assert [m["id"] for m in hermes_backend.models(switched)] == ["openrouter:anthropic/claude-sonnet-4.5", "fake-model"]
    monkeypatch.delenv("OPENROUTER_API_KEY")
    with pytest.raises(ValueError, match="missing key for provider 'openrouter'"):
        hermes_backend.with_model(opts, other["id"])
