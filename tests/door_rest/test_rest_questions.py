"""Human in the loop over the REST door: suspended runs, their questions, resuming them.

The door on the HTTP transport's app, uvicorn in a thread on 127.0.0.1 (so a test can look
inside the kernel), httpx as the client, over JSON and SSE, with the scripted backend's
``/ask NAME {json}`` (a tool approval) and ``/question TEXT`` (an input question) in both
of its modes (sync: a worker thread; async: a task).
"""

from __future__ import annotations

import contextlib
import logging
from typing import Any, Iterator

import httpx
import pytest
from onedoor.events import STOP_CANCELLED, STOP_SUSPENDED, RunFinished
from onedoor.kernel import Limits
from onedoor.testing import scripted_kernel
from onedoor.testing.hostile import all_raw, mutations, traceback_in
from onedoor_door_rest import RestOptions
from onedoor_test_support import Recorder, wait_for
from onedoor_transport_http import HttpOptions
from rest_helpers import TOKEN, parse_sse, rest_server

MODES = ["sync", "async"]
ASK = '/ask delete_file {"path": "/tmp/notes.txt"}'
QUESTION = "/question What is your name?"


@contextlib.contextmanager
def door_server(
    mode: str, limits: Limits | None = None, rest: RestOptions | None = None, http: HttpOptions | None = None
) -> Iterator[tuple[Any, Any, httpx.Client]]:
    """(kernel, server, client) for a REST door on a scripted kernel with a Recorder."""
    kernel = scripted_kernel(limits, mode=mode)
    kernel.hooks = Recorder()
    with rest_server(kernel, rest=rest, http=http) as server:
        with httpx.Client(base_url=server.base_url, timeout=60) as client:
            yield kernel, server, client


@pytest.fixture(scope="module", params=MODES)
def door(request: Any) -> Iterator[tuple[Any, Any, httpx.Client]]:
    with door_server(request.param) as served:
        yield served


# -- helpers -----------------------------------------------------------------------------
def ask_json(client: httpx.Client, message: str = ASK) -> dict:
    """POST /chat with a message whose run asks; the reply that says so."""
    r = client.post("/rest/chat", json={"message": message})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["status"] == "needs_input" and body["stop_reason"] == STOP_SUSPENDED, body
    assert body["resume_url"] == f"/rest/runs/{body['run_id']}/answers"
    assert len(body["questions"]) == 1 and body["questions"][0]["run_id"] == body["run_id"]
    return body


def ask_stream(client: httpx.Client, message: str = ASK) -> tuple[str, dict, list[tuple[str, dict]]]:
    """POST /chat/stream with a message whose run asks: (run_id, the question, events)."""
    r = client.post("/rest/chat/stream", json={"message": message})
    assert r.status_code == 200, r.text
    events, _ = parse_sse(r.text)
    names = [name for name, _ in events]
    assert names[0] == "run_started" and names[-2:] == ["question_asked", "run_finished"], names
    assert events[-1][1]["stop_reason"] == STOP_SUSPENDED
    question = events[-2][1]["question"]
    assert question["run_id"] == events[0][1]["run_id"]
    return events[0][1]["run_id"], question, events


def answers(question_id: str, outcome: str, value: Any = None) -> dict:
    one: dict[str, Any] = {"question_id": question_id, "outcome": outcome}
    if value is not None:
        one["value"] = value
    return {"answers": [one]}


def answer_json(client: httpx.Client, run_id: str, body: dict, **headers: str) -> httpx.Response:
    return client.post(f"/rest/runs/{run_id}/answers", json=body, headers=headers)


def answer_stream(client: httpx.Client, run_id: str, body: dict) -> list[tuple[str, dict]]:
    r = client.post(f"/rest/runs/{run_id}/answers/stream", json=body)
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("text/event-stream")
    events, _ = parse_sse(r.text)
    assert events[0] == ("run_started", {"type": "run_started", "run_id": run_id})
    assert events[1][0] == "question_answered"
    assert sum(name in ("run_finished", "run_failed") for name, _ in events) == 1
    return events


def check_error(r: httpx.Response, status: int, code: str, words: str = "") -> dict:
    assert r.status_code == status, r.text
    assert r.headers["content-type"].startswith("application/json")
    body = r.json()
    assert set(body) == {"error", "detail"} and body["error"] == code, body
    assert words in body["detail"], body
    return body


