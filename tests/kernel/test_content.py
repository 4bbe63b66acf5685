"""Content in the port: a message of parts reaches the backend whole (and its text reaches
a text-only backend), is refused before a run when the backend cannot take it, and is
kept with the thread; reply parts and tool result parts come out and are kept too."""

from __future__ import annotations

import base64

import pytest
from onedoor import Kernel
from onedoor.content import ContentError, ContentLimits, Part, parse_content, safe_name, text_of
from onedoor.errors import RunRefused
from onedoor.events import (
    ReplyPart,
    RunFinished,
    RunStarted,
    TextDelta,
    ToolFinished,
    ToolStarted,
    event_from_dict,
    event_to_dict,
)
from onedoor.limits import Limits
from onedoor.messages import Message
from onedoor.testing import collect, final, kernel_for_agent, scripted_kernel
from onedoor.threads.sqlite import SQLiteThreadStore

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(40))
PNG64 = base64.b64encode(PNG).decode()
DEEP: list = []
for _ in range(80):
    DEEP = [DEEP]
JPEG64 = base64.b64encode(b"\xff\xd8\xff\xe0" + bytes(20)).decode()


def image(data: str = PNG64, media_type: str = "image/png", **extra):
    return {"type": "image", "media_type": media_type, "data": data, **extra}


