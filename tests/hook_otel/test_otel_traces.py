"""One trace per request, exported over OTLP/HTTP to a local receiver: the door's SERVER
span, ``invoke_agent`` with the GenAI attributes and the run's usage, ``execute_tool``,
``ask_person``, a backend's own spans nested in the run (sync and async backends)."""

from __future__ import annotations

import json

import httpx
import pytest
from otel_support import PARENT_ID, TRACE_ID, TRACEPARENT, Served, ancestors, named, one, otel_env

pytest.importorskip("onedoor_door_rest", reason="the REST door is not installed")


def stream(client: httpx.Client, path: str, body: dict, headers: dict | None = None) -> list[dict]:
    """The SSE events of a streamed run, as dicts."""
    events = []
    with client.stream("POST", path, json=body, headers=headers or {}) as response:
        assert response.status_code == 200, response.read()
        for line in response.iter_lines():
            if line.startswith("data:"):
                events.append(json.loads(line[5:]))
    return events


def door_spans(spans: list) -> list:
    """The SERVER spans of the requests the door served (the plugin's, not FastAPI's own)."""
    return [s for s in spans if s.scope == "onedoor" and s.kind == "server"]


def test_a_rest_request_its_run_and_tool_are_one_trace(receiver):
    message = "count these five words please"
    with Served(["--door", "rest"], otel_env(receiver.url)) as served, httpx.Client(base_url=served.base_url) as client:
        events = stream(client, "/rest/chat/stream", {"message": message}, {"traceparent": TRACEPARENT})
        run_id = events[0]["run_id"]
        receiver.wait_for_spans(lambda s: named(s, "invoke_agent scripted") and door_spans(s),
                                "the run's and the request's spans")
        assert served.stop() == 0  # and the exporter sends what it still holds
    spans = receiver.spans()
    finished = events[-1]
    assert finished["type"] == "run_finished"
    [usage] = finished["usage"]  # the scripted backend's own count, as the door sent it
    deltas = sum(1 for e in events if e["type"] == "text_delta")
    assert usage["output_tokens"] == deltas and usage["input_tokens"] == len(message.split())

    [request] = door_spans(spans)
    run, tool = one(spans, "invoke_agent scripted"), one(spans, "execute_tool word_count")
    assert {s.trace_id for s in (request, run, tool)} == {TRACE_ID}, "the client's trace is continued"
    assert request.kind == "server" and request.parent_id == PARENT_ID
    assert request.name == "POST /chat/stream" and request.attributes["http.route"] == "/chat/stream"
    assert request.attributes["onedoor.door"] == "rest" and request.attributes["http.request.method"] == "POST"
    # One SERVER span per request: FastAPI's own telemetry (0.16x on) leaves out what onedoor traces
    assert [s for s in spans if s.kind == "server"] == [request], [(s.scope, s.name) for s in spans]
    assert not [s for s in spans if s.scope.startswith("fastapi")], [s.name for s in spans]
    assert run.parent_id == request.span_id, [s.name for s in ancestors(run, spans)]
    assert tool.parent_id == run.span_id

    attrs = run.attributes
    assert attrs["gen_ai.operation.name"] == "invoke_agent" and attrs["gen_ai.agent.name"] == "scripted"
    assert attrs["onedoor.run.id"] == run_id and attrs["onedoor.door"] == "rest"
    assert attrs["gen_ai.usage.input_tokens"] == usage["input_tokens"]
    assert attrs["gen_ai.usage.output_tokens"] == usage["output_tokens"]
    assert attrs["gen_ai.request.model"] == usage["model"] == attrs["gen_ai.response.model"]
    assert attrs["gen_ai.provider.name"] == usage["provider"]
    assert attrs["gen_ai.response.finish_reasons"] == ["end_turn"]
    assert 0 < attrs["gen_ai.response.time_to_first_chunk"]
    assert "gen_ai.conversation.id" not in attrs  # no thread
    assert tool.attributes["gen_ai.tool.name"] == "word_count" and tool.status_code != 2
    assert tool.attributes["gen_ai.tool.call.id"] == next(e["call_id"] for e in events if e["type"] == "tool_started")
    # content stays off without the opt-in
    assert not [s for s in spans for key in s.attributes if key in ("gen_ai.input.messages", "gen_ai.output.messages",
                                                                  "gen_ai.tool.call.arguments", "gen_ai.tool.call.result")]
    assert message not in json.dumps([s.attributes for s in spans])
    assert run.resource["service.name"] == "onedoor-under-test"