def still_waiting(client: httpx.Client, run_id: str, question_id: str) -> None:
    r = client.get(f"/rest/runs/{run_id}/questions")
    assert r.status_code == 200, r.text
    assert [q["id"] for q in r.json()["questions"]] == [question_id]


# -- JSON --------------------------------------------------------------------------------
def test_a_run_that_does_not_ask_answers_as_before(door):
    _, _, client = door
    body = client.post("/rest/chat", json={"message": "no questions here"}).json()
    assert set(body) == {"run_id", "reply", "stop_reason", "tool_calls", "reasoning", "status", "usage"}
    assert body["status"] == "completed" and body["stop_reason"] == "end_turn"


@pytest.mark.parametrize("outcome, reply, ran", [
    ("allow_once", "Approved (allow_once): ran delete_file", True),
    ("allow_always", "Approved (allow_always): ran delete_file", True),
    ("reject_once", "Not approved (reject_once): did not run delete_file", False),
    ("reject_always", "Not approved (reject_always): did not run delete_file", False),
])
def test_approval_over_json(door, outcome, reply, ran):
    kernel, _, client = door
    asked = ask_json(client)
    question = asked["questions"][0]
    assert question["kind"] == "approval" and question["tool"]["name"] == "delete_file"
    assert question["tool"]["arguments"] == {"path": "/tmp/notes.txt"}
    assert question["choices"] == ["allow_once", "allow_always", "reject_once", "reject_always"]
    assert question["expires_at"] > 0
    # the reply so far: the tool call is announced, not finished
    assert [c["name"] for c in asked["tool_calls"]] == ["delete_file"]
    assert kernel.open_questions(asked["run_id"])

    r = answer_json(client, asked["run_id"], answers(question["id"], outcome))
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["run_id"] == asked["run_id"] and body["status"] == "completed" and body["stop_reason"] == "end_turn"
    assert body["reply"] == reply
    call = body["tool_calls"][0]
    assert call["call_id"] == question["tool"]["id"] and call["arguments"] == {"path": "/tmp/notes.txt"}
    assert call["is_error"] is not ran and (call["result"] == {"ran": "delete_file"}) is ran
    assert body["answers"] == [{"question_id": question["id"], "outcome": outcome, "by": "local", "how": "person"}]
    assert "questions" not in body and "resume_url" not in body
    assert kernel.hooks.wait_finished(asked["run_id"]).stop_reason == "end_turn"


@pytest.mark.parametrize("answer, reply", [
    ({"outcome": "accept", "value": {"answer": "Ada Lovelace"}}, 'You answered {"answer": "Ada Lovelace"}'),
    ({"outcome": "decline"}, "No answer (decline)"),
    ({"outcome": "cancel"}, "No answer (cancel)"),
])
def test_input_question_over_json(door, answer, reply):
    _, _, client = door
    asked = ask_json(client, QUESTION)
    question = asked["questions"][0]
    assert question["kind"] == "input" and question["prompt"] == "What is your name?"
    assert question["schema"]["properties"] == {"answer": {"type": "string"}}
    assert question["choices"] == ["accept", "decline", "cancel"] and "tool" not in question
    r = answer_json(client, asked["run_id"], {"answers": [{"question_id": question["id"], **answer}]})
    assert r.status_code == 200, r.text
    assert r.json()["reply"] == reply and r.json()["status"] == "completed"


def test_a_form_question_takes_typed_values(door):
    _, _, client = door
    form = ('/question {"prompt": "Deploy?", "schema": {"type": "object", "properties": {"replicas": '
            '{"type": "integer", "minimum": 1}, "region": {"type": "string", "enum": ["eu", "us"]}}, '
            '"required": ["replicas"]}}')
    asked = ask_json(client, form)
    question = asked["questions"][0]
    check_error(answer_json(client, asked["run_id"], answers(question["id"], "accept", {"replicas": 0})),
                422, "invalid_answer", "out of range")
    check_error(answer_json(client, asked["run_id"], answers(question["id"], "accept", {"replicas": 2, "region": "mars"})),
                422, "invalid_answer", "must be one of eu, us")
    r = answer_json(client, asked["run_id"], answers(question["id"], "accept", {"replicas": 3, "region": "eu"}))
    assert r.json()["reply"] == 'You answered {"region": "eu", "replicas": 3}'


