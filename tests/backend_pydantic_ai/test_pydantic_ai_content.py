"""Images, files and resources through the pydantic-ai backend to the fake model server."""

from __future__ import annotations

import base64

import pytest
from onedoor.builtins.scripted_extras import DOT_PNG
from onedoor.content import Part
from onedoor.errors import RunRefused
from onedoor.events import RunFailed, RunFinished, ToolFinished
from onedoor.plugins.discovery import backend_accepts
from onedoor.testing import collect, kernel_for_agent
from onedoor_backend_pydantic_ai import PydanticAIOptions, pydantic_ai_backend

PDF = b"%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n"
WAV = b"RIFF" + (36).to_bytes(4, "little") + b"WAVEfmt " + bytes(24) + b"data" + bytes(4)


def make_kernel(server, **extra):
    opts = PydanticAIOptions(model="fake-model", base_url=server.base_url, api_key="k", retries=0, **extra)
    accepts = backend_accepts(pydantic_ai_backend, "pydantic-ai", opts)
    return kernel_for_agent(lambda: pydantic_ai_backend(opts), "pydantic-ai", accepts=accepts)


def data_uri(media_type, data):
    return f"data:{media_type};base64,{base64.b64encode(data).decode()}"


def image(data=DOT_PNG, name="dot.png"):
    return {"type": "image", "media_type": "image/png", "data": base64.b64encode(data).decode(), "name": name}


async def test_an_image_reaches_the_model_as_a_data_uri(server):
    events = await collect(make_kernel(server), [{"type": "text", "text": "what is this"}, image()])
    assert isinstance(events[-1], RunFinished), events[-1]
    [request] = server.chat_requests()
    assert request.image_urls == [data_uri("image/png", DOT_PNG)]
    [user] = [m for m in request.messages if m["role"] == "user"]
    assert user["content"][0] == {"type": "text", "text": "what is this"}
    assert events[-1].text == "You said: what is this (turn 1)"


async def test_an_image_alone_and_an_image_url(server):
    url = "https://images.example/cat.png"
    events = await collect(make_kernel(server), [image(), {"type": "image", "uri": url, "media_type": "image/png"}])
    assert isinstance(events[-1], RunFinished), events[-1]
    # the URL goes to the model as it is: nothing downloads it
    assert server.chat_requests()[-1].image_urls == [data_uri("image/png", DOT_PNG), url]


async def test_a_pdf_goes_as_a_file_part(server):
    doc = {"type": "document", "media_type": "application/pdf", "data": base64.b64encode(PDF).decode(), "name": "a.pdf"}
    events = await collect(make_kernel(server), [{"type": "text", "text": "summarise"}, doc])
    assert isinstance(events[-1], RunFinished), events[-1]
    [part] = server.chat_requests()[-1].parts("file")
    assert part["file"]["file_data"] == data_uri("application/pdf", PDF)


async def test_wav_audio_goes_as_input_audio(server):
    kernel = make_kernel(server, accepts="image,audio,document")
    clip = {"type": "audio", "media_type": "audio/wav", "data": base64.b64encode(WAV).decode()}
    events = await collect(kernel, [{"type": "text", "text": "listen"}, clip])
    assert isinstance(events[-1], RunFinished), events[-1]
    [part] = server.chat_requests()[-1].parts("input_audio")
    assert part["input_audio"] == {"data": base64.b64encode(WAV).decode(), "format": "wav"}


async def test_audio_the_model_cannot_take_fails_clearly(server):
    kernel = make_kernel(server, accepts="audio")
    clip = {"type": "audio", "media_type": "audio/ogg", "data": base64.b64encode(b"OggS" + bytes(20)).decode()}
    events = await collect(kernel, [{"type": "text", "text": "listen"}, clip])
    assert isinstance(events[-1], RunFailed)
    assert "WAV or MP3" in events[-1].error and "audio/ogg" in events[-1].error
    assert server.chat_requests() == []


async def test_resources_links_and_data_go_as_text(server):
    message = [
        {"type": "text", "text": "look at"},
        {"type": "resource", "uri": "file:///w/a.py", "text": "print(1)\n", "lines": [5, 6]},
        {"type": "resource_link", "uri": "file:///w/b.md", "name": "b.md"},
        {"type": "data", "value": {"k": 1}},
    ]
    events = await collect(make_kernel(server), message)
    assert isinstance(events[-1], RunFinished), events[-1]
    [user] = [m for m in server.chat_requests()[-1].messages if m["role"] == "user"]
    text = user["content"] if isinstance(user["content"], str) else "".join(p.get("text", "") for p in user["content"])
    assert "print(1)" in text and "file:///w/a.py (lines 5-6)" in text
    assert "[file: file:///w/b.md]" in text and '{"k":1}' in text