def test_a_thread_is_the_conversation_and_content_is_captured_on_opt_in(receiver):
    env = otel_env(receiver.url, OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT="true")
    with Served(["--door", "rest"], env) as served, httpx.Client(base_url=served.base_url) as client:
        thread = client.post("/rest/threads", json={}).json()
        reply = client.post(f"/rest/threads/{thread['id']}/chat", json={"message": "secret plans"}).json()
        spans = receiver.wait_for_spans(lambda s: named(s, "invoke_agent scripted"), "the run's span")
    run = one(spans, "invoke_agent scripted")
    assert run.attributes["gen_ai.conversation.id"] == thread["id"]
    [asked] = json.loads(run.attributes["gen_ai.input.messages"])
    assert asked["role"] == "user" and asked["parts"] == [{"type": "text", "content": "secret plans"}]
    [answered] = json.loads(run.attributes["gen_ai.output.messages"])
    assert answered["parts"][0]["content"] == reply["reply"] and answered["finish_reason"] == "end_turn"
    tool = one(spans, "execute_tool word_count")
    assert json.loads(tool.attributes["gen_ai.tool.call.arguments"]) == {"text": "secret plans"}
    assert json.loads(tool.attributes["gen_ai.tool.call.result"]) == {"words": 2}


def test_a_failed_run_and_a_failed_tool_are_errors(receiver):
    with Served(["--door", "rest"], otel_env(receiver.url)) as served, httpx.Client(base_url=served.base_url) as client:
        failed = client.post("/rest/chat", json={"message": "/fail boom"})
        assert failed.status_code == 502
        spans = receiver.wait_for_spans(lambda s: named(s, "invoke_agent scripted"), "the failed run's span")
    run = one(spans, "invoke_agent scripted")
    assert run.status_code == 2 and "scripted failure" in run.status_message
    assert run.attributes["error.type"] == "run_failed"


def test_waiting_for_a_person_is_a_span(receiver):
    with Served(["--door", "rest"], otel_env(receiver.url)) as served, httpx.Client(base_url=served.base_url) as client:
        first = client.post("/rest/chat", json={"message": '/ask deploy {"env": "prod"}'}).json()
        assert first["status"] == "needs_input", first
        [question] = first["questions"]
        answer = {"answers": [{"question_id": question["id"], "outcome": "allow_once"}]}
        done = client.post(f"/rest/runs/{first['run_id']}/answers", json=answer).json()
        assert done["stop_reason"] == "end_turn", done
        spans = receiver.wait_for_spans(lambda s: named(s, "invoke_agent scripted") and named(s, "ask_person approval"),
                                        "the run and its question")
    run, asked = one(spans, "invoke_agent scripted"), one(spans, "ask_person approval")
    assert asked.parent_id == run.span_id
    assert asked.attributes["onedoor.question.id"] == question["id"]
    assert asked.attributes["onedoor.answer.outcome"] == "allow_once" and asked.attributes["onedoor.answer.how"] == "person"
    assert asked.attributes["gen_ai.tool.name"] == "deploy"
    tool = one(spans, "execute_tool deploy")
    assert tool.parent_id == run.span_id and tool.start_ns <= asked.start_ns and asked.end_ns <= tool.end_ns
    # the answer came in a second request; the run belongs to the first one's trace
    first_request, answering = sorted(door_spans(spans), key=lambda s: s.start_ns)
    assert first_request.name == "POST /chat" and first_request in ancestors(run, spans)
    assert answering.attributes["http.route"] == "/runs/{run_id}/answers" and answering.end_ns >= asked.end_ns


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_backends_own_spans_and_logs_nest_in_its_run(receiver, mode):
    env = otel_env(receiver.url, ONEDOOR_LOG_FORMAT="json")
    with Served(["--door", "rest", "-b", "traced", "-o", f"mode={mode}"], env) as served:
        with httpx.Client(base_url=served.base_url) as client:
            body = client.post("/rest/chat", json={"message": "hi"}).json()
        spans = receiver.wait_for_spans(lambda s: named(s, "backend work") and named(s, "invoke_agent traced"),
                                        "the backend's span")
        assert served.stop() == 0
    run, work = one(spans, "invoke_agent traced"), one(spans, "backend work")
    assert work.parent_id == run.span_id, f"{mode} backend's span is not the run's child"
    assert run.attributes["gen_ai.usage.input_tokens"] == 7 and run.attributes["gen_ai.usage.output_tokens"] == 5
    assert run.attributes["gen_ai.request.model"] == "traced-model"
    records = [json.loads(line) for line in served.errors if line.startswith("{")]
    said = [r for r in records if r.get("message") == "backend says hello"]
    assert len(said) == 1, served.errors
    assert said[0]["run_id"] == body["run_id"] and said[0]["level"] == "warning" and said[0]["logger"] == "test.backend"
    assert said[0]["trace_id"] == work.trace_id and said[0]["span_id"] == work.span_id
    ended = [r for r in records if r.get("message") == "run ended: end_turn"]
    assert len(ended) == 1 and ended[0]["run_id"] == body["run_id"]
    assert ended[0]["input_tokens"] == 7 and ended[0]["output_tokens"] == 5 and ended[0]["trace_id"] == run.trace_id