# -- SSE ---------------------------------------------------------------------------------
@pytest.mark.parametrize("outcome, reply", [
    ("allow_once", "Approved (allow_once): ran delete_file"),
    ("reject_once", "Not approved (reject_once): did not run delete_file"),
])
def test_approval_over_sse(door, outcome, reply):
    _, _, client = door
    run_id, question, first = ask_stream(client)
    assert [name for name, _ in first] == ["run_started", "tool_started", "question_asked", "run_finished"]
    assert first[1][1]["call_id"] == question["tool"]["id"]
    events = answer_stream(client, run_id, answers(question["id"], outcome))
    names = [name for name, _ in events]
    assert names[:3] == ["run_started", "question_answered", "tool_finished"] and names[-1] == "run_finished"
    assert events[1][1]["answer"] == {"question_id": question["id"], "outcome": outcome, "by": "local", "how": "person"}
    assert events[2][1]["is_error"] is (outcome != "allow_once")
    end = events[-1][1]
    assert end["run_id"] == run_id and end["text"] == reply and end["stop_reason"] == "end_turn"
    assert "".join(d["text"] for n, d in events if n == "text_delta") == reply


def test_input_question_over_sse(door):
    _, _, client = door
    run_id, question, _ = ask_stream(client, QUESTION)
    assert question["kind"] == "input"
    events = answer_stream(client, run_id, answers(question["id"], "accept", {"answer": "Grace"}))
    assert events[-1][1]["text"] == 'You answered {"answer": "Grace"}'


def test_json_and_sse_mix_within_one_run(door):
    _, _, client = door
    run_id, question, _ = ask_stream(client)  # asked over SSE, answered for a JSON reply
    assert answer_json(client, run_id, answers(question["id"], "allow_once")).json()["reply"].startswith("Approved")
    asked = ask_json(client, QUESTION)  # asked over JSON, answered for a stream
    events = answer_stream(client, asked["run_id"], answers(asked["questions"][0]["id"], "decline"))
    assert events[-1][1]["text"] == "No answer (decline)"


# -- refusals ----------------------------------------------------------------------------
def test_invalid_answers_are_422_and_the_question_stays_open(door):
    kernel, _, client = door
    asked = ask_json(client, QUESTION)
    run_id, qid = asked["run_id"], asked["questions"][0]["id"]
    check_error(answer_json(client, run_id, answers(qid, "accept", {"answer": 42})), 422, "invalid_answer", "string")
    check_error(answer_json(client, run_id, answers(qid, "accept", {"nickname": "x"})), 422, "invalid_answer")
    check_error(answer_json(client, run_id, answers(qid, "allow_once")), 422, "invalid_answer", "outcome must be")
    check_error(answer_json(client, run_id, {"answers": [{"question_id": qid, "outcome": "decline"}] * 2}),
                422, "invalid_answer", "once")
    check_error(client.post(f"/rest/runs/{run_id}/answers/stream", json=answers(qid, "accept", {})),
                422, "invalid_answer", "'answer' is required")
    # the body's own shape is checked before the kernel sees it
    check_error(answer_json(client, run_id, answers(qid, "maybe")), 422, "invalid_request", "outcome")
    check_error(answer_json(client, run_id, {"answers": []}), 422, "invalid_request", "answers")
    check_error(answer_json(client, run_id, {"answers": [{"question_id": qid, "outcome": "decline", "by": "x"}]}),
                422, "invalid_request", "unknown field")
    still_waiting(client, run_id, qid)
    r = answer_json(client, run_id, answers(qid, "accept", {"answer": "right this time"}))
    assert r.status_code == 200 and r.json()["reply"] == 'You answered {"answer": "right this time"}'
    assert kernel.hooks.wait_finished(run_id).stop_reason == "end_turn"


