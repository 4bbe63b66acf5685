"""A thread's shared state over the REST door (#26): GET / PATCH (JSON Patch) / PUT with
ETag and If-Match, state events in replies and streams, a chat that carries a state.

A real `onedoor serve --door rest` process on 127.0.0.1 with two principals (alice, bob)
and its own SQLite file; httpx as the client; the scripted backend's ``/state {...}`` (a
snapshot) and ``/state [...]`` (a JSON Patch) directives change the state from the agent's side.
"""

from __future__ import annotations

import json
import threading
from typing import Any, Iterator

import httpx
import jsonpatch
import pytest
from rest_helpers import AUTH_A, AUTH_B, new_thread, sse_frames, threads_server

PATCH = {"content-type": "application/json-patch+json"}
MAX_STATE = 2000


@pytest.fixture(scope="module")
def server(tmp_path_factory: Any) -> Iterator[Any]:
    folder = tmp_path_factory.mktemp("rest-state")
    with threads_server(folder, "-o", f"limits.max_state_chars={MAX_STATE}", "-o", "max_body_bytes=65536") as (served, _):
        yield served


@pytest.fixture
def client(server: Any) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.base_url, headers=AUTH_A, timeout=60) as c:
        yield c


def check_error(r: httpx.Response, status: int, code: str, words: str = "") -> dict:
    assert r.status_code == status, (r.status_code, r.text)
    body = r.json()
    assert set(body) == {"error", "detail"} and body["error"] == code, body
    assert words in body["detail"], body
    return body


def state_of(client: httpx.Client, thread_id: str, headers: dict[str, str] = AUTH_A) -> tuple[dict, int, str]:
    r = client.get(f"/rest/threads/{thread_id}/state", headers=headers)
    assert r.status_code == 200, r.text
    body = r.json()
    assert r.headers["etag"] == f'"{body["version"]}"'
    return body["state"], body["version"], r.headers["etag"]


def patch(client: httpx.Client, thread_id: str, ops: Any, **headers: str) -> httpx.Response:
    return client.patch(f"/rest/threads/{thread_id}/state", content=json.dumps(ops), headers={**PATCH, **headers})


# -- between runs ---------------------------------------------------------------------------
def test_read_patch_and_replace_with_etags(client):
    thread_id = new_thread(client)
    assert state_of(client, thread_id)[:2] == ({}, 0)
    r = patch(client, thread_id, [{"op": "add", "path": "/todos", "value": []}])
    assert r.status_code == 200 and r.json() == {"state": {"todos": []}, "version": 1}, r.text
    etag = r.headers["etag"]
    r = patch(client, thread_id, [{"op": "add", "path": "/todos/-", "value": "milk"}], **{"if-match": etag})
    assert r.json() == {"state": {"todos": ["milk"]}, "version": 2}
    # the ETag of version 1 is stale now: refused, and nothing changes
    check_error(patch(client, thread_id, [{"op": "add", "path": "/todos/-", "value": "eggs"}], **{"if-match": etag}),
                412, "state_changed")
    r = client.put(f"/rest/threads/{thread_id}/state", json={"state": {"draft": "hi"}}, headers={"if-match": '"1", "2"'})
    assert r.json() == {"state": {"draft": "hi"}, "version": 3} and r.headers["etag"] == '"3"'
    check_error(client.put(f"/rest/threads/{thread_id}/state", json={"state": {}}, headers={"if-match": '"2"'}),
                412, "state_changed")
    assert state_of(client, thread_id)[:2] == ({"draft": "hi"}, 3)
    unchanged = client.get(f"/rest/threads/{thread_id}/state", headers={"if-none-match": '"3"'})
    assert unchanged.status_code == 304 and unchanged.headers["etag"] == '"3"'