async def test_history_with_an_image(server):
    history = [
        {"role": "user", "content": [{"type": "text", "text": "remember this"}, image()]},
        {"role": "assistant", "content": "I see a dot."},
    ]
    events = await collect(make_kernel(server), "what was it?", history=history)
    assert events[-1].text == "You said: what was it? (turn 2)"
    request = server.chat_requests()[-1]
    assert request.image_urls == [data_uri("image/png", DOT_PNG)]
    first = request.messages[0]
    assert first["role"] == "user" and first["content"][0] == {"type": "text", "text": "remember this"}


async def test_history_parts_the_model_does_not_take_go_as_text(server):
    clip = {"type": "video", "media_type": "video/mp4", "uri": "https://v.example/a.mp4"}
    history = [{"role": "user", "content": [{"type": "text", "text": "a clip"}, clip]}, {"role": "assistant", "content": "ok"}]
    events = await collect(make_kernel(server), "and?", history=history)
    assert isinstance(events[-1], RunFinished), events[-1]
    first = server.chat_requests()[-1].messages[0]
    text = first["content"] if isinstance(first["content"], str) else "".join(p.get("text", "") for p in first["content"])
    assert "https://v.example/a.mp4" in text and not server.chat_requests()[-1].parts("video_url")


def test_accepts_follows_the_model_profile(server):
    opts = PydanticAIOptions(model="fake-model", base_url=server.base_url)
    kinds = backend_accepts(pydantic_ai_backend, "pydantic-ai", opts)
    assert {"image", "document", "resource"} <= kinds
    assert "video" not in kinds  # OpenAI Chat Completions cannot send video
    text_only = PydanticAIOptions(model="fake-model", base_url=server.base_url, accepts="")
    assert backend_accepts(pydantic_ai_backend, "pydantic-ai", text_only) == frozenset()
    with pytest.raises(ValueError, match="unknown kind"):
        PydanticAIOptions(model="fake-model", base_url=server.base_url, accepts="image,smell")


async def test_what_the_model_does_not_take_is_refused_before_the_run(server):
    with pytest.raises(RunRefused) as refused:
        await collect(make_kernel(server, accepts=""), [{"type": "text", "text": "x"}, image()])
    assert refused.value.reason == "unsupported_content"
    video = {"type": "video", "media_type": "video/mp4", "uri": "https://v.example/a.mp4"}
    with pytest.raises(RunRefused):
        await collect(make_kernel(server), [video])
    assert server.chat_requests() == []


async def test_a_tool_that_returns_an_image_gives_a_tool_result_part(server, tmp_path, monkeypatch):
    (tmp_path / "pa_image_tool_agent.py").write_text(IMAGE_TOOL_AGENT)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("IMAGE_TOOL_FAKE_URL", server.base_url)
    opts = PydanticAIOptions(agent="pa_image_tool_agent:build")
    events = await collect(kernel_for_agent(lambda: pydantic_ai_backend(opts), "pydantic-ai"), "/tool draw {}")
    [finished] = [e for e in events if isinstance(e, ToolFinished)]
    assert finished.parts == (Part.media("image", "image/png", data=DOT_PNG, name=finished.parts[0].name),)
    assert isinstance(events[-1], RunFinished)


IMAGE_TOOL_AGENT = """
import os
from openai import AsyncOpenAI
from pydantic_ai import Agent, BinaryContent
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider
from onedoor.builtins.scripted_extras import DOT_PNG

def build():
    client = AsyncOpenAI(base_url=os.environ["IMAGE_TOOL_FAKE_URL"], api_key="k", max_retries=0)
    agent = Agent(OpenAIChatModel("fake-model", provider=OpenAIProvider(openai_client=client)))

    @agent.tool_plain
    def draw() -> BinaryContent:
        '''Draw a dot.'''
        return BinaryContent(data=DOT_PNG, media_type="image/png")

    return agent
"""


def test_the_url_types_pydantic_ai_takes():
    from onedoor_backend_pydantic_ai.content import user_content
    from pydantic_ai.messages import AudioUrl, BinaryContent, DocumentUrl, ImageUrl, VideoUrl

    parts = [
        Part.of_text("see"),
        Part.media("image", "image/png", uri="https://x.example/a.png"),
        Part.media("audio", "audio/mpeg", uri="https://x.example/a.mp3"),
        Part.media("video", "video/mp4", uri="https://x.example/a.mp4"),
        Part.media("document", "application/pdf", uri="https://x.example/a.pdf", name="a.pdf"),
        Part.resource("file:///w/blob.bin", data=b"\x00\x01", media_type="application/octet-stream"),
        Part.link("file:///w/x.txt"),
    ]
    content = user_content(parts)
    assert [type(c) for c in content] == [str, ImageUrl, AudioUrl, VideoUrl, DocumentUrl, BinaryContent, str]
    assert content[4].url == "https://x.example/a.pdf" and content[5].data == b"\x00\x01"
    assert content[-1] == "[file: file:///w/x.txt]"
    only_images = user_content(parts, {"image"})
    assert [type(c) for c in only_images] == [str, ImageUrl, str]
