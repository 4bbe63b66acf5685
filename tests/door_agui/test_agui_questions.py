"""Questions over AG-UI on a real uvicorn: the interrupt outcome, resume, and every way a
resume can go wrong (httpx; every event checked by ag-ui-validate and the ag_ui models)."""

from __future__ import annotations

import asyncio
import json
import threading
import time
import uuid
from datetime import datetime

import httpx
import pytest
from ag_ui.core import Event as AguiEvent
from ag_ui_validate.pytest_plugin import validate_agui
from agui_helpers import agui_server, parse_sse, run_input
from onedoor.kernel import Limits
from onedoor_door_agui import AguiOptions
from onedoor_test_support import wait_for
from pydantic import TypeAdapter

EVENT = TypeAdapter(AguiEvent)
ASK = '/ask deploy {"env": "prod"}'
FORM = {
    "type": "object",
    "properties": {
        "colour": {"type": "string", "enum": ["red", "green"]},
        "count": {"type": "integer", "minimum": 1},
        "ok": {"type": "boolean"},
    },
    "required": ["colour"],
}


def post(base: str, payload) -> httpx.Response:
    return httpx.post(f"{base}/agui/", json=payload, timeout=60)


def check(events: list[dict]) -> list[dict]:
    """Zero ag-ui-validate errors or warnings, every event a valid ag_ui model, one ending."""
    report = validate_agui(events)
    problems = [d.message for d in report.diagnostics if d.severity != "info"]
    assert report.summary.errors == 0 and report.summary.warnings == 0, problems
    for event in events:
        EVENT.validate_python(event)
    kinds = [e["type"] for e in events]
    assert kinds[0] == "RUN_STARTED" and events[0]["protocolVersion"] == "1.0"
    assert kinds[-1] in ("RUN_FINISHED", "RUN_ERROR") and sum(k in ("RUN_FINISHED", "RUN_ERROR") for k in kinds) == 1
    return events


def stream(base: str, payload) -> list[dict]:
    response = post(base, payload)
    assert response.status_code == 200, response.text
    return check(parse_sse(response.text))


def text_of(events):
    return "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")


def interrupt_of(events) -> dict:
    outcome = events[-1]["outcome"]
    assert events[-1]["type"] == "RUN_FINISHED" and outcome["type"] == "interrupt", events[-1]
    assert len(outcome["interrupts"]) == 1
    return outcome["interrupts"][0]


def resume_input(interrupt_id: str, status: str = "resolved", payload=None, *, thread: str = "thread-1", **extra) -> dict:
    entry = {"interruptId": interrupt_id, "status": status}
    if payload is not None:
        entry["payload"] = payload
    return {"threadId": thread, "runId": uuid.uuid4().hex, "messages": [], "resume": [entry], **extra}


def ask(base: str, message: str = ASK) -> tuple[dict, list[dict], dict]:
    """Start a run that asks; its input, events and interrupt."""
    first = run_input(message)
    events = stream(base, first)
    return first, events, interrupt_of(events)


