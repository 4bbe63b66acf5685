"""Content parts through the AG-UI door (real uvicorn, SQLite threads in-process): AG-UI 1.0
parts and the legacy binary part reach the backend as onedoor parts, history keeps them,
snapshots and the thread endpoint give back what the client sent, tool results and reply
parts go out the AG-UI way, and what cannot be taken is refused before any run (the shared
hostile content corpus included)."""

from __future__ import annotations

import asyncio
import base64
import uuid
from typing import Any

import httpx
import pytest
from agui_helpers import agui_server, parse_sse
from onedoor import Backend, Limits, Part, RunFinished, RunStarted, TextDelta
from onedoor.builtins.scripted_extras import DOT_PNG
from onedoor.testing.hostile import CONTENT, CONTENT_LIMITS, ContentCase
from onedoor.threads.sqlite import SQLiteThreadStore

B64 = base64.b64encode(DOT_PNG).decode()
IMAGE = {"type": "image", "source": {"type": "data", "value": B64, "mimeType": "image/png"}, "metadata": {"filename": "cat.png"}}
AGUI_KINDS = ("text", "image", "audio", "video", "document")


def body(content: Any, *, thread: str | None = None, history: list[dict[str, Any]] | None = None, **extra: Any) -> dict[str, Any]:
    messages = [*(history or []), {"id": uuid.uuid4().hex, "role": "user", "content": content}]
    return {"threadId": thread or uuid.uuid4().hex, "runId": uuid.uuid4().hex, "messages": messages, **extra}


def post(server: Any, data: Any) -> httpx.Response:
    return httpx.post(f"{server.base_url}/agui/", json=data, timeout=30)


def events(response: httpx.Response) -> list[dict[str, Any]]:
    assert response.status_code == 200, response.text
    return parse_sse(response.text)


def reply(evs: list[dict[str, Any]]) -> str:
    last = [e["messageId"] for e in evs if e["type"] == "TEXT_MESSAGE_START"][-1]
    return "".join(e["delta"] for e in evs if e["type"] == "TEXT_MESSAGE_CONTENT" and e["messageId"] == last)


def run_on(server: Any, coro: Any) -> Any:
    return asyncio.run_coroutine_threadsafe(coro, server.loop).result(timeout=30)


@pytest.fixture
def threaded(tmp_path):
    with agui_server(store=SQLiteThreadStore(tmp_path / "threads.sqlite3")) as started:
        yield started


class Seen:
    """A backend that notes what it was given (message, parts, history) and says "ok"."""

    accepts = frozenset({"image", "audio", "video", "document"})

    def __init__(self) -> None:
        self.runs: list[dict[str, Any]] = []

    def factory(self) -> Any:
        seen = self

        class Agent:
            async def run(self, message: str, *, history: Any = None, context: Any = None) -> Any:
                seen.runs.append({"message": message, "parts": context.content, "history": list(history or ()),
                                  "extras": dict(context.extras)})
                yield RunStarted(context.run_id)
                yield TextDelta("ok")
                yield RunFinished(context.run_id, "ok")

        return Agent()


# -- in ------------------------------------------------------------------------------------
def test_text_and_image_reach_the_backend_as_parts():
    seen = Seen()
    with agui_server(backend=Backend("seen", seen.factory, accepts=seen.accepts)) as (server, _, _):
        events(post(server, body([{"type": "text", "text": "what is this?"}, IMAGE])))
    (run,) = seen.runs
    text, image = run["parts"]
    assert text == Part.of_text("what is this?")
    assert (image.kind, image.media_type, image.data, image.name) == ("image", "image/png", DOT_PNG, "cat.png")
    assert run["message"] == "what is this?\n[image cat.png: image/png, 70 bytes]"


def test_an_image_alone_is_a_message():
    with agui_server() as (server, _, _):
        text = reply(events(post(server, body([IMAGE]))))
    assert text.startswith("Received: 1 image (image/png, 70 bytes, cat.png). You said: [image cat.png")