@pytest.mark.parametrize("ops, words", [
    ([{"op": "remove", "path": "/missing"}], "does not apply"),
    ([{"op": "replace", "path": "/a/b", "value": 1}], "does not apply"),
    ([{"op": "test", "path": "/a", "value": 2}], "does not apply"),
    ([{"op": "add", "path": "/b", "value": 1}, {"op": "remove", "path": "/nope"}], "does not apply"),  # all or none
    ([{"op": "remove", "path": ""}], "whole state"),
    ([{"op": "frobnicate", "path": "/a"}], "patch[0]"),
    ([{"op": "add", "path": "no-slash", "value": 1}], "not a JSON Pointer"),
    ([{"op": "add", "path": "/a"}], "'patch[0].value' is required"),
    ([{"op": "move", "path": "/a"}], "'patch[0].from' is required"),
    ({"op": "add", "path": "/a", "value": 1}, "patch"),
    ([5], "patch[0]"),
])
def test_a_patch_that_does_not_apply_is_422_and_changes_nothing(client, ops, words):
    thread_id = new_thread(client)
    assert patch(client, thread_id, [{"op": "add", "path": "/a", "value": 1}]).status_code == 200
    check_error(patch(client, thread_id, ops), 422, "invalid_request", words)
    assert state_of(client, thread_id)[:2] == ({"a": 1}, 1)


def test_bad_bodies_and_types_are_refused(client):
    thread_id = new_thread(client)
    url = f"/rest/threads/{thread_id}/state"
    r = client.patch(url, json=[{"op": "add", "path": "/a", "value": 1}])  # application/json is not a JSON Patch
    check_error(r, 415, "unsupported_media_type", "application/json-patch+json")
    assert r.headers["accept-patch"] == "application/json-patch+json"
    check_error(client.patch(url, content=b'[{"op":', headers=PATCH), 400, "bad_json")
    check_error(client.put(url, content=b'{"state": {}}', headers={"content-type": "text/plain"}), 415,
                "unsupported_media_type")
    check_error(client.put(url, json={"state": [1, 2]}), 422, "invalid_request", "state")
    check_error(client.put(url, json={"state": {}, "extra": 1}), 422, "invalid_request", "unknown field 'extra'")
    check_error(client.put(url, json={"state": {"x": "y" * MAX_STATE}}), 413, "thread_too_large", "limit")
    check_error(patch(client, thread_id, [{"op": "add", "path": "/x", "value": "y" * MAX_STATE}]), 413,
                "thread_too_large")
    check_error(client.put(url, json={"state": {"x": "y" * 70_000}}), 413, "too_large")  # over the body cap
    check_error(client.get("/rest/threads/nope!/state"), 422, "invalid_request", "not a thread id")
    assert state_of(client, thread_id)[:2] == ({}, 0)


def test_another_principals_state_is_not_there(client):
    thread_id = new_thread(client)
    assert patch(client, thread_id, [{"op": "add", "path": "/secret", "value": 42}]).status_code == 200
    for r in (
        client.get(f"/rest/threads/{thread_id}/state", headers=AUTH_B),
        client.patch(f"/rest/threads/{thread_id}/state", content=b'[{"op":"remove","path":"/secret"}]',
                     headers={**AUTH_B, **PATCH}),
        client.put(f"/rest/threads/{thread_id}/state", json={"state": {}}, headers=AUTH_B),
        client.post(f"/rest/threads/{thread_id}/chat", json={"message": "hi", "state": {}}, headers=AUTH_B),
    ):
        check_error(r, 404, "unknown_thread")
    check_error(client.get("/rest/threads/t-not-there/state"), 404, "unknown_thread")
    assert state_of(client, thread_id)[:2] == ({"secret": 42}, 1)


def test_two_changes_on_one_version_at_once_one_wins_the_other_is_told(server, client):
    thread_id = new_thread(client)
    _, _, etag = state_of(client, thread_id)
    ready = threading.Barrier(2, timeout=20)
    results: list[httpx.Response] = []

    def change(key: str) -> None:
        with httpx.Client(base_url=server.base_url, headers=AUTH_A, timeout=60) as own:
            ready.wait()
            results.append(patch(own, thread_id, [{"op": "add", "path": f"/{key}", "value": key}], **{"if-match": etag}))

    workers = [threading.Thread(target=change, args=(key,)) for key in ("left", "right")]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(30)
    assert sorted(r.status_code for r in results) == [200, 412], [r.text for r in results]
    winner = next(r for r in results if r.status_code == 200).json()
    assert state_of(client, thread_id)[:2] == (winner["state"], 1) and len(winner["state"]) == 1