def settled(kernel) -> bool:
    return kernel.active_runs == 0 and kernel.parked_runs == 0 and not kernel.worker_threads()


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_approval_interrupt_then_approve(mode):
    with agui_server(mode=mode) as (server, kernel, recorder):
        first, events, interrupt = ask(server.base_url)
        start = next(e for e in events if e["type"] == "TOOL_CALL_START")
        args = next(e for e in events if e["type"] == "TOOL_CALL_ARGS")
        assert start["toolCallName"] == "deploy" and json.loads(args["delta"]) == {"env": "prod"}
        assert "TOOL_CALL_RESULT" not in [e["type"] for e in events]
        assert interrupt["id"].startswith("q-") and interrupt["reason"] == "tool_approval"
        assert interrupt["toolCallId"] == start["toolCallId"] and interrupt["message"] == "Allow the agent to run deploy?"
        choices = ["allow_once", "allow_always", "reject_once", "reject_always"]
        assert interrupt["responseSchema"]["properties"]["outcome"]["enum"] == choices
        assert interrupt["metadata"] == {"kind": "approval", "choices": choices, "toolName": "deploy", "arguments": {"env": "prod"}}
        left = datetime.fromisoformat(interrupt["expiresAt"].replace("Z", "+00:00")).timestamp() - time.time()
        assert 0 < left <= kernel.limits.question_ttl
        assert kernel.parked_runs == 1 and kernel.active_runs == 1
        assert first["runId"] not in recorder.finished  # parked, not finished

        second = resume_input(interrupt["id"], payload={"approved": True})
        events = stream(server.base_url, second)
        assert events[0]["runId"] == second["runId"] and events[0]["parentRunId"] == first["runId"]
        custom = next(e for e in events if e["type"] == "CUSTOM")
        assert custom["name"] == "onedoor.question_answered"
        assert custom["value"] == {"interruptId": interrupt["id"], "outcome": "allow_once", "how": "person"}
        result = next(e for e in events if e["type"] == "TOOL_CALL_RESULT")
        assert result["toolCallId"] == start["toolCallId"] and json.loads(result["content"]) == {"ran": "deploy"}
        reopened = next(e for e in events if e["type"] == "TOOL_CALL_START")
        assert reopened == {**start, "type": "TOOL_CALL_START"} and "TOOL_CALL_ARGS" not in [e["type"] for e in events]
        assert text_of(events) == "Approved (allow_once): ran deploy"
        assert events[-1]["outcome"] == {"type": "success"} and events[-1]["runId"] == second["runId"]
        assert recorder.wait_finished(first["runId"]).stop_reason == "end_turn"  # the kernel's run id is kept
        wait_for(lambda: settled(kernel), "the run to end and free its slot")


REPLIES = [
    ({"approved": False}, "Not approved (reject_once): did not run deploy"),
    ({"approved": True, "always": True}, "Approved (allow_always): ran deploy"),
    ({"approved": False, "always": True}, "Not approved (reject_always): did not run deploy"),
    ({"outcome": "allow_always"}, "Approved (allow_always): ran deploy"),
    (True, "Approved (allow_once): ran deploy"),
    (False, "Not approved (reject_once): did not run deploy"),
]


@pytest.mark.parametrize("payload, reply", REPLIES, ids=[json.dumps(p) for p, _ in REPLIES])
def test_approval_payloads(payload, reply):
    with agui_server(mode="async") as (server, kernel, _):
        _, _, interrupt = ask(server.base_url)
        events = stream(server.base_url, resume_input(interrupt["id"], payload=payload))
        assert text_of(events) == reply
        result = next(e for e in events if e["type"] == "TOOL_CALL_RESULT")
        assert result.get("metadata", {}).get("isError", False) is reply.startswith("Not")
        wait_for(lambda: settled(kernel), "the run to end")


def test_cancelled_entry_rejects_the_tool():
    with agui_server() as (server, kernel, _):
        _, _, interrupt = ask(server.base_url)
        events = stream(server.base_url, resume_input(interrupt["id"], "cancelled"))
        assert text_of(events) == "Not approved (reject_once): did not run deploy"
        assert events[-1]["outcome"] == {"type": "success"}


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_input_question_answered_with_a_value(mode):
    with agui_server(mode=mode) as (server, kernel, _):
        _, events, interrupt = ask(server.base_url, "/question What colour is the door?")
        assert interrupt["reason"] == "input_required" and interrupt["message"] == "What colour is the door?"
        assert "toolCallId" not in interrupt and interrupt["metadata"]["kind"] == "input"
        assert interrupt["responseSchema"]["properties"] == {"answer": {"type": "string"}}
        events = stream(server.base_url, resume_input(interrupt["id"], payload={"answer": "blue"}))
        assert text_of(events) == 'You answered {"answer": "blue"}'
        wait_for(lambda: settled(kernel), "the run to end")


def test_form_question_decline_and_cancel():
    question = "/question " + json.dumps({"prompt": "Settings?", "schema": FORM})
    with agui_server(mode="async") as (server, kernel, _):
        _, _, interrupt = ask(server.base_url, question)
        assert interrupt["responseSchema"] == FORM and interrupt["message"] == "Settings?"
        value = {"colour": "red", "count": 3, "ok": True}
        events = stream(server.base_url, resume_input(interrupt["id"], payload=value))
        assert text_of(events) == "You answered " + json.dumps(value, sort_keys=True)
        _, _, interrupt = ask(server.base_url, question)
        assert text_of(stream(server.base_url, resume_input(interrupt["id"]))) == "No answer (decline)"
        _, _, interrupt = ask(server.base_url, question)
        assert text_of(stream(server.base_url, resume_input(interrupt["id"], "cancelled"))) == "No answer (cancel)"
        wait_for(lambda: settled(kernel), "the runs to end")