@pytest.mark.parametrize(
    "legacy, received",
    [
        ({"type": "binary", "mimeType": "image/png", "data": B64, "filename": "a.png"}, "1 image (image/png, 70 bytes, a.png)"),
        ({"type": "binary", "mimeType": "application/pdf", "url": "https://example.org/r.pdf"},
         "1 document (application/pdf, https://example.org/r.pdf)"),
        ({"type": "binary", "mimeType": "audio/wav", "url": "https://example.org/a.wav"}, "1 audio (audio/wav, https://example.org/a.wav)"),
    ],
)
def test_the_legacy_binary_part_is_converted(legacy, received):
    with agui_server() as (server, _, _):
        text = reply(events(post(server, body([{"type": "text", "text": "see"}, legacy]))))
    assert text.startswith(f"Received: {received}. ")


def test_history_parts_stay_parts():
    seen = Seen()
    history = [
        {"id": "u0", "role": "user", "content": [{"type": "text", "text": "first"}, IMAGE]},
        {"id": "a0", "role": "assistant", "content": "a cat"},
    ]
    with agui_server(backend=Backend("seen", seen.factory, accepts=seen.accepts)) as (server, _, _):
        events(post(server, body("and now?", history=history, context=[{"description": "page", "value": "/pets"}])))
    (run,) = seen.runs
    first = run["history"][0]
    assert first.role == "user" and [p.kind for p in first.parts] == ["text", "image"] and first.parts[1].data == DOT_PNG
    assert run["extras"]["context"] == [{"description": "page", "value": "/pets"}]  # RunAgentInput.context, for the backend


def test_snapshot_and_thread_give_back_the_parts_sent(threaded):
    server, kernel, _ = threaded
    tid = "pics-" + uuid.uuid4().hex[:6]
    sent = [{"type": "text", "text": "look"}, IMAGE]
    first = events(post(server, body(sent, thread=tid, forwardedProps={"messagesSnapshot": True})))
    snap = next(e for e in first if e["type"] == "MESSAGES_SNAPSHOT")
    assert snap["messages"][0]["content"] == sent
    stored = httpx.get(f"{server.base_url}/agui/threads/{tid}", timeout=30).json()["messages"]
    assert stored[0]["role"] == "user" and stored[0]["content"] == sent  # not rewritten as text
    # a later run's snapshot rebuilds the first message from the thread: still the parts
    second = events(post(server, body("again", thread=tid, forwardedProps={"messagesSnapshot": True})))
    again = next(e for e in second if e["type"] == "MESSAGES_SNAPSHOT")["messages"]
    assert again[0] == {"id": "h0", "role": "user", "content": sent}
    thread = run_on(server, kernel.threads.get("local", tid))
    assert thread.messages[0].parts[1].data == DOT_PNG


# -- out -----------------------------------------------------------------------------------
def test_a_tool_result_with_an_image(threaded):
    server, _, _ = threaded
    tid = "draw-" + uuid.uuid4().hex[:6]
    evs = events(post(server, body("/draw a dot", thread=tid)))
    result = next(e for e in evs if e["type"] == "TOOL_CALL_RESULT" and e["toolCallId"].endswith("_draw"))
    expected = [{"type": "text", "text": "drew dot.png"},
                {"type": "image", "source": {"type": "data", "value": B64, "mimeType": "image/png"}, "metadata": {"filename": "dot.png"}}]
    assert result["content"] == expected
    stored = httpx.get(f"{server.base_url}/agui/threads/{tid}", timeout=30).json()["messages"]
    tool = next(m for m in stored if m["role"] == "tool" and m["toolCallId"].endswith("_draw"))
    assert tool["content"] == expected


def test_a_reply_part_is_named_in_the_text_and_carried_by_an_activity(threaded):
    server, _, _ = threaded
    tid = "img-" + uuid.uuid4().hex[:6]
    evs = events(post(server, body("/image a dot please", thread=tid)))
    text = reply(evs)
    assert text.startswith("[image dot.png: image/png, 70 bytes]\nYou said: a dot please")
    (activity,) = [e for e in evs if e["type"] == "ACTIVITY_SNAPSHOT"]
    assert activity["activityType"] == "onedoor.part"
    assert activity["content"]["part"] == {"type": "image", "source": {"type": "data", "value": B64, "mimeType": "image/png"},
                                           "metadata": {"filename": "dot.png"}}
    # the streamed text is the thread's text of the reply
    stored = httpx.get(f"{server.base_url}/agui/threads/{tid}", timeout=30).json()["messages"]
    assert stored[-1]["role"] == "assistant" and stored[-1]["content"] == text