@pytest.mark.parametrize("streamed", [False, True], ids=["json", "sse"])
def test_a_second_answer_is_409(door, streamed):
    _, _, client = door
    asked = ask_json(client)
    run_id, qid = asked["run_id"], asked["questions"][0]["id"]
    assert answer_json(client, run_id, answers(qid, "allow_once")).status_code == 200
    path = f"/rest/runs/{run_id}/answers" + ("/stream" if streamed else "")
    check_error(client.post(path, json=answers(qid, "reject_once")), 409, "already_answered", qid)
    check_error(client.get(f"/rest/runs/{run_id}/questions"), 404, "unknown_question", run_id)


def test_unknown_questions_and_runs_are_404(door):
    kernel, _, client = door
    asked = ask_json(client)
    run_id, qid = asked["run_id"], asked["questions"][0]["id"]
    other = ask_json(client, QUESTION)
    for path in (f"/rest/runs/{run_id}/answers", f"/rest/runs/{run_id}/answers/stream"):
        check_error(client.post(path, json=answers("q-000000000000000000000000", "allow_once")),
                    404, "unknown_question", "q-000000000000000000000000")
        # a real question, but of another run: refused before anything is answered
        check_error(client.post(path, json=answers(other["questions"][0]["id"], "decline")), 404, "unknown_question")
        # a mix of this run's question and another's: nothing is answered either
        mixed = {"answers": [{"question_id": qid, "outcome": "allow_once"},
                             {"question_id": other["questions"][0]["id"], "outcome": "decline"}]}
        check_error(client.post(path, json=mixed), 404, "unknown_question")
    check_error(answer_json(client, "no-such-run", answers(qid, "allow_once")), 404, "unknown_question", "no-such-run")
    check_error(client.get("/rest/runs/no-such-run/questions"), 404, "unknown_question")
    still_waiting(client, run_id, qid)
    still_waiting(client, other["run_id"], other["questions"][0]["id"])
    assert answer_json(client, run_id, answers(qid, "reject_once")).json()["reply"].startswith("Not approved")
    other_q = other["questions"][0]["id"]
    assert answer_json(client, other["run_id"], answers(other_q, "cancel")).json()["reply"] == "No answer (cancel)"


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("ttl_from", ["door-option", "kernel-limit"])
def test_expired_questions_are_410_and_the_run_ends(mode, ttl_from):
    limits = Limits(question_ttl=0.3) if ttl_from == "kernel-limit" else None
    rest = RestOptions(question_ttl=0.3) if ttl_from == "door-option" else None
    with door_server(mode, limits, rest) as (kernel, _, client):
        asked = ask_json(client)
        run_id, qid = asked["run_id"], asked["questions"][0]["id"]
        streamed_run, streamed_q, _ = ask_stream(client, QUESTION)
        wait_for(lambda: kernel.active_runs == 0 and kernel.parked_runs == 0 and not kernel.worker_threads(),
                 "both parked runs to expire and end (slots and worker threads back)")
        assert kernel.hooks.wait_finished(run_id).stop_reason == STOP_CANCELLED
        assert kernel.hooks.wait_finished(streamed_run).stop_reason == STOP_CANCELLED
        check_error(answer_json(client, run_id, answers(qid, "allow_once")), 410, "question_expired", "expired")
        check_error(client.post(f"/rest/runs/{streamed_run}/answers/stream", json=answers(streamed_q["id"], "decline")),
                    410, "question_expired")
        check_error(client.get(f"/rest/runs/{run_id}/questions"), 404, "unknown_question")
        assert client.post("/rest/chat", json={"message": "still serving"}).json()["status"] == "completed"


# -- when nobody can wait: the ask_fallback policy ------------------------------------------
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("fallback, status, reply", [
    ("deny", 200, "Not approved (reject_once): did not run delete_file"),
    ("allow", 200, "Approved (allow_once): ran delete_file"),
    ("fail", 502, "nobody can answer"),
])
def test_parking_full_answers_by_the_fallback(mode, fallback, status, reply):
    limits = Limits(max_parked_runs=1)
    with door_server(mode, limits, RestOptions(ask_fallback=fallback)) as (kernel, _, client):
        parked = ask_json(client)  # takes the one parking place
        r = client.post("/rest/chat", json={"message": ASK})
        assert r.status_code == status, r.text
        if status == 200:
            body = r.json()
            assert body["status"] == "completed" and body["reply"] == reply
            assert [a["how"] for a in body["answers"]] == ["policy"]
        else:
            check_error(r, 502, "run_failed", reply)
        assert kernel.parked_runs == 1
        r = answer_json(client, parked["run_id"], answers(parked["questions"][0]["id"], "allow_once"))
        assert r.json()["reply"] == "Approved (allow_once): ran delete_file"


