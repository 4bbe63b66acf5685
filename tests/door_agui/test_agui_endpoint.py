"""The AG-UI endpoint on a real uvicorn: streams, frontend tools, cancellation, bad input."""

from __future__ import annotations

import json
import threading
import time

import httpx
import pytest
from ag_ui_validate.pytest_plugin import validate_agui
from agui_helpers import TOKEN, agui_server, parse_sse, run_input
from onedoor.kernel import Limits
from onedoor_door_agui import AguiOptions
from onedoor_test_support import await_for, wait_for


def post_run(base: str, payload, **kwargs) -> httpx.Response:
    return httpx.post(f"{base}/agui/", json=payload, timeout=30, **kwargs)


def assert_valid(events: list[dict]) -> None:
    report = validate_agui(events)
    assert report.summary.errors == 0 and report.summary.warnings == 0, [d.message for d in report.diagnostics]
    kinds = [e["type"] for e in events]
    assert kinds[0] == "RUN_STARTED" and events[0]["protocolVersion"] == "1.0"
    assert sum(k in ("RUN_FINISHED", "RUN_ERROR") for k in kinds) == 1 and kinds[-1] in ("RUN_FINISHED", "RUN_ERROR")


def text_of(events):
    return "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_normal_run_streams_a_valid_sequence(mode):
    with agui_server(mode=mode) as (server, kernel, _):
        payload = run_input("hello there")
        response = post_run(server.base_url, payload)
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        assert response.headers["cache-control"] == "no-cache"
        assert response.headers["x-accel-buffering"] == "no"
        assert "\r\n" not in response.text and response.text.endswith("\n\n")
        events = parse_sse(response.text)
        assert_valid(events)
        assert events[0]["threadId"] == "thread-1" and events[0]["runId"] == payload["runId"]
        assert text_of(events) == "You said: hello there (2 words, turn 1)"
        kinds = [e["type"] for e in events]
        for kind in ("REASONING_START", "TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "TOOL_CALL_RESULT"):
            assert kind in kinds
        assert events[-1]["outcome"] == {"type": "success"}


def test_history_is_passed_to_the_backend():
    with agui_server() as (server, _, _):
        messages = [
            {"id": "s", "role": "developer", "content": "be brief"},
            {"id": "u0", "role": "user", "content": "first"},
            {"id": "r0", "role": "reasoning", "content": "thinking"},
            {"id": "a0", "role": "assistant", "content": "ok"},
            {"id": "u1", "role": "user", "content": [{"type": "text", "text": "second one"}]},
        ]
        events = parse_sse(post_run(server.base_url, run_input(messages=messages)).text)
        assert_valid(events)
        assert text_of(events) == "You said: second one (2 words, turn 2)"


@pytest.mark.parametrize("directive, needle", [("/fail boom", "ScriptedFailure"), ("/error x", "reports an error")])
def test_failing_backend_ends_with_run_error(directive, needle):
    with agui_server() as (server, _, _):
        events = parse_sse(post_run(server.base_url, run_input(directive)).text)
        assert_valid(events)
        assert events[-1]["type"] == "RUN_ERROR" and needle in events[-1]["message"]


def test_idle_backend_times_out_with_run_error():
    with agui_server(limits=Limits(idle_timeout=0.5, cancel_grace=0.5)) as (server, _, _):
        events = parse_sse(post_run(server.base_url, run_input("/hang")).text)
        assert_valid(events)
        assert events[-1]["type"] == "RUN_ERROR" and "idle timeout" in events[-1]["message"]


def test_frontend_tool_round_trip():
    tools = [{"name": "confirm", "description": "Ask the user", "parameters": {"type": "object"}}]
    with agui_server() as (server, _, _):
        first = run_input('/call confirm {"question": "ship?"}', tools=tools)
        events = parse_sse(post_run(server.base_url, first).text)
        assert_valid(events)
        start = next(e for e in events if e["type"] == "TOOL_CALL_START")
        args = next(e for e in events if e["type"] == "TOOL_CALL_ARGS")
        assert start["toolCallName"] == "confirm" and json.loads(args["delta"]) == {"question": "ship?"}
        pending = events[-1]["outcome"]["pendingToolCallIds"]
        assert pending == [start["toolCallId"]] and "TOOL_CALL_RESULT" not in [e["type"] for e in events]
        messages = first["messages"] + [
            {
                "id": "a1",
                "role": "assistant",
                "toolCalls": [{"id": pending[0], "type": "function", "function": {"name": "confirm", "arguments": args["delta"]}}],
            },
            {"id": "t1", "role": "tool", "toolCallId": pending[0], "content": "yes"},
        ]
        events = parse_sse(post_run(server.base_url, run_input(messages=messages, tools=tools)).text)
        assert_valid(events)
        assert text_of(events) == "The tool returned: yes"
        assert events[-1]["outcome"] == {"type": "success"}


def test_unknown_frontend_tool_is_not_called():
    with agui_server() as (server, _, _):
        events = parse_sse(post_run(server.base_url, run_input("/call nope {}")).text)
        assert_valid(events)
        assert "No client tool named 'nope'" in text_of(events)


def test_messages_snapshot_on_request_and_by_size():
    with agui_server(agui=AguiOptions(keepalive=0, snapshot_after=6)) as (server, _, _):
        payload = run_input("snap", forwardedProps={"messagesSnapshot": True})
        events = parse_sse(post_run(server.base_url, payload).text)
        assert_valid(events)
        snapshot = events[-2]
        assert snapshot["type"] == "MESSAGES_SNAPSHOT"
        roles = [m["role"] for m in snapshot["messages"]]
        assert roles == ["user", "reasoning", "assistant", "tool", "assistant"]
        assert snapshot["messages"][0] == {"id": "u1", "role": "user", "content": "snap"}
        assert snapshot["messages"][-1]["content"] == text_of(events)
        ids = {e.get("messageId") for e in events} | {e.get("parentMessageId") for e in events}
        assert all(m["id"] in ids for m in snapshot["messages"][1:])
        # not asked and a short history: no snapshot
        events = parse_sse(post_run(server.base_url, run_input("plain")).text)
        assert "MESSAGES_SNAPSHOT" not in [e["type"] for e in events]
        # a long history: a snapshot without asking
        long = [{"id": f"m{i}", "role": "user" if i % 2 == 0 else "assistant", "content": f"m{i}"} for i in range(7)]
        events = parse_sse(post_run(server.base_url, run_input(messages=long)).text)
        assert_valid(events)
        assert events[-2]["type"] == "MESSAGES_SNAPSHOT" and len(events[-2]["messages"]) == 7 + 4


def _stream_until(base: str, payload: dict, stop_after: int, headers=None):
    """Open a stream, read ``stop_after`` events, then hand back (client, response, events)."""
    client = httpx.Client(timeout=30)
    response = client.send(client.build_request("POST", f"{base}/agui/", json=payload, headers=headers), stream=True)
    events, buffer = [], ""
    lines = response.iter_text()
    while len(events) < stop_after:
        buffer += next(lines)
        *frames, buffer = buffer.split("\n\n")
        events += parse_sse("\n\n".join(frames) + "\n\n")
    return client, response, events, buffer, lines


def test_client_disconnect_cancels_the_run():
    with agui_server(delay=0.02) as (server, kernel, recorder):
        payload = run_input("/long 2000 go")
        client, response, events, _, _ = _stream_until(server.base_url, payload, 20)
        response.close()
        client.close()
        outcome = recorder.wait_finished(payload["runId"])
        assert outcome.stop_reason == "cancelled"
        deadline = time.monotonic() + 10
        while kernel.active_runs and time.monotonic() < deadline:
            time.sleep(0.02)
        wait_for(lambda: kernel.active_runs == 0, "every run to end")
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_cancel_endpoint_ends_with_cancelled_outcome(mode):
    with agui_server(delay=0.02, mode=mode) as (server, _, recorder):
        payload = run_input("/long 2000 go")
        client, response, events, buffer, lines = _stream_until(server.base_url, payload, 20)
        refused = httpx.post(f"{server.base_url}/agui/cancel", json={"runId": "nope"})
        assert refused.status_code == 404
        wrong_thread = httpx.post(f"{server.base_url}/agui/cancel", json={"runId": payload["runId"], "threadId": "other"})
        assert wrong_thread.status_code == 404
        ok = httpx.post(f"{server.base_url}/agui/cancel", json={"runId": payload["runId"], "threadId": "thread-1"})
        assert ok.status_code == 200 and ok.json()["cancelled"] is True
        rest = buffer + "".join(lines)
        client.close()
        events += parse_sse(rest)
        assert_valid(events)
        assert events[-1]["type"] == "RUN_FINISHED" and events[-1]["outcome"] == {"type": "cancelled"}
        assert recorder.wait_finished(payload["runId"]).stop_reason == "cancelled"


def test_busy_server_answers_429_with_retry_after_and_duplicate_run_409():
    with agui_server(limits=Limits(max_concurrent_runs=1, retry_after=2)) as (server, kernel, _):
        payload = run_input("/hang")
        client, response, _, _, _ = _stream_until(server.base_url, payload, 1)
        try:
            duplicate = post_run(server.base_url, payload)
            assert duplicate.status_code == 409 and duplicate.json()["error"] == "run_in_use"
            busy = post_run(server.base_url, run_input("hi"))
            assert busy.status_code == 429
            assert busy.headers["retry-after"] == "2" and busy.json()["error"] == "busy"
        finally:
            response.close()
            client.close()
        deadline = time.monotonic() + 10
        while kernel.active_runs and time.monotonic() < deadline:
            time.sleep(0.02)
        assert post_run(server.base_url, run_input("hi again")).status_code == 200


def test_keepalive_comments_while_the_backend_is_silent():
    with agui_server(agui=AguiOptions(keepalive=0.1)) as (server, _, _):
        payload = run_input("/hang")
        client, response, events, buffer, lines = _stream_until(server.base_url, payload, 1)
        try:
            for _ in range(200):
                if ": keepalive\n\n" in buffer:
                    break
                buffer += next(lines)
            assert ": keepalive\n\n" in buffer
        finally:
            response.close()
            client.close()


BAD_INPUTS = [
    ("not json", b"{nope", 400, "not valid JSON"),
    ("not an object", b"[1, 2]", 422, "JSON object"),
    ("missing runId", json.dumps({"threadId": "t", "messages": []}).encode(), 422, "'runId'"),
    ("messages not a list", json.dumps({"threadId": "t", "runId": "r", "messages": {}}).encode(), 422, "must be a list"),
    ("unknown role", json.dumps(run_input(messages=[{"id": "1", "role": "robot", "content": "hi"}])).encode(), 422, "unknown role 'robot'"),
    ("no user message", json.dumps(run_input(messages=[{"id": "1", "role": "assistant", "content": "hi"}])).encode(), 422, "no user message"),
    ("empty messages", json.dumps(run_input(messages=[])).encode(), 422, "no user message"),
    ("blank prompt", json.dumps(run_input("   ")).encode(), 422, "no text"),
    ("wrong types", json.dumps({"threadId": 5, "runId": "r", "messages": [{"id": "1", "role": "user"}]}).encode(), 422, "invalid RunAgentInput"),
    (
        "tool twice",
        json.dumps(run_input("hi", tools=[{"name": "a", "description": ""}, {"name": "a", "description": ""}])).encode(),
        422,
        "listed twice",
    ),
    ("message too long", json.dumps(run_input("x" * 30_000)).encode(), 413, "limit"),
    ("body too large", json.dumps(run_input("x" * 70_000)).encode(), 413, "over"),
]


@pytest.mark.parametrize("name, body, status, needle", BAD_INPUTS, ids=[b[0] for b in BAD_INPUTS])
def test_bad_input_gets_a_clear_error_and_the_server_keeps_serving(name, body, status, needle):
    with agui_server(limits=Limits(max_message_chars=20_000)) as (server, kernel, _):
        response = httpx.post(f"{server.base_url}/agui/", content=body, headers={"content-type": "application/json"})
        assert response.status_code == status, response.text
        detail = response.json()
        assert set(detail) == {"error", "detail"} and needle in detail["detail"]
        wait_for(lambda: kernel.active_runs == 0, "every run to end")
        events = parse_sse(post_run(server.base_url, run_input("still there?")).text)
        assert events[-1]["type"] == "RUN_FINISHED"


def test_token_is_required_on_every_route():
    with agui_server(token=TOKEN) as (server, _, _):
        base = server.base_url
        missing = post_run(base, run_input("hi"))
        assert missing.status_code == 401 and missing.json()["detail"] == "missing bearer token"
        wrong = post_run(base, run_input("hi"), headers={"Authorization": "Bearer wrong-token-000000000"})
        assert wrong.status_code == 401
        assert httpx.get(f"{base}/agui/").status_code == 401
        assert httpx.post(f"{base}/agui/cancel", json={"runId": "x"}).status_code == 401
        ok = post_run(base, run_input("hi"), headers={"Authorization": f"Bearer {TOKEN}"})
        assert ok.status_code == 200 and parse_sse(ok.text)[-1]["type"] == "RUN_FINISHED"
        page = httpx.get(f"{base}/agui/?token={TOKEN}")
        assert page.status_code == 200 and "HttpAgent" not in page.text[:200]


def test_page_info_and_other_routes():
    with agui_server() as (server, _, _):
        base = server.base_url
        page = httpx.get(f"{base}/agui/")
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
        assert '<textarea id="input"' in page.text and "<!--onedoor:script-->" not in page.text
        assert page.text.count("<script>") == 1 and "</script>" in page.text
        redirect = httpx.get(f"{base}/")
        assert redirect.status_code == 307 and redirect.headers["location"] == "/agui/"
        info = httpx.get(f"{base}/agui/info").json()
        assert info["protocolVersion"] == "1.0" and info["door"] == "agui"
        assert httpx.delete(f"{base}/agui/").status_code == 405
        assert httpx.get(f"{base}/agui/nope").status_code == 404
        assert httpx.post(f"{base}/agui/cancel", content=b"{x", headers={"content-type": "application/json"}).status_code == 400
        assert httpx.post(f"{base}/agui/cancel", content=b"{}", headers={"content-type": "text/plain"}).status_code == 415


def test_page_can_be_turned_off():
    with agui_server(agui=AguiOptions(keepalive=0, page=False)) as (server, _, _):
        assert httpx.get(f"{server.base_url}/agui/").status_code == 404
        assert post_run(server.base_url, run_input("hi")).status_code == 200


def test_concurrent_runs_stay_separate():
    with agui_server(delay=0.001) as (server, _, _):
        results: dict[int, list] = {}

        def one(i: int) -> None:
            results[i] = parse_sse(post_run(server.base_url, run_input(f"number {i}")).text)

        threads = [threading.Thread(target=one, args=(i,)) for i in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        assert len(results) == 6
        for i, events in results.items():
            assert_valid(events)
            assert text_of(events) == f"You said: number {i} (2 words, turn 1)"


async def test_a_stream_cut_short_by_its_task_still_ends_with_one_terminal_event():
    """The door's ASGI task cancelled mid-run (e.g. a forced server shutdown)."""
    import asyncio

    from onedoor.testing import scripted_kernel
    from onedoor_door_agui.app import AguiApp

    kernel = scripted_kernel(delay=0.01)
    app = AguiApp(kernel, AguiOptions(keepalive=0))
    body = json.dumps(run_input("/long 1000 go")).encode()
    sent: list[dict] = []
    requests = [{"type": "http.request", "body": body, "more_body": False}]
    got_content = asyncio.Event()

    async def receive():
        if requests:
            return requests.pop()
        await asyncio.Event().wait()

    async def send(message):
        sent.append(message)
        if b"TEXT_MESSAGE_CONTENT" in message.get("body", b""):
            got_content.set()

    scope = {"type": "http", "method": "POST", "path": "/agui/", "root_path": "/agui", "headers": []}
    task = asyncio.ensure_future(app(scope, receive, send))
    await asyncio.wait_for(got_content.wait(), 10)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    assert sent[-1]["more_body"] is False
    events = parse_sse(b"".join(m.get("body", b"") for m in sent[1:]).decode())
    assert_valid(events)
    assert events[-1]["outcome"] == {"type": "cancelled"}
    await await_for(lambda: kernel.active_runs == 0, "every run to end")
class SplitEmoji:
    """A backend whose deltas split an emoji between two lone surrogates (as some models do)."""

    def run(self, message, *, history=None, context=None):
        from onedoor.events import RunFinished, RunStarted, TextDelta, ToolFinished, ToolStarted

        yield RunStarted(context.run_id)
        yield TextDelta("smile \ud83d")
        yield ToolStarted("c1", "echo", {"text": "half \udc00"})
        yield ToolFinished("c1", "echo", {"text": "half \udc00"}, False)
        yield TextDelta("\ude00 done")
        yield RunFinished(context.run_id, "smile \ud83d\ude00 done")


def test_lone_surrogates_from_the_backend_are_escaped_and_the_emoji_reassembles():
    from onedoor.composition import ServeContext
    from onedoor.testing import kernel_for_agent
    from onedoor_door_agui import AguiDoor
    from onedoor_transport_http import HttpOptions
    from onedoor_transport_http.testing import ThreadedServer

    kernel = kernel_for_agent(SplitEmoji, "split")
    ctx = ServeContext(kernel=kernel, options={"agui": AguiOptions(keepalive=0)}, door_names=["agui"], transport_name="http")
    with ThreadedServer([AguiDoor()], ctx, HttpOptions(port=0)) as server:
        response = post_run(server.base_url, run_input("hi"))
        assert response.status_code == 200
        response.content.decode("utf-8")  # the bytes on the wire are valid UTF-8
        events = parse_sse(response.text)
        assert_valid(events)
        assert events[-1]["type"] == "RUN_FINISHED", events[-1]
        joined = text_of(events)  # what a JS client gets by joining the deltas (UTF-16 strings)
        assert joined.encode("utf-16", "surrogatepass").decode("utf-16") == "smile \U0001f600 done"
        result = next(e for e in events if e["type"] == "TOOL_CALL_RESULT")
        assert json.loads(result["content"]) == {"text": "half \udc00"}
        # a prompt holding a lone surrogate is refused before any run: 400, not a failed run
        body = json.dumps(run_input("a \ud800 b")).encode()
        refused = httpx.post(f"{server.base_url}/agui/", content=body, headers={"content-type": "application/json"})
        assert refused.status_code == 400 and refused.json()["error"] == "bad_json"
        wait_for(lambda: kernel.active_runs == 0, "every run to end")