# -- refused before any run ----------------------------------------------------------------
@pytest.mark.parametrize(
    "content, status, code, needle",
    [
        ([{"type": "image", "source": {"type": "file", "value": "file-abc", "provider": "openai"}}], 415, "unsupported_content",
         "file handle"),
        ([{"type": "binary", "mimeType": "image/png", "id": "f1"}], 415, "unsupported_content", "only an id"),
        ([{"type": "image", "source": {"type": "data", "value": "@@@", "mimeType": "image/png"}}], 422, "invalid_request",
         "not valid base64"),
        ([{"type": "image", "source": {"type": "data", "value": B64, "mimeType": "image/png"}, "metadata": "cat"}], 422,
         "invalid_request", "metadata"),
    ],
)
def test_refusals(threaded, content, status, code, needle):
    server, kernel, recorder = threaded
    tid = "refused-" + uuid.uuid4().hex[:6]
    response = post(server, body(content, thread=tid))
    assert (response.status_code, response.json()["error"]) == (status, code), response.text
    assert needle in response.json()["detail"]
    assert recorder.started == []
    assert httpx.get(f"{server.base_url}/agui/threads/{tid}", timeout=30).status_code == 404  # nothing stored


def test_a_backend_that_takes_text_only_refuses_an_image_before_any_run():
    with agui_server(accepts="") as (server, _, recorder):
        response = post(server, body([IMAGE]))
        assert response.status_code == 415 and response.json()["error"] == "unsupported_content"
        assert "does not take image" in response.json()["detail"]
        # an image in the history is refused the same way
        history = [{"id": "u0", "role": "user", "content": [IMAGE]}, {"id": "a0", "role": "assistant", "content": "x"}]
        assert post(server, body("hi", history=history)).status_code == 415
        assert recorder.started == []
        assert reply(events(post(server, body("hello")))).startswith("You said: hello")


def test_over_the_limits_is_413():
    with agui_server(limits=Limits(max_part_bytes=50)) as (server, _, recorder):
        response = post(server, body([IMAGE]))
        assert response.status_code == 413 and response.json()["error"] == "too_large", response.text
        assert recorder.started == []


def agui_part(part: Any) -> Any:
    """A part of the shared corpus (onedoor's JSON) the AG-UI way; one AG-UI has no part for
    is sent as it is (the protocol's own malformed input)."""
    if not isinstance(part, dict) or part.get("type") not in AGUI_KINDS:
        return part
    if part["type"] == "text":
        return {"type": "text", "text": part.get("text")}
    source: dict[str, Any] = {"type": "data", "value": part["data"]} if "data" in part else {"type": "url", "value": part.get("uri")}
    if part.get("media_type") is not None:
        source["mimeType"] = part["media_type"]
    out: dict[str, Any] = {"type": part["type"], "source": source}
    if part.get("name"):
        out["metadata"] = {"filename": part["name"]}
    return out


def expected_status(case: ContentCase) -> int:
    if not all(isinstance(p, dict) and p.get("type") in AGUI_KINDS for p in case.parts):
        return 422  # not an AG-UI part at all: the RunAgentInput is invalid
    return {"invalid": 422, "too_large": 413, "unsupported": 415}[case.reason]


@pytest.fixture(scope="module")
def corpus_server(tmp_path_factory):
    store = SQLiteThreadStore(tmp_path_factory.mktemp("agui-content") / "threads.sqlite3")
    with agui_server(limits=Limits(**CONTENT_LIMITS), store=store) as started:
        yield started


@pytest.mark.parametrize("case", CONTENT, ids=str)
def test_hostile_content_is_refused_and_the_server_keeps_serving(corpus_server, case):
    server, kernel, recorder = corpus_server
    before = len(recorder.started)
    tid = "hostile-" + uuid.uuid4().hex[:6]
    response = post(server, body([agui_part(p) for p in case.parts], thread=tid))
    assert response.status_code == expected_status(case), response.text
    error = response.json()
    assert set(error) == {"error", "detail"} and "Traceback" not in error["detail"]
    if all(isinstance(p, dict) and p.get("type") in AGUI_KINDS for p in case.parts):
        # the kernel's reason, naming the part (or the transport's body limit, for the longest list)
        assert any(word in error["detail"] for word in ("part", "body", "mimeType")), error
    assert len(recorder.started) == before  # no run
    assert httpx.get(f"{server.base_url}/agui/threads/{tid}", timeout=30).status_code == 404  # nothing half-stored
    assert reply(events(post(server, body("still there?")))).startswith("You said: still there?")