# -- faults ------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", MODES)
def test_client_gone_while_the_question_is_open_leaves_the_run_parked(mode):
    with door_server(mode) as (kernel, _, client):
        with client.stream("POST", "/rest/chat/stream", json={"message": QUESTION}) as r:
            seen = ""
            for chunk in r.iter_text():
                seen += chunk
                if "event: question_asked\n" in seen and seen.endswith("\n\n"):
                    break  # leave with the question open: the connection closes here
        events, _ = parse_sse(seen)
        question = next(data["question"] for name, data in events if name == "question_asked")
        run_id = question["run_id"]
        # the run stays parked, holding its slot, and is still resumable
        assert kernel.parked_runs == 1 and kernel.active_runs == 1 and run_id not in kernel.hooks.finished
        still_waiting(client, run_id, question["id"])
        events = answer_stream(client, run_id, answers(question["id"], "accept", {"answer": "back again"}))
        assert events[-1][1]["text"] == 'You answered {"answer": "back again"}'
        wait_for(lambda: kernel.active_runs == 0 and not kernel.worker_threads(), "the resumed run to end")


@pytest.mark.parametrize("mode", MODES)
def test_client_gone_while_the_resumed_stream_runs_cancels_the_run(mode):
    with door_server(mode) as (kernel, _, client):
        asked = ask_json(client, "/slow " + ASK)
        qid = asked["questions"][0]["id"]
        with client.stream("POST", f"/rest/runs/{asked['run_id']}/answers/stream", json=answers(qid, "allow_once")) as r:
            seen = ""
            for chunk in r.iter_text():
                seen += chunk
                if "event: question_answered\n" in seen:
                    break
        wait_for(lambda: kernel.active_runs == 0 and not kernel.worker_threads(), "the resumed run to be cancelled")
        assert kernel.hooks.wait_finished(asked["run_id"]).stop_reason == STOP_CANCELLED


@pytest.mark.parametrize("mode", MODES)
def test_server_shutdown_ends_every_parked_run(mode):
    kernel = scripted_kernel(mode=mode)
    kernel.hooks = Recorder()
    with rest_server(kernel) as server, httpx.Client(base_url=server.base_url, timeout=60) as client:
        run_ids = [ask_json(client)["run_id"], ask_json(client, QUESTION)["run_id"],
                   ask_stream(client)[0], ask_stream(client, QUESTION)[0]]
        assert kernel.parked_runs == 4 and kernel.active_runs == 4
        if mode == "sync":
            assert len(kernel.worker_threads()) == 4  # each blocked in ask_sync
    # the server has stopped: each parked run ended cancelled, and nothing is left running
    wait_for(lambda: kernel.active_runs == 0 and kernel.parked_runs == 0 and not kernel.worker_threads(),
             "every parked run to end after the server stopped (slots, parking places, worker threads)")
    assert {run_id: kernel.hooks.finished[run_id].stop_reason for run_id in run_ids} == dict.fromkeys(run_ids, STOP_CANCELLED)
    assert all(isinstance(outcome, RunFinished) for outcome in kernel.hooks.finished.values())


def test_the_transport_guard_covers_the_resume_calls():
    auth = {"Authorization": f"Bearer {TOKEN}"}
    with door_server("async", http=HttpOptions(port=0, token=TOKEN)) as (kernel, _, client):
        client.headers.update(auth)
        asked = ask_json(client)
        run_id, qid = asked["run_id"], asked["questions"][0]["id"]
        body = answers(qid, "allow_once")
        for suffix in ("", "/stream"):
            path = f"/rest/runs/{run_id}/answers{suffix}"
            check_error(client.post(path, json=body, headers={"Origin": "http://evil.example"}), 403, "forbidden_origin")
            r = httpx.post(client.base_url.join(path), json=body, timeout=30)  # no token
            check_error(r, 401, "unauthorized")
        check_error(httpx.get(client.base_url.join(f"/rest/runs/{run_id}/questions"), timeout=30), 401, "unauthorized")
        still_waiting(client, run_id, qid)  # none of those answered anything
        assert answer_json(client, run_id, body).json()["reply"].startswith("Approved")


