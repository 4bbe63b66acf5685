"""A REST answer that arrives at a server other than the one holding the parked run.

Two real `onedoor serve --door rest` processes share one SQLite file (``sqlite.shared_journal``)
and one tokens file: the run asks on server a, its answers are posted to server b, and the
reply (JSON, or the continuation as SSE with its cursors) is what server a would have
answered; the events route on either server reads the continuation. Refusals are the
door's local ones."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

import httpx
import pytest
from onedoor_transport_http.testing import start_server
from rest_helpers import AUTH_A, AUTH_B, TOKEN_A, TOKEN_B, sse_frames


@pytest.fixture(scope="module")
def two(tmp_path_factory: Any) -> Iterator[tuple[httpx.Client, httpx.Client]]:
    folder: Path = tmp_path_factory.mktemp("rest-two")
    tokens = folder / "tokens"
    tokens.write_text(f"alice {TOKEN_A}\nbob {TOKEN_B}\n")
    args = ["--door", "rest", "-o", f"tokens_file={tokens}", "-o", f"sqlite.path={folder / 'threads.db'}",
            "-o", "sqlite.shared_journal=true"]
    with start_server(args) as a, start_server(args) as b:
        with httpx.Client(base_url=a.base_url, timeout=60, headers=AUTH_A) as on_a, \
                httpx.Client(base_url=b.base_url, timeout=60, headers=AUTH_A) as on_b:
            yield on_a, on_b


def ask(client: httpx.Client, message: str = "/question Name?") -> dict:
    r = client.post("/rest/chat", json={"message": message})
    assert r.status_code == 200 and r.json()["status"] == "needs_input", r.text
    return r.json()


def accept(question: dict, text: str) -> dict:
    return {"answers": [{"question_id": question["id"], "outcome": "accept", "value": {"answer": text}}]}


def test_a_json_answer_posted_to_the_other_server(two) -> None:
    on_a, on_b = two
    asked = ask(on_a)
    r = on_b.post(asked["resume_url"], json=accept(asked["questions"][0], "Ada"))
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["status"] == "completed" and body["run_id"] == asked["run_id"] and "Ada" in body["reply"]
    assert body["answers"][0]["value"] == {"answer": "Ada"} and body["answers"][0]["by"] == "alice"


def test_an_approval_posted_to_the_other_server_keeps_the_calls_arguments(two) -> None:
    on_a, on_b = two
    asked = ask(on_a, '/ask deploy {"env": "prod"}')
    question = asked["questions"][0]
    r = on_b.post(asked["resume_url"], json={"answers": [{"question_id": question["id"], "outcome": "allow_once"}]})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["reply"].startswith("Approved (allow_once)")
    assert body["tool_calls"][0]["arguments"] == {"env": "prod"} and body["tool_calls"][0]["result"] == {"ran": "deploy"}


def test_a_streamed_answer_posted_to_the_other_server_and_its_events_on_both(two) -> None:
    on_a, on_b = two
    first = sse_frames(on_a.post("/rest/chat/stream", json={"message": "/question Name?"}).text)
    assert first[-1].event == "run_finished" and first[-1].data["stop_reason"] == "suspended"
    question = next(f.data["question"] for f in first if f.event == "question_asked")
    run_id, suspended = first[0].data["run_id"], first[-1].id
    r = on_b.post(f"/rest/runs/{run_id}/answers/stream", json=accept(question, "Ada"))
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream"), r.text
    rest = sse_frames(r.text)
    assert [f.event for f in rest[:2]] == ["run_started", "question_answered"]
    assert rest[-1].event == "run_finished" and "Ada" in rest[-1].data["text"]
    seqs = [int(f.id.rsplit(":", 1)[1]) for f in rest]
    assert seqs == list(range(len(first) + 1, len(first) + 1 + len(rest))), "the cursors go on from the suspension"
    for client in (on_a, on_b):
        again = sse_frames(client.get(f"/rest/runs/{run_id}/events", headers={"Last-Event-ID": suspended}).text)
        assert [(f.id, f.event) for f in again] == [(f.id, f.event) for f in rest], "the same continuation"


def test_refusals_on_the_other_server_are_the_doors_own(two) -> None:
    on_a, on_b = two
    asked = ask(on_a)
    url, question = asked["resume_url"], asked["questions"][0]
    r = on_b.post(url, json={"answers": [{"question_id": "q-nope", "outcome": "accept", "value": {"answer": "x"}}]})
    assert (r.status_code, r.json()["error"]) == (404, "unknown_question"), r.text
    r = on_b.post(url, json=accept(question, "x"), headers=AUTH_B)  # bob: another principal's run looks unknown
    assert (r.status_code, r.json()["error"]) == (404, "unknown_question"), r.text
    r = on_b.post(url, json={"answers": [{"question_id": question["id"], "outcome": "allow_once"}]})
    assert (r.status_code, r.json()["error"]) == (422, "invalid_answer"), r.text
    assert on_b.post(url, json=accept(question, "first")).status_code == 200
    r = on_b.post(url, json=accept(question, "second"))
    assert (r.status_code, r.json()["error"]) == (409, "already_answered"), r.text
    r = on_a.post(url, json=accept(question, "third"))  # and on the server that held it
    assert (r.status_code, r.json()["error"]) == (409, "already_answered"), r.text