# -- parsing what a client sent ------------------------------------------------------------
def test_a_string_stays_a_string_and_text_parts_collapse_to_text():
    assert parse_content("hello") == ("hello", ())
    assert parse_content([{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]) == ("ab", ())


def test_parts_come_back_checked_with_their_text():
    text, parts = parse_content([
        {"type": "text", "text": "what is this?"},
        image(name="../../etc/cat.png"),
        {"type": "resource", "uri": "file:///w/a.py", "text": "x = 1\n", "lines": [5, 10]},
        {"type": "resource_link", "uri": "file:///w/b.py", "name": "b.py"},
        {"type": "data", "value": {"k": [1, 2]}},
    ])
    assert [p.kind for p in parts] == ["text", "image", "resource", "resource_link", "data"]
    assert parts[1].data == PNG and parts[1].name == "cat.png", "the file name lost its directories"
    assert parts[2].lines == (5, 10) and parts[4].media_type == "application/json"
    assert text == text_of(parts)
    assert text.startswith("what is this?\n[image cat.png: image/png, 48 bytes]\n--- file:///w/a.py (lines 5-10) ---\nx = 1\n")
    assert "[file: file:///w/b.py]" in text and text.endswith('{"k":[1,2]}')


def test_a_data_url_becomes_inline_bytes():
    _, parts = parse_content([{"type": "image", "url": f"data:image/png;base64,{PNG64}"}])
    assert parts[0].data == PNG and parts[0].uri is None and parts[0].media_type == "image/png"


@pytest.mark.parametrize("bad, reason", [
    (image(data="not base64!"), "invalid"),
    (image(data=JPEG64), "invalid"),  # claims PNG, holds a JPEG
    (image(media_type="audio/wav"), "invalid"),  # an image that says it is audio
    ({"type": "image", "url": "file:///etc/passwd", "media_type": "image/png"}, "invalid"),
    ({"type": "image", "url": "javascript:alert(1)", "media_type": "image/png"}, "invalid"),
    ({"type": "image", "media_type": "image/png"}, "invalid"),  # neither bytes nor a url
    ({"type": "image", "data": PNG64}, "invalid"),  # inline bytes without a media type
    ({"type": "image", "media_type": "not a type", "data": PNG64}, "invalid"),
    ({"type": "exe", "data": PNG64}, "unsupported"),
    ({"type": "resource", "uri": "file:///a"}, "invalid"),  # neither text nor bytes
    ({"type": "resource", "uri": "file:///a", "text": "x", "lines": [9, 2]}, "invalid"),
    ({"type": "data", "value": DEEP}, "invalid"),
    ([{"type": "text", "text": "nested"}], "invalid"),  # a list inside the list
    ({"type": "text"}, "invalid"),
    ({"type": "image", "media_type": "image/png", "data": PNG64, "metadata": "x"}, "invalid"),
])
def test_hostile_parts_are_refused_with_a_reason(bad, reason):
    with pytest.raises(ContentError) as caught:
        parse_content([{"type": "text", "text": "hi"}, bad])
    assert caught.value.reason == reason, str(caught.value)
    assert "part 1" in str(caught.value), "the error names the part"


def test_limits_on_parts_sizes_and_media_types():
    limits = ContentLimits(max_parts=2, max_part_bytes=40, max_content_bytes=60, media_types=("image/jpeg",))
    with pytest.raises(ContentError, match="at most 2 parts"):
        parse_content([{"type": "text", "text": "x"}] * 3, limits)
    with pytest.raises(ContentError, match="48 bytes; the limit is 40") as caught:
        parse_content([image()], limits)
    assert caught.value.reason == "too_large"
    small = ContentLimits(max_part_bytes=100, max_content_bytes=60)
    with pytest.raises(ContentError, match="96 bytes; the limit is 60"):
        parse_content([image(), image()], small)
    with pytest.raises(ContentError, match="not a media type this server takes") as caught:
        parse_content([image(data=base64.b64encode(PNG[:30]).decode())], limits)
    assert caught.value.reason == "unsupported"


def test_safe_names():
    assert safe_name("..\\..\\boot.ini") == "boot.ini"
    assert safe_name("/etc/passwd") == "passwd"
    assert safe_name("a\x00b\u202ec.png") == "abc.png"
    assert safe_name("...") == "file"


def test_messages_and_events_keep_parts_and_read_old_shapes():
    message = Message("user", "look", parts=(Part.of_text("look"), Part.media("image", "image/png", data=PNG)))
    assert Message.from_dict(message.to_dict()) == message
    assert Message.from_dict({"role": "user", "content": "plain"}) == Message("user", "plain")
    listed = Message.from_dict({"role": "user", "content": [{"type": "text", "text": "hi "}, image()]})
    assert listed.parts[1].data == PNG and listed.content == "hi \n[image: image/png, 48 bytes]"
    with pytest.raises(ValueError, match="message parts"):
        Message.from_dict({"role": "user", "content": [image(data="%%%")]})
    for event in (ReplyPart(Part.media("image", "image/png", data=PNG)),
                  ToolFinished("c", "draw", "ok", parts=(Part.link("https://x.example/a.pdf"),))):
        assert event_from_dict(event_to_dict(event)) == event
    assert "parts" not in event_to_dict(ToolFinished("c", "t", 1)), "no parts: the old shape"


# -- through the kernel ------------------------------------------------------------------------
async def test_the_backend_gets_the_parts_and_a_text_backend_gets_their_text():
    seen = {}

    class Agent:
        def run(self, message, *, history=None, context=None):
            seen["message"], seen["content"] = message, context.content
            yield RunStarted(context.run_id)
            yield TextDelta("ok")
            yield RunFinished(context.run_id, "ok")

    kernel = kernel_for_agent(Agent, accepts={"image"})
    events = await collect(kernel, [{"type": "text", "text": "describe"}, image()])
    assert final(events).text == "ok"
    assert seen["message"] == "describe\n[image: image/png, 48 bytes]"
    assert [p.kind for p in seen["content"]] == ["text", "image"] and seen["content"][1].data == PNG
    await collect(kernel, "plain")
    assert seen["message"] == "plain" and seen["content"] == ()


async def test_a_part_the_backend_cannot_take_is_refused_before_the_run():
    kernel = scripted_kernel(accepts="")  # text only
    with pytest.raises(RunRefused) as caught:
        kernel.run([{"type": "text", "text": "hi"}, image()])
    assert caught.value.reason == "unsupported_content"
    assert "does not take image parts (it takes: text only)" in str(caught.value)
    assert kernel.active_runs == 0
    # what text stands for goes to any backend
    events = await collect(kernel, [{"type": "text", "text": "read"}, {"type": "resource", "uri": "file:///a",
                                                                      "text": "body"}])
    assert "body" in final(events).text


async def test_the_kernels_limits_refuse_content():
    kernel = scripted_kernel(Limits(max_part_bytes=10))
    with pytest.raises(RunRefused) as caught:
        kernel.run([image()])
    assert caught.value.reason == "too_large"
    kernel = scripted_kernel(Limits(media_types=("image/jpeg",)))
    with pytest.raises(RunRefused) as caught:
        kernel.run([image()])
    assert caught.value.reason == "unsupported_content"
    with pytest.raises(RunRefused) as caught:
        kernel.run([image(data="!!")])
    assert caught.value.reason == "invalid"
    with pytest.raises(RunRefused):
        kernel.run({"type": "text"})


async def test_a_thread_keeps_the_users_parts_the_reply_parts_and_tool_parts(tmp_path):
    store = SQLiteThreadStore(tmp_path / "t.db")
    kernel = scripted_kernel(store=store)
    thread, _ = await kernel.threads.open("local", "pics")
    events = await collect(kernel, [{"type": "text", "text": "/draw /image draw it"}, image(name="in.png")],
                           thread=thread)
    assert any(type(e) is ReplyPart for e in events)
    drawn = next(e for e in events if type(e) is ToolFinished and e.name == "draw")
    assert drawn.parts[0].media_type == "image/png"
    kept = (await kernel.threads.get("local", "pics")).messages
    user = kept[0]
    assert user.role == "user" and [p.kind for p in user.parts] == ["text", "image"] and user.parts[1].data == PNG
    tool = next(m for m in kept if m.role == "tool" and m.tool_call_id == drawn.call_id)
    assert tool.parts == drawn.parts
    reply = kept[-1]
    assert reply.role == "assistant" and [p.kind for p in reply.parts] == ["image", "text"]
    assert reply.parts[1].text.startswith("Received: 1 image (image/png, 48 bytes, in.png)")
    # the next run's history carries them, and a restart reads them back
    await store.close()
    again = SQLiteThreadStore(tmp_path / "t.db")
    assert (await again.get("local", "pics")).messages == kept
    await again.close()


async def test_reply_parts_fall_where_they_came_in_the_text(tmp_path):
    class Agent:
        def run(self, message, *, history=None, context=None):
            yield RunStarted(context.run_id)
            yield TextDelta("before ")
            yield ReplyPart(Part.media("image", "image/png", data=PNG))
            yield TextDelta("after")
            yield RunFinished(context.run_id, "before after")

    store = SQLiteThreadStore(tmp_path / "t.db")
    kernel = Kernel(kernel_for_agent(Agent).backend, store=store)
    thread, _ = await kernel.threads.open("local", "t1")
    await collect(kernel, "go", thread=thread)
    reply = (await kernel.threads.get("local", "t1")).messages[-1]
    assert [(p.kind, p.text) for p in reply.parts] == [("text", "before "), ("image", None), ("text", "after")]
    assert reply.content == "before \n[image: image/png, 48 bytes]\nafter"
    await store.close()


async def test_a_backend_that_breaks_the_part_contract_fails_the_run():
    class Agent:
        def run(self, message, *, history=None, context=None):
            yield RunStarted(context.run_id)
            yield ReplyPart("not a part")
            yield RunFinished(context.run_id, "")

    events = await collect(kernel_for_agent(Agent), "x")
    assert "ReplyPart needs a Part" in final(events).error


async def test_tool_parts_are_checked_too():
    class Agent:
        def run(self, message, *, history=None, context=None):
            yield RunStarted(context.run_id)
            yield ToolStarted("c", "t", {})
            yield ToolFinished("c", "t", "r", parts=({"type": "image"},))
            yield RunFinished(context.run_id, "")

    events = await collect(kernel_for_agent(Agent), "x")
    assert "ToolFinished.parts must hold" in final(events).error


async def test_a_door_checks_content_before_it_makes_anything(tmp_path):
    kernel = scripted_kernel(accepts="", store=SQLiteThreadStore(tmp_path / "t.db", max_thread_chars=40))
    assert kernel.check_content("plain") == ("plain", ())
    with pytest.raises(RunRefused) as caught:
        kernel.check_content([{"type": "text", "text": "x"}, image()])
    assert caught.value.reason == "unsupported_content"
    thread, _ = await kernel.threads.open("local", "small")
    from onedoor.threads import ThreadError

    kernel.threads.check_room(thread, [{"type": "text", "text": "fits"}])
    with pytest.raises(ThreadError) as refused:
        kernel.threads.check_room(thread, [{"type": "text", "text": "x"}, image()])  # 48 bytes of image, and more
    assert refused.value.reason == "too_large"
    with pytest.raises(ThreadError):
        kernel.threads.check_room(thread, [Part.media("image", "image/png", data=PNG + bytes(20))])
    await kernel.store.close()