# -- hostile input -----------------------------------------------------------------------
class UvicornErrors(logging.Handler):
    """What uvicorn logs as errors (an exception out of the app would be here)."""

    def __init__(self) -> None:
        super().__init__(level=logging.ERROR)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))


@pytest.mark.timeout(600)
@pytest.mark.parametrize("mode", MODES)
def test_hostile_bodies_and_paths_on_the_resume_calls(mode):
    with door_server(mode) as (kernel, _, client):
        errors = UvicornErrors()
        logging.getLogger("uvicorn.error").addHandler(errors)
        try:
            asked = ask_json(client)
            run_id, qid = asked["run_id"], asked["questions"][0]["id"]
            valid = answers(qid, "allow_once")
            cases = all_raw(line_framed=False) + list(mutations(valid))
            assert len(cases) > 100
            statuses: dict[int, int] = {}
            for case in cases:
                for suffix in ("", "/stream"):
                    r = client.post(f"/rest/runs/{run_id}/answers{suffix}", content=case.payload,
                                    headers={"content-type": "application/json"})
                    statuses[r.status_code] = statuses.get(r.status_code, 0) + 1
                    assert 400 <= r.status_code < 500, (case.name, suffix, r.status_code, r.text[:300])
                    assert set(r.json()) == {"error", "detail"}, (case.name, r.text[:300])
            for path in [f"/rest/runs/{'r' * 129}/answers", "/rest/runs/%00/answers", "/rest/runs/%F0%9F%98%80/answers",
                         "/rest/runs/..%2F..%2Fchat/answers", "/rest/runs//answers", "/rest/runs/%ED%A0%80/answers"]:
                for suffix in ("", "/stream"):
                    r = client.post(path + suffix, json=valid)
                    assert r.status_code in (404, 422), (path, r.status_code, r.text[:300])
                    assert set(r.json()) == {"error", "detail"}
                r = client.get(path.replace("/answers", "/questions"))
                assert r.status_code in (404, 422), (path, r.status_code, r.text[:300])
            # none of it answered the question or started a run; the real answer still works
            still_waiting(client, run_id, qid)
            assert len(kernel.hooks.started) == 1 and kernel.active_runs == 1
            r = answer_json(client, run_id, valid)
            assert r.status_code == 200 and r.json()["reply"].startswith("Approved")
        finally:
            logging.getLogger("uvicorn.error").removeHandler(errors)
        logs = "\n".join(errors.lines)
        assert traceback_in(logs) is None and not errors.lines, logs[-3000:]
        print(f"\nhostile corpus on the resume calls ({mode}): {len(cases)} cases x 2 endpoints, statuses {statuses}")


# -- OpenAPI -----------------------------------------------------------------------------
def test_the_openapi_document_describes_the_resume_calls(door):
    _, _, client = door
    doc = client.get("/rest/openapi.json").json()
    paths = doc["paths"]
    answer_op = paths["/runs/{run_id}/answers"]["post"]
    stream_op = paths["/runs/{run_id}/answers/stream"]["post"]
    assert paths["/runs/{run_id}/questions"]["get"]["operationId"] == "questions"
    for op in (answer_op, stream_op):
        assert {"404", "409", "410", "422"} <= set(op["responses"])
        assert op["requestBody"]["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/AnswersRequest"}
    assert "text/event-stream" in stream_op["responses"]["200"]["content"]
    schemas = doc["components"]["schemas"]
    assert set(schemas["AnswerIn"]["properties"]["outcome"]["enum"]) == {
        "allow_once", "allow_always", "reject_once", "reject_always", "accept", "decline", "cancel"}
    assert {"questions", "status", "resume_url", "answers"} <= set(schemas["ChatResponse"]["properties"])
    assert "schema" in schemas["QuestionOut"]["properties"]
    events = paths["/chat/stream"]["post"]["responses"]["200"]["content"]["text/event-stream"]["schema"]
    assert {"question_asked", "question_answered"} <= set(events["properties"]["event"]["enum"])