INVALID = [
    ("/question Colour?", {"answer": 5}, "must be a string"),
    ("/question Colour?", {"answer": "x", "extra": 1}, "not a field"),
    ("/question Colour?", {}, "'answer' is required"),
    ("/question Colour?", "blue", "must be an object"),
    ("/question " + json.dumps({"prompt": "p", "schema": FORM}), {"colour": "blue"}, "must be one of red, green"),
    ("/question " + json.dumps({"prompt": "p", "schema": FORM}), {"colour": "red", "count": 0}, "out of range"),
    ("/question " + json.dumps({"prompt": "p", "schema": FORM}), {"colour": "red", "count": 1.5}, "an integer"),
    (ASK, {"approved": "yes"}, "an approval is answered with"),
    (ASK, {"outcome": "maybe"}, "outcome must be one of"),
    (ASK, {"outcome": "allow_once", "why": "because"}, "an approval is answered with"),
    (ASK, "allow", "an approval is answered with"),
]


@pytest.mark.parametrize("message, payload, needle", INVALID, ids=[f"{m[:9]}-{json.dumps(p)}" for m, p, _ in INVALID])
def test_invalid_answer_is_refused_and_the_interrupt_stays_open(message, payload, needle):
    with agui_server(mode="async") as (server, kernel, recorder):
        first, _, interrupt = ask(server.base_url, message)
        refused = post(server.base_url, resume_input(interrupt["id"], payload=payload))
        assert refused.status_code == 422, refused.text
        assert refused.json()["error"] == "invalid_answer" and needle in refused.json()["detail"]
        assert kernel.parked_runs == 1 and first["runId"] not in recorder.finished
        events = stream(server.base_url, resume_input(interrupt["id"], "cancelled"))  # still answerable
        assert events[-1]["outcome"] == {"type": "success"}
        wait_for(lambda: settled(kernel), "the run to end")


