"""The AG-UI door on two real `onedoor serve` processes sharing one SQLite file (shared
journals): a client that reattaches through the server that is not running its run gets,
event for event and id for id, what the server running it sends; the same refusals too."""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from pathlib import Path
from typing import Any, Iterator

import httpx
import onedoor_test_support as support
import pytest
from agui_helpers import JS, node_or_skip
from onedoor_transport_http.testing import start_server

pytestmark = pytest.mark.timeout(240)
ALICE = "alice-token-0123456789abcdef"
BOB = "bob-token-0123456789abcdefgh"
ASK = '/ask deploy {"env": "prod"}'


@pytest.fixture(scope="module")
def pair(tmp_path_factory) -> Iterator[tuple[Any, Any]]:
    """Servers A and B on one threads file with shared journals."""
    folder = tmp_path_factory.mktemp("agui-servers")
    tokens = folder / "tokens"
    tokens.write_text(f"alice {ALICE}\nbob {BOB}\n")
    args = [
        "--door", "agui", "-b", "scripted", "-o", f"tokens_file={tokens}",
        "-o", f"sqlite.path={folder / 'threads.sqlite3'}", "-o", "sqlite.shared_journal=true", "-o", "agui.keepalive=0",
    ]  # fmt: skip
    with start_server(args, env={"ONEDOOR_DATA_DIR": str(folder / "a")}) as a, \
            start_server(args, env={"ONEDOOR_DATA_DIR": str(folder / "b")}) as b:
        yield a, b
        assert a.proc.poll() is None and b.proc.poll() is None, "a server died during the tests"


def url(server: Any, path: str = "") -> str:
    return f"{server.base_url}/agui/{path}"


def auth(token: str = ALICE, **headers: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}", **headers}


def user(text: str) -> dict[str, Any]:
    return {"id": uuid.uuid4().hex, "role": "user", "content": text}


def frames_of(response: httpx.Response) -> list[tuple[str | None, dict[str, Any]]]:
    """(id, event) of every frame: ids and events both must match."""
    assert response.status_code == 200, response.text
    return [(f.id, f.data) for f in support.parse_sse(response.text)]


def events(server: Any, run_id: str, cursor: str | None = None, token: str = ALICE, *, query: bool = False) -> httpx.Response:
    """A reattach with ``cursor`` as Last-Event-ID (``query``: as ``?after=``)."""
    headers = auth(token) if cursor is None or query else auth(token, **{"Last-Event-ID": cursor})
    params = {"after": cursor} if query and cursor is not None else None
    return httpx.get(url(server, f"runs/{run_id}/events"), headers=headers, params=params, timeout=60)


def read_and_leave(response: Any) -> tuple[list[str], str]:
    """Read an SSE response until three text deltas came, and go away: (its lines, the last id seen)."""
    lines, cursor, deltas = [], "", 0
    assert response.status_code == 200
    for line in response.iter_lines():
        lines.append(line)
        cursor = line[4:] if line.startswith("id: ") else cursor
        deltas += line.startswith("data: ") and '"TEXT_MESSAGE_CONTENT"' in line
        if deltas >= 3:
            break
    return lines, cursor


def start_and_leave(server: Any, tid: str, text: str) -> str:
    """Start a run that goes on without its client, read a few frames, leave; its runId."""
    run_id = uuid.uuid4().hex
    body = {"threadId": tid, "runId": run_id, "messages": [user(text)], "forwardedProps": {"onDisconnect": "finish"}}
    with httpx.stream("POST", url(server), json=body, headers=auth(), timeout=60) as response:
        read_and_leave(response)
    return run_id


def follow_and_leave(server: Any, run_id: str) -> str:
    """Reattach to a run, read a few frames, leave: the cursor to come back with."""
    with httpx.stream("GET", url(server, f"runs/{run_id}/events"), headers=auth(), timeout=60) as response:
        _, cursor = read_and_leave(response)
    assert cursor.startswith(run_id + ":")
    return cursor


