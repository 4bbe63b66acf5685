"""Shared state through the AG-UI door on `onedoor serve` (real uvicorn, SQLite, two principals):
the input's state against the thread's (stale versions refused, an official client's empty
state meaning "the thread's"), STATE_SNAPSHOT first for a client without it and never echoed
back, bad changes failing clearly with the stored state unchanged, limits, owners, a
reader coming back after a cursor; and, in-process, a final snapshot when another door changed
the state during the run."""

from __future__ import annotations

import asyncio
import json
import threading
import uuid
from typing import Any, Iterator

import httpx
import onedoor_test_support as support
import pytest
from agui_helpers import agui_server, parse_sse
from onedoor.testing.hostile import traceback_in
from onedoor.threads.sqlite import SQLiteThreadStore
from onedoor_test_support import wait_for
from onedoor_transport_http.testing import start_server

pytestmark = pytest.mark.timeout(240)
ALICE = "alice-token-0123456789abcdef"
BOB = "bob-token-0123456789abcdefgh"
STATE_LIMIT = 2000


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[Any]:
    folder = tmp_path_factory.mktemp("agui-state")
    tokens = folder / "tokens"
    tokens.write_text(f"alice {ALICE}\nbob {BOB}\n")
    args = [
        "--door", "agui", "-b", "scripted", "-o", f"tokens_file={tokens}", "-o", f"sqlite.path={folder / 'db.sqlite3'}",
        "-o", "agui.keepalive=0", "-o", f"limits.max_state_chars={STATE_LIMIT}", "-o", "scripted.reasoning=false",
    ]  # fmt: skip
    with start_server(args) as srv:
        yield srv
        assert srv.proc.poll() is None, "the server died during the tests"
    stderr = srv.proc.stderr.read() if srv.proc.stderr else ""
    assert traceback_in(stderr) is None, stderr[-3000:]  # refusals and failed runs are expected: no tracebacks


def post(server: Any, tid: str, text: str, token: str = ALICE, **extra: Any) -> httpx.Response:
    """One run sending only its new message, as a client that holds the thread (no MESSAGES_SNAPSHOT)."""
    props = {"messagesSnapshot": False, **extra.pop("forwardedProps", {})}
    body = {"threadId": tid, "runId": uuid.uuid4().hex,
            "messages": [{"id": uuid.uuid4().hex, "role": "user", "content": text}], "forwardedProps": props, **extra}
    return httpx.post(f"{server.base_url}/agui/", json=body, headers=auth(token), timeout=60)


def events(response: httpx.Response) -> list[dict[str, Any]]:
    assert response.status_code == 200, response.text
    return parse_sse(response.text)


def reply(evs: list[dict[str, Any]]) -> str:
    return "".join(e["delta"] for e in evs if e["type"] == "TEXT_MESSAGE_CONTENT")


def stored(server: Any, tid: str, token: str = ALICE) -> dict[str, Any]:
    response = httpx.get(f"{server.base_url}/agui/threads/{tid}", headers=auth(token), timeout=30)
    assert response.status_code == 200, response.text
    return response.json()


def new_thread(server: Any, state: dict[str, Any]) -> str:
    """A thread of Alice's whose state is ``state`` (version 1)."""
    tid = "state-" + uuid.uuid4().hex[:8]
    evs = events(post(server, tid, f"/state {json.dumps(state)} set it"))
    assert evs[-1]["type"] == "RUN_FINISHED" and evs[-1]["metadata"] == {"onedoor": {"stateVersion": 1}}
    assert stored(server, tid)["state"] == state and stored(server, tid)["stateVersion"] == 1
    return tid


def test_a_client_without_the_state_gets_a_snapshot_first(server):
    tid = new_thread(server, {"todo": ["milk"]})
    evs = events(post(server, tid, "what is on my list?", state={}))  # what a fresh official client sends
    assert [e["type"] for e in evs[:2]] == ["RUN_STARTED", "STATE_SNAPSHOT"] and evs[1]["snapshot"] == {"todo": ["milk"]}
    assert reply(evs).endswith('State: {"todo":["milk"]}')  # the backend saw the stored state
    assert stored(server, tid)["stateVersion"] == 1  # nothing changed it


def test_the_state_the_client_holds_is_not_echoed(server):
    tid = new_thread(server, {"n": 1})
    evs = events(post(server, tid, "again", state={"n": 1}, forwardedProps={"onedoor": {"stateVersion": 1}}))
    assert "STATE_SNAPSHOT" not in [e["type"] for e in evs]
    assert reply(evs).endswith('State: {"n":1}')


def test_an_edit_based_on_the_current_version_is_kept(server):
    tid = new_thread(server, {"n": 1})
    evs = events(post(server, tid, "edited", state={"n": 2}, forwardedProps={"onedoor": {"stateVersion": 1}}))
    assert "STATE_SNAPSHOT" not in [e["type"] for e in evs]  # the kernel's first snapshot is the client's own
    assert reply(evs).endswith('State: {"n":2}') and evs[-1]["metadata"]["onedoor"]["stateVersion"] == 2
    assert stored(server, tid)["state"] == {"n": 2}