# -- runs: the agent's changes, the client's state -------------------------------------------
def test_the_agents_changes_come_back_and_are_kept(client):
    thread_id = new_thread(client)
    assert patch(client, thread_id, [{"op": "add", "path": "/todos", "value": ["milk"]}]).status_code == 200
    message = '/state [{"op": "add", "path": "/todos/-", "value": "eggs"}] add eggs'
    body = client.post(f"/rest/threads/{thread_id}/chat", json={"message": message}).json()
    assert body["state"] == {"todos": ["milk", "eggs"]}
    assert body["state_events"] == [
        {"type": "state_snapshot", "state": {"todos": ["milk"]}},  # what the run started from: the thread's
        {"type": "state_delta", "ops": [{"op": "add", "path": "/todos/-", "value": "eggs"}]},
    ]
    state, version, _ = state_of(client, thread_id)
    assert state == body["state"] and version == 2


def test_the_stream_starts_with_a_snapshot_and_its_deltas_apply_to_it(client):
    thread_id = new_thread(client)
    assert patch(client, thread_id, [{"op": "add", "path": "/n", "value": 0}]).status_code == 200
    message = ('/state [{"op": "replace", "path": "/n", "value": 1}] /state {"n": 2, "m": []} '
               '/state [{"op": "add", "path": "/m/-", "value": "x"}] count')
    frames = sse_frames(client.post(f"/rest/threads/{thread_id}/chat/stream", json={"message": message}).text)
    names = [f.event for f in frames]
    assert names[:2] == ["run_started", "state_snapshot"] and names[-1] == "run_finished", names
    state: Any = None
    for frame in frames:  # a client applies every change as it comes
        if frame.event == "state_snapshot":
            state = frame.data["state"]
        elif frame.event == "state_delta":
            state = jsonpatch.apply_patch(state, frame.data["ops"])
    assert names.count("state_delta") == 2 and state == {"n": 2, "m": ["x"]}
    assert state_of(client, thread_id)[0] == state


def test_a_chat_that_carries_a_state_is_checked_against_the_version_it_was_based_on(client):
    thread_id = new_thread(client)
    url = f"/rest/threads/{thread_id}/chat"
    body = client.post(url, json={"message": "mine", "state": {"form": {"name": "Ada"}}, "state_version": 0}).json()
    assert body["state"] == {"form": {"name": "Ada"}}
    state, version, _ = state_of(client, thread_id)
    assert state == {"form": {"name": "Ada"}} and version == 1
    turns = client.get(f"/rest/threads/{thread_id}").json()["message_count"]
    check_error(client.post(url, json={"message": "stale", "state": {"form": {}}, "state_version": 0}), 409,
                "state_conflict", "version 0")
    check_error(client.post(url, data={"message": "a form post is JSON only"}, files={}), 415, "unsupported_media_type")
    assert client.get(f"/rest/threads/{thread_id}").json()["message_count"] == turns  # nothing ran
    assert state_of(client, thread_id)[:2] == ({"form": {"name": "Ada"}}, 1)
    for bad, words in (({"state": []}, "state"), ({"state": {}, "state_version": -1}, "state_version")):
        check_error(client.post(url, json={"message": "x", **bad}), 422, "invalid_request", words)


def test_a_stateless_chat_answers_the_state_it_was_sent_as_changed(client):
    body = client.post("/rest/chat", json={"message": '/state [{"op": "add", "path": "/b", "value": 2}] go',
                                           "state": {"a": 1}}).json()
    assert body["state"] == {"a": 1, "b": 2} and [e["type"] for e in body["state_events"]] == ["state_snapshot",
                                                                                               "state_delta"]
    plain = client.post("/rest/chat", json={"message": "no state"}).json()
    assert "state" not in plain and "state_events" not in plain


def test_the_openapi_document_describes_the_state_calls(client):
    spec = client.get("/rest/openapi.json").json()
    state = spec["paths"]["/threads/{thread_id}/state"]
    assert set(state) == {"get", "patch", "put"}
    assert state["patch"]["requestBody"]["content"] == {
        "application/json-patch+json": {"schema": {"$ref": "#/components/schemas/JsonPatch"}}}
    assert {"404", "409", "412", "415", "422"} <= set(state["patch"]["responses"])
    assert {"JsonPatch", "StateOut", "StateReplace", "UsageOut", "PartOut"} <= set(spec["components"]["schemas"])
    events = spec["paths"]["/chat/stream"]["post"]["responses"]["200"]["content"]["text/event-stream"]["schema"]
    assert {"state_snapshot", "state_delta", "reply_part"} <= set(events["properties"]["event"]["enum"])
    fields = events["properties"]["data"]["contentSchema"]["properties"]
    assert fields["usage"]["items"]["properties"]["input_tokens"]["type"] == "integer"