def test_a_run_is_followed_again_through_the_other_server_as_through_its_own(pair):
    a, b = pair
    tid = f"servers-{uuid.uuid4().hex[:8]}"
    run_id = start_and_leave(a, tid, "/slow /long 60 once upon a time")
    cursor = follow_and_leave(b, run_id)
    # while it runs: B and A give the same frames after the cursor (both to the run's end)
    assert httpx.get(url(a, f"threads/{tid}"), headers=auth(), timeout=30).json()["running"] == {"runId": run_id}
    on_b, on_a = events(b, run_id, cursor), events(a, run_id, cursor)
    assert frames_of(on_b) == frames_of(on_a)
    assert frames_of(on_b)[-1][1]["type"] == "RUN_FINISHED" and frames_of(on_b)[-1][1]["outcome"] == {"type": "success"}
    assert 30 < sum(e["type"] == "TEXT_MESSAGE_CONTENT" for _, e in frames_of(on_b)) < 60
    # after the end: the whole run, and from every cursor, the same on both
    whole = frames_of(events(a, run_id))
    assert frames_of(events(b, run_id)) == whole and whole[-2][1]["type"] == "MESSAGES_SNAPSHOT"
    ids = [i for i, _ in whole if i]
    for seen in (ids[0], ids[len(ids) // 2], ids[-2]):
        assert frames_of(events(b, run_id, seen)) == frames_of(events(a, run_id, seen)), seen
    last = events(b, run_id, ids[-1])
    assert (last.status_code, last.text) == (events(a, run_id, ids[-1]).status_code, events(a, run_id, ids[-1]).text)


def test_hostile_cursors_get_the_same_answers_on_both_servers(pair):
    a, b = pair
    tid = f"hostile-{uuid.uuid4().hex[:8]}"
    run_id = start_and_leave(a, tid, "/long 5 short")
    assert frames_of(events(a, run_id))[-1][1]["type"] == "RUN_FINISHED"  # (it follows the run to its end)
    for bad in ("garbage", "other-run:0:3", "٣:0:1", f"{run_id}:0:999999", f"{run_id}:99:1", f"{run_id}:0:-1",
                f"{run_id}:0:" + "9" * 40, "x" * 180):
        for query in (True, False) if bad.isascii() else (True,):
            on_a, on_b = events(a, run_id, bad, query=query), events(b, run_id, bad, query=query)
            assert on_a.status_code in (409, 422), (bad, on_a.text)
            assert (on_b.status_code, on_b.json()) == (on_a.status_code, on_a.json()), bad
    # another principal, an unknown run: 404 on both
    for token, rid in ((BOB, run_id), (ALICE, "no-such-run")):
        on_a, on_b = events(a, rid, token=token), events(b, rid, token=token)
        assert on_a.status_code == 404 and (on_b.status_code, on_b.json()) == (404, on_a.json())


@pytest.mark.parametrize("resume_on", ["a", "b"])
def test_a_resumed_run_is_followed_through_the_other_server(pair, resume_on):
    """A resumed AG-UI run is another name of the kernel run: B finds it by that name; a
    resume sent to B (the run parked on A) streams what a reader then gets on either."""
    a, b = pair
    tid = f"resumed-{uuid.uuid4().hex[:8]}"
    first = {"threadId": tid, "runId": uuid.uuid4().hex, "messages": [user(ASK)]}
    asked = frames_of(httpx.post(url(a), json=first, headers=auth(), timeout=60))
    interrupt = asked[-1][1]["outcome"]["interrupts"][0]
    assert frames_of(events(b, first["runId"])) == frames_of(events(a, first["runId"]))
    second = {"threadId": tid, "runId": uuid.uuid4().hex, "messages": [],
              "resume": [{"interruptId": interrupt["id"], "status": "resolved", "payload": {"approved": True}}]}
    resumed = frames_of(httpx.post(url(a if resume_on == "a" else b), json=second, headers=auth(), timeout=60))
    assert resumed[0][1]["parentRunId"] == first["runId"] and resumed[-1][1]["outcome"] == {"type": "success"}
    again = frames_of(events(b, second["runId"]))
    assert again == frames_of(events(a, second["runId"]))
    # the same AG-UI events as the resume's own stream (a reader also gets the snapshot; the
    # state version on RUN_FINISHED is the live stream's only, on either server)
    live = [e for _, e in resumed]
    live[-1].get("metadata", {}).get("onedoor", {}).pop("stateVersion", None)
    live[-1] = {k: v for k, v in live[-1].items() if v != {"onedoor": {}}}
    assert [e for _, e in again if e["type"] != "MESSAGES_SNAPSHOT"] == live
    tool = next(e for _, e in again if e["type"] == "TOOL_CALL_START")
    assert tool["toolCallId"] == interrupt["toolCallId"]
    assert json.loads(next(e for _, e in again if e["type"] == "TOOL_CALL_RESULT")["content"]) == {"ran": "deploy"}


def test_the_thread_shows_its_run_going_on_through_either_server(pair):
    """The page reattaches to the run its thread says is going on: B says so of A's run."""
    a, b = pair
    tid = f"thread-{uuid.uuid4().hex[:8]}"

    def running(server: Any) -> Any:
        return httpx.get(url(server, f"threads/{tid}"), headers=auth(), timeout=30).json()["running"]

    run_id = start_and_leave(a, tid, "/slow /long 60 a story")
    assert running(b) == running(a) == {"runId": run_id}
    assert frames_of(events(b, run_id))[-1][1]["outcome"] == {"type": "success"}
    assert running(b) is None and running(a) is None
    # a run waiting for answers is not going on (the page shows its interrupt instead)
    asked = frames_of(httpx.post(url(a), json={"threadId": tid, "runId": uuid.uuid4().hex, "messages": [user(ASK)]},
                                 headers=auth(), timeout=60))
    assert asked[-1][1]["outcome"]["type"] == "interrupt"
    assert running(b) is None and running(a) is None
    assert httpx.get(url(b, f"threads/{tid}"), headers=auth(BOB), timeout=30).status_code == 404


def test_the_chat_page_reloaded_onto_the_other_server_shows_the_whole_reply(pair):
    a, b = pair
    node = node_or_skip()
    chromium = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
    if not Path(chromium).exists() or not (JS / "node_modules" / "playwright-core").is_dir():
        pytest.skip("chromium or tests/door_agui/js/node_modules (npm ci) missing")
    proc = subprocess.run([node, "browser_servers.mjs", url(a, f"?token={ALICE}"), url(b, f"?token={ALICE}")],
                          cwd=JS, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr[-3000:]
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    assert seen["beforeReload"] and seen["reattachedWhileRunning"] is True
    assert any(u.startswith(b.base_url + "/agui/runs/") for u in seen["followed"])  # B followed A's run
    tid = seen["hash"].removeprefix("#thread=")
    stored = httpx.get(url(a, f"threads/{tid}"), headers=auth(), timeout=30).json()["messages"]
    whole = stored[-1]["content"]
    assert stored[-1]["role"] == "assistant" and "[reply" not in whole and whole.startswith("You said: a long story")
    assert seen["midReply"]["messages"][-2:] == [["user", "/slow /long 100 a long story"], ["assistant", whole]]
    assert seen["afterRun"]["messages"] == seen["midReply"]["messages"] and seen["consoleErrors"] == []


def test_a_resume_landing_on_the_other_server_goes_on_as_on_its_own(pair):
    """The official client: a run parked on A, its resume sent to B (``kernel.answer``); B
    streams the continuation as A would, and a reader finds the resumed run on either."""
    a, b = pair
    node = node_or_skip()
    proc = subprocess.run([node, "servers_resume.mjs", a.base_url, b.base_url, ALICE], cwd=JS, capture_output=True,
                          text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    here, there = out["here"], out["elsewhere"]
    assert there["first"]["outcome"] == "interrupt" and there["second"]["error"] is None
    for key in ("outcome", "events", "pendingInterrupts"):
        assert there["second"][key] == here["second"][key], key
    assert there["second"]["started"] == {"runId": there["second"]["runId"], "parentRunId": there["first"]["runId"]}
    assert there["second"]["custom"] == [{"name": "onedoor.question_answered",
                                          "value": {"interruptId": there["interrupt"]["id"], "outcome": "allow_once", "how": "person"}}]
    assert there["reply"] == here["reply"] == "Approved (allow_once): ran deploy"
    assert there["tool"] == {"toolCallId": there["interrupt"]["toolCallId"], "content": '{"ran":"deploy"}'}
    assert there["roles"] == here["roles"] == ["user", "assistant", "tool", "assistant"]
    assert out["rejected"]["reply"] == "Not approved (reject_once): did not run deploy"
    assert out["question"]["reply"] == 'You answered {"answer": "blue"}'
    invalid = out["invalid"]
    assert "422" in invalid["refused"]["error"] and invalid["refused"]["events"] == []
    assert invalid["fixed"] == "success" and invalid["reply"] == 'You answered {"answer": "red"}'
    assert "409" in invalid["again"]["error"]  # answered through B: A says so too
    # the resumed AG-UI run, read again through either server: the same frames, the same ids
    resumed = there["second"]["runId"]
    on_a, on_b = frames_of(events(a, resumed)), frames_of(events(b, resumed))
    assert on_a == on_b and on_a[0][1]["parentRunId"] == there["first"]["runId"]
    assert [e["type"] for _, e in on_a if e["type"] != "MESSAGES_SNAPSHOT"] == here["second"]["events"]
    stored = httpx.get(url(a, f"threads/{there['threadId']}"), headers=auth(), timeout=30).json()
    assert stored["messages"][-1]["content"] == there["reply"] and stored["running"] is None


def test_resumes_that_cannot_be_taken_get_the_same_refusals_on_both_servers(pair):
    a, b = pair
    tid = f"refused-{uuid.uuid4().hex[:8]}"
    asked = frames_of(httpx.post(url(a), json={"threadId": tid, "runId": uuid.uuid4().hex, "messages": [user(ASK)]},
                                 headers=auth(), timeout=60))
    interrupt = asked[-1][1]["outcome"]["interrupts"][0]["id"]

    def resume(server: Any, interrupt_id: str, thread: str = tid, token: str = ALICE, payload: Any = None) -> httpx.Response:
        entry = {"interruptId": interrupt_id, "status": "resolved", "payload": payload or {"approved": True}}
        body = {"threadId": thread, "runId": uuid.uuid4().hex, "messages": [], "resume": [entry]}
        return httpx.post(url(server), json=body, headers=auth(token), timeout=60)

    for args in (("q-" + "0" * 24,), (interrupt, "another-thread"), (interrupt, tid, BOB)):
        on_a, on_b = resume(a, *args), resume(b, *args)
        assert on_a.status_code == 404 and (on_b.status_code, on_b.json()) == (on_a.status_code, on_a.json()), args
    bad_a, bad_b = resume(a, interrupt, payload={"outcome": "nope"}), resume(b, interrupt, payload={"outcome": "nope"})
    assert bad_a.status_code == 422 and bad_b.status_code == 422, (bad_a.text, bad_b.text)
    assert frames_of(resume(b, interrupt))[-1][1]["outcome"] == {"type": "success"}
    again_a, again_b = resume(a, interrupt), resume(b, interrupt)
    assert again_a.status_code == 409 and again_a.json()["error"] == "already_answered"
    assert (again_b.status_code, again_b.json()["error"]) == (409, "already_answered"), again_b.text


def test_expired_interrupts_are_refused_or_abandoned_on_either_server(tmp_path):
    """Questions that live a second: an answer after that is 410 on both servers; abandoning
    them (status cancelled) gets the short cancelled run on both."""
    (tmp_path / "tokens").write_text(f"alice {ALICE}\n")
    args = ["--door", "agui", "-b", "scripted", "-o", f"tokens_file={tmp_path / 'tokens'}", "-o", "limits.question_ttl=1",
            "-o", f"sqlite.path={tmp_path / 'threads.sqlite3'}", "-o", "sqlite.shared_journal=true", "-o", "agui.keepalive=0"]
    with start_server(args, env={"ONEDOOR_DATA_DIR": str(tmp_path / "a")}) as a, \
            start_server(args, env={"ONEDOOR_DATA_DIR": str(tmp_path / "b")}) as b:
        tid, run_id = f"expiry-{uuid.uuid4().hex[:8]}", uuid.uuid4().hex
        asked = frames_of(httpx.post(url(a), json={"threadId": tid, "runId": run_id, "messages": [user(ASK)]},
                                     headers=auth(), timeout=60))
        interrupt = asked[-1][1]["outcome"]["interrupts"][0]["id"]

        def resume(server: Any, status: str, payload: Any = None) -> httpx.Response:
            body = {"threadId": tid, "runId": uuid.uuid4().hex, "messages": [],
                    "resume": [{"interruptId": interrupt, "status": status, "payload": payload or {"approved": True}}]}
            return httpx.post(url(server), json=body, headers=auth(), timeout=60)

        # an answer the door cannot read is refused (422) while the question is open, 410 after
        support.wait_for(lambda: resume(a, "resolved", {"outcome": "nope"}).status_code == 410, "the question to expire",
                         timeout=30)
        late_a, late_b = resume(a, "resolved"), resume(b, "resolved")
        assert late_a.json()["error"] == "question_expired"  # (the details say why in each server's words)
        assert (late_b.status_code, late_b.json()["error"]) == (410, "question_expired"), late_b.text
        gave_up = [[e for _, e in frames_of(resume(server, "cancelled"))] for server in (a, b)]
        for seen in gave_up:
            assert [e["type"] for e in seen] == ["RUN_STARTED", "RUN_FINISHED"] and seen[0]["parentRunId"] == run_id
            assert seen[-1]["outcome"] == {"type": "cancelled"}


def test_a_run_is_cancelled_through_the_other_server(pair):
    a, b = pair
    tid = f"cancel-{uuid.uuid4().hex[:8]}"
    run_id = start_and_leave(a, tid, "/slow /long 400 a very long story")
    refused = httpx.post(url(b, "cancel"), json={"runId": run_id}, headers=auth(BOB), timeout=30)
    assert refused.status_code == 404  # another principal's run is unknown there too
    stopped = httpx.post(url(b, "cancel"), json={"runId": run_id, "threadId": tid}, headers=auth(), timeout=30)
    assert stopped.status_code == 200 and stopped.json() == {"cancelled": True, "runId": run_id}
    ended = frames_of(events(a, run_id))[-1][1]
    assert ended == {"type": "RUN_FINISHED", "threadId": tid, "runId": run_id, "outcome": {"type": "cancelled"}}
    assert frames_of(events(b, run_id))[-1][1] == ended
    again = httpx.post(url(b, "cancel"), json={"runId": run_id}, headers=auth(), timeout=30)
    assert again.status_code == 404  # an ended run: nothing to stop, as on its own server