def test_a_stale_state_is_refused_and_nothing_changes(server):
    tid = new_thread(server, {"n": 1})
    before = stored(server, tid)
    response = post(server, tid, "my old edit", state={"n": 0, "old": True}, forwardedProps={"onedoor": {"stateVersion": 0}})
    assert response.status_code == 409 and response.json()["error"] == "state_conflict", response.text
    assert "version 0" in response.json()["detail"] and "now at version 1" in response.json()["detail"]
    after = stored(server, tid)
    assert after["state"] == {"n": 1} and after["stateVersion"] == 1 and after["messages"] == before["messages"]


def test_without_a_version_the_clients_state_is_taken(server):
    """An official client knows no versions: the state it sends is its edit (last writer wins)."""
    tid = new_thread(server, {"n": 1})
    events(post(server, tid, "mine", state={"n": 7}))
    assert stored(server, tid)["state"] == {"n": 7}


@pytest.mark.parametrize(
    "directive, why",
    [
        ('/state [{"op": "replace", "path": "/missing", "value": 1}]', "a state change was refused"),
        ('/state [{"op": "add", "path": "/extra", "value": 1}, {"op": "test", "path": "/n", "value": 99}]', "a state change was refused"),
        ('/state [{"op": "remove", "path": ""}]', "may not remove the whole state"),
        ('/state {"big": "' + "x" * (STATE_LIMIT + 10) + '"}', "limit"),
    ],
)
def test_a_change_that_does_not_apply_fails_the_run_and_keeps_the_state(server, directive, why):
    tid = new_thread(server, {"n": 1})
    evs = events(post(server, tid, f"{directive} try", state={"n": 1}))
    assert evs[-1]["type"] == "RUN_ERROR" and why in evs[-1]["message"], evs[-1]
    assert not any(e["type"] == "STATE_DELTA" for e in evs)
    after = stored(server, tid)
    assert after["state"] == {"n": 1} and after["stateVersion"] == 1


def test_bad_client_states_are_refused_before_any_run(server):
    tid = new_thread(server, {"n": 1})
    big = post(server, tid, "too big", state={"big": "x" * STATE_LIMIT})
    assert big.status_code == 413 and big.json()["error"] == "too_large", big.text
    not_object = post(server, tid, "a list", state=[1, 2])
    assert not_object.status_code == 422 and "state" in not_object.json()["detail"], not_object.text
    bad_version = post(server, tid, "v", state={"n": 3}, forwardedProps={"onedoor": {"stateVersion": "1"}})
    assert bad_version.status_code == 422 and "stateVersion" in bad_version.json()["detail"]
    after = stored(server, tid)
    assert after["state"] == {"n": 1} and after["stateVersion"] == 1
    assert [m["content"] for m in after["messages"] if m["role"] == "user"] == ['/state {"n": 1} set it']


def test_another_principal_cannot_read_or_change_the_state(server):
    tid = new_thread(server, {"secret": "alice's"})
    taken = post(server, tid, "/state {\"secret\": \"bob's\"} mine now", token=BOB, state={"secret": "bob's"})
    assert taken.status_code == 409 and taken.json()["error"] == "thread_taken"
    assert httpx.get(f"{server.base_url}/agui/threads/{tid}", headers=auth(BOB), timeout=30).status_code == 404
    listed = httpx.get(f"{server.base_url}/agui/threads", headers=auth(BOB), timeout=30).json()["threads"]
    assert tid not in [t["threadId"] for t in listed]
    assert "alice" not in taken.text
    assert stored(server, tid)["state"] == {"secret": "alice's"} and stored(server, tid)["stateVersion"] == 1


def test_a_reader_coming_back_after_a_cursor_gets_the_state_first(server):
    tid = "back-" + uuid.uuid4().hex[:8]
    run_id = uuid.uuid4().hex
    body = {"threadId": tid, "runId": run_id, "messages": [{"id": "u1", "role": "user", "content":
            '/state {"a": 1} /state [{"op": "add", "path": "/b", "value": 2}] /long 20 a story'}]}
    events(httpx.post(f"{server.base_url}/agui/", json=body, headers=auth(ALICE), timeout=60))
    again = httpx.get(f"{server.base_url}/agui/runs/{run_id}/events", headers=auth(ALICE), timeout=30)
    frames = support.parse_sse(again.text)
    kinds = [f.data["type"] for f in frames]
    assert kinds.index("STATE_SNAPSHOT") < kinds.index("STATE_DELTA")  # from its start: as it happened
    cursor = next(f.id for f in frames if f.id and f.data["type"] == "TEXT_MESSAGE_CONTENT")
    later = httpx.get(f"{server.base_url}/agui/runs/{run_id}/events", params={"after": cursor}, headers=auth(ALICE), timeout=30)
    first = support.parse_sse(later.text)[0].data
    assert first == {"type": "STATE_SNAPSHOT", "snapshot": {"a": 1, "b": 2}}