def test_double_resume_gets_409_and_unknown_ids_404():
    with agui_server() as (server, kernel, _):
        _, _, interrupt = ask(server.base_url)
        stream(server.base_url, resume_input(interrupt["id"], payload={"approved": True}))
        again = post(server.base_url, resume_input(interrupt["id"], payload={"approved": True}))
        assert again.status_code == 409 and again.json()["error"] == "already_answered"
        assert "answered: allow_once" in again.json()["detail"]
        unknown = post(server.base_url, resume_input("q-" + "0" * 24, payload={"approved": True}))
        assert unknown.status_code == 404 and unknown.json()["error"] == "unknown_question"
        # an open interrupt named from another thread looks unknown too, and stays open
        _, _, interrupt = ask(server.base_url)
        other = post(server.base_url, resume_input(interrupt["id"], payload=True, thread="thread-2"))
        assert other.status_code == 404 and other.json()["error"] == "unknown_question"
        assert kernel.parked_runs == 1
        # two entries for one interrupt, and an empty resume list (a plain run)
        entry = {"interruptId": interrupt["id"], "status": "cancelled"}
        twice = post(server.base_url, {**resume_input(interrupt["id"]), "resume": [entry, entry]})
        assert twice.status_code == 422 and twice.json()["error"] == "invalid_answer"
        assert stream(server.base_url, run_input("hello", resume=[]))[-1]["outcome"] == {"type": "success"}
        assert text_of(stream(server.base_url, resume_input(interrupt["id"], payload=True))).startswith("Approved")
        wait_for(lambda: settled(kernel), "the runs to end")


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_two_resumes_at_once_one_wins_one_gets_409(mode):
    with agui_server(mode=mode) as (server, kernel, _):
        _, _, interrupt = ask(server.base_url)
        barrier = threading.Barrier(2)
        statuses: list[int] = []

        def resume(payload) -> None:
            body = json.dumps(resume_input(interrupt["id"], payload=payload)).encode()
            with httpx.Client(timeout=60) as client:
                request = client.build_request("POST", f"{server.base_url}/agui/", content=body,
                                               headers={"content-type": "application/json"})
                barrier.wait(10)
                statuses.append(client.send(request).status_code)

        threads = [threading.Thread(target=resume, args=(p,)) for p in (True, False)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        assert sorted(statuses) == [200, 409]
        wait_for(lambda: settled(kernel), "the resumed run to end")


def test_interrupts_of_two_runs_in_one_resume_are_refused():
    with agui_server() as (server, kernel, _):
        _, _, one = ask(server.base_url)
        _, _, two = ask(server.base_url)
        both = resume_input(one["id"], payload=True)
        both["resume"].append({"interruptId": two["id"], "status": "resolved", "payload": True})
        refused = post(server.base_url, both)
        assert refused.status_code == 422 and "different runs" in refused.json()["detail"]
        assert kernel.parked_runs == 2
        server.call(kernel.cancel_all)
        wait_for(lambda: settled(kernel), "the cancelled parked runs to end")


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_expired_interrupt(mode):
    with agui_server(mode=mode, limits=Limits(question_ttl=0.3)) as (server, kernel, recorder):
        first, _, interrupt = ask(server.base_url)
        left = datetime.fromisoformat(interrupt["expiresAt"].replace("Z", "+00:00")).timestamp() - time.time()
        assert left <= 0.3
        outcome = recorder.wait_finished(first["runId"])  # the parked run expired: it ends cancelled
        assert outcome.stop_reason == "cancelled"
        wait_for(lambda: settled(kernel), "the expired run to free its slot and worker")
        late = post(server.base_url, resume_input(interrupt["id"], payload={"approved": True}))
        assert late.status_code == 410 and late.json()["error"] == "question_expired"
        # abandoning it (the client's way past an expired interrupt) is not an error
        abandon = resume_input(interrupt["id"], "cancelled")
        events = stream(server.base_url, abandon)
        assert [e["type"] for e in events] == ["RUN_STARTED", "RUN_FINISHED"]
        assert events[0]["parentRunId"] == first["runId"] and events[-1]["outcome"] == {"type": "cancelled"}
        assert events[-1]["runId"] == abandon["runId"]
        again = post(server.base_url, resume_input(interrupt["id"], payload={"approved": True}))
        assert again.status_code == 410


def test_cancel_endpoint_stops_a_parked_run():
    with agui_server() as (server, kernel, recorder):
        first, _, interrupt = ask(server.base_url)
        ok = httpx.post(f"{server.base_url}/agui/cancel", json={"runId": first["runId"], "threadId": "thread-1"})
        assert ok.status_code == 200 and ok.json()["cancelled"] is True
        assert recorder.wait_finished(first["runId"]).stop_reason == "cancelled"
        wait_for(lambda: settled(kernel), "the cancelled run to end")
        late = post(server.base_url, resume_input(interrupt["id"], payload=True))
        assert late.status_code == 410 and "cancelled" in late.json()["detail"], "a cancelled question is gone, not answered"


def _read_events(base: str, payload: dict, until) -> tuple[httpx.Client, httpx.Response, list[dict]]:
    """Open a stream and read events until ``until(events)``; the caller closes it."""
    client = httpx.Client(timeout=60)
    response = client.send(client.build_request("POST", f"{base}/agui/", json=payload), stream=True)
    assert response.status_code == 200
    events: list[dict] = []
    buffer = ""
    for chunk in response.iter_text():
        buffer += chunk
        *frames, buffer = buffer.split("\n\n")
        events += parse_sse("\n\n".join(frames) + "\n\n")
        if until(events):
            break
    return client, response, events


def test_client_that_leaves_while_parked_can_come_back_and_a_resumed_stream_cut_short_cancels():
    with agui_server(mode="sync") as (server, kernel, recorder):
        first = run_input('/slow /long 400 /ask deploy {"env": "prod"}')
        client, response, events = _read_events(server.base_url, first, lambda ev: ev and ev[-1]["type"] == "RUN_FINISHED")
        response.close()
        client.close()
        interrupt = interrupt_of(events)
        assert kernel.parked_runs == 1 and kernel.active_runs == 1  # gone client, run still parked
        assert len(kernel.worker_threads()) == 1  # the sync backend waits for the answer
        second = resume_input(interrupt["id"], payload={"approved": True})
        client, response, events = _read_events(
            server.base_url, second, lambda ev: sum(e["type"] == "TEXT_MESSAGE_CONTENT" for e in ev) >= 3
        )
        assert events[0]["parentRunId"] == first["runId"]
        response.close()  # the client goes away mid-reply: the run is cancelled
        client.close()
        assert recorder.wait_finished(first["runId"]).stop_reason == "cancelled"
        wait_for(lambda: settled(kernel), "the cancelled run to free its slot and its worker thread")


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_server_shutdown_with_parked_runs_cancels_them_and_leaves_nothing(mode):
    from onedoor.builtins.scripted import ScriptedOptions, scripted
    from onedoor.composition import ServeContext
    from onedoor.kernel import Backend, Kernel
    from onedoor_door_agui import AguiDoor
    from onedoor_test_support import Recorder
    from onedoor_transport_http import HttpOptions
    from onedoor_transport_http.testing import ThreadedServer

    recorder = Recorder()
    options = ScriptedOptions(mode=mode)
    kernel = Kernel(Backend("scripted", lambda: scripted(options)), hooks=recorder)
    ctx = ServeContext(kernel=kernel, options={"agui": AguiOptions(keepalive=0)}, door_names=["agui"], transport_name="http")
    server = ThreadedServer([AguiDoor()], ctx, HttpOptions(port=0, shutdown_grace=5))
    with server:
        runs = [ask(server.base_url, message)[0]["runId"] for message in (ASK, "/question Why?", ASK)]
        assert kernel.parked_runs == 3 and kernel.active_runs == 3
        assert len(kernel.worker_threads()) == (3 if mode == "sync" else 0)
    # leaving the block stops uvicorn: the lifespan's kernel.shutdown cancels the parked runs
    assert not server._thread.is_alive(), "the server thread did not stop"
    for run_id in runs:
        assert recorder.finished[run_id].stop_reason == "cancelled"
    wait_for(lambda: kernel.active_runs == 0 and kernel.parked_runs == 0, "every run to end")
    wait_for(lambda: not kernel.worker_threads(), "the sync workers to end")
    left = [t for t in asyncio.all_tasks(server.loop) if not t.done()]
    assert left == [], left  # no backend task, drain or timer left behind on the server's loop


def test_parking_full_uses_ask_fallback():
    with agui_server(limits=Limits(max_parked_runs=1), agui=AguiOptions(keepalive=0)) as (server, kernel, _):
        ask(server.base_url)  # takes the only parking place
        events = stream(server.base_url, run_input(ASK))
        assert text_of(events) == "Not approved (reject_once): did not run deploy"
        custom = next(e for e in events if e["type"] == "CUSTOM")
        assert custom["value"]["outcome"] == "reject_once" and custom["value"]["how"] == "policy"
        server.call(kernel.cancel_all)
    with agui_server(limits=Limits(max_parked_runs=1), agui=AguiOptions(keepalive=0, ask_fallback="allow")) as (server, kernel, _):
        ask(server.base_url)
        assert text_of(stream(server.base_url, run_input(ASK))) == "Approved (allow_once): ran deploy"
        server.call(kernel.cancel_all)
    with agui_server(limits=Limits(max_parked_runs=1), agui=AguiOptions(keepalive=0, ask_fallback="fail")) as (server, kernel, _):
        ask(server.base_url)
        events = stream(server.base_url, run_input(ASK))
        assert events[-1]["type"] == "RUN_ERROR" and "nobody can answer" in events[-1]["message"]
        server.call(kernel.cancel_all)


def test_snapshot_with_an_interrupt_and_after_the_resume():
    with agui_server(agui=AguiOptions(keepalive=0, snapshot="always")) as (server, kernel, _):
        first, events, interrupt = ask(server.base_url)
        snapshot = events[-2]
        assert snapshot["type"] == "MESSAGES_SNAPSHOT"
        call = snapshot["messages"][-1]["toolCalls"][0]
        assert call["id"] == interrupt["toolCallId"]
        # the client sends back what it has: its messages, plus the resume
        events = stream(server.base_url, {**resume_input(interrupt["id"], payload=True), "messages": snapshot["messages"]})
        roles = [m["role"] for m in events[-2]["messages"]]
        assert roles == ["user", "assistant", "tool", "assistant"]
        assert events[-2]["messages"][2]["toolCallId"] == call["id"]