# -- in-process: another door changes the state while the run goes on ----------------------
def test_a_final_snapshot_when_the_stored_state_is_not_what_the_stream_made(tmp_path):
    with agui_server(store=SQLiteThreadStore(tmp_path / "db.sqlite3"), delay=0.02, reasoning=False) as (srv, kernel, _):
        tid = "final-" + uuid.uuid4().hex[:6]
        first = {"threadId": tid, "runId": uuid.uuid4().hex, "state": {"n": 0},
                 "messages": [{"id": "u0", "role": "user", "content": "start"}]}
        events(httpx.post(f"{srv.base_url}/agui/", json=first, timeout=30))
        text = '/state [{"op": "add", "path": "/x", "value": 1}] /long 30 slow story'
        body = {"threadId": tid, "runId": uuid.uuid4().hex, "messages": [{"id": "u1", "role": "user", "content": text}],
                "state": {"n": 0}, "forwardedProps": {"messagesSnapshot": False}}
        seen: list[dict[str, Any]] = []
        delta = threading.Event()

        def read() -> None:
            with httpx.stream("POST", f"{srv.base_url}/agui/", json=body, timeout=60) as response:
                buffer = ""
                for chunk in response.iter_text():
                    buffer += chunk
                    while "\n\n" in buffer:
                        frame, buffer = buffer.split("\n\n", 1)
                        if frame.startswith("data: "):
                            seen.append(json.loads(frame[6:]))
                            if seen[-1]["type"] == "STATE_DELTA":
                                delta.set()

        reader = threading.Thread(target=read)
        reader.start()
        assert delta.wait(30), seen
        # another door (the kernel's thread desk, as REST's PATCH uses it) changes the state meanwhile
        patch = kernel.threads.patch_state("local", tid, [{"op": "add", "path": "/y", "value": 2}])
        asyncio.run_coroutine_threadsafe(patch, srv.loop).result(timeout=30)
        reader.join(60)
        wait_for(lambda: seen and seen[-1]["type"] == "RUN_FINISHED", "the run to end")
        kinds = [e["type"] for e in seen]
        final = seen[kinds.index("STATE_DELTA") + 1:]
        snapshots = [e for e in final if e["type"] == "STATE_SNAPSHOT"]
        assert snapshots == [{"type": "STATE_SNAPSHOT", "snapshot": {"n": 0, "x": 1, "y": 2}}], kinds
        assert kinds[-2:] == ["STATE_SNAPSHOT", "RUN_FINISHED"]
        thread = asyncio.run_coroutine_threadsafe(kernel.threads.get("local", tid), srv.loop).result(timeout=30)
        assert thread.state == {"n": 0, "x": 1, "y": 2} and seen[-1]["metadata"]["onedoor"]["stateVersion"] == thread.state_version


def test_no_final_snapshot_when_nothing_else_changed_it(tmp_path):
    with agui_server(store=SQLiteThreadStore(tmp_path / "db.sqlite3"), reasoning=False) as (srv, _, _):
        body = {"threadId": "plain", "runId": uuid.uuid4().hex, "state": {"n": 0},
                "messages": [{"id": "u1", "role": "user", "content": '/state [{"op": "add", "path": "/x", "value": 1}] hi'}]}
        evs = events(httpx.post(f"{srv.base_url}/agui/", json=body, timeout=30))
        assert [e["type"] for e in evs if e["type"].startswith("STATE")] == ["STATE_DELTA"]


def test_a_run_resumed_after_a_question_keeps_its_state_changes(server):
    tid = new_thread(server, {"n": 1})
    asked = events(post(server, tid, '/state [{"op": "replace", "path": "/n", "value": 2}] /ask deploy {"env": "prod"}',
                        state={"n": 1}))
    finished = asked[-1]
    assert finished["outcome"]["type"] == "interrupt" and "metadata" not in finished  # parked: nothing kept yet
    assert stored(server, tid)["state"] == {"n": 1}
    interrupt = finished["outcome"]["interrupts"][0]
    resume = {"threadId": tid, "runId": uuid.uuid4().hex, "messages": [],
              "resume": [{"interruptId": interrupt["id"], "status": "resolved", "payload": {"approved": True}}]}
    rest = events(httpx.post(f"{server.base_url}/agui/", json=resume, headers=auth(ALICE), timeout=60))
    assert rest[-1]["type"] == "RUN_FINISHED" and rest[-1]["metadata"] == {"onedoor": {"stateVersion": 2}}
    assert stored(server, tid)["state"] == {"n": 2} and stored(server, tid)["stateVersion"] == 2
