"""Stored threads through the AG-UI door, on `onedoor serve` (real uvicorn, SQLite on disk,
two principals from a tokens file): threadId names a thread, the thread endpoints, owners,
bad inputs, reattaching to a run after its client went away, and the official client."""

from __future__ import annotations

import json
import subprocess
import uuid
from typing import Any, Iterator

import httpx
import onedoor_test_support as support
import pytest
from agui_helpers import JS, node_or_skip, parse_sse
from onedoor_test_support import wait_for
from onedoor_transport_http.testing import start_server

pytestmark = pytest.mark.timeout(240)
ALICE = "alice-token-0123456789abcdef"
BOB = "bob-token-0123456789abcdefgh"
THREAD_LIMIT = 50_000  # sqlite.max_thread_chars of the server under test


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[Any]:
    folder = tmp_path_factory.mktemp("agui-threads")
    tokens = folder / "tokens"
    tokens.write_text(f"# principal token\nalice {ALICE}\nbob {BOB}\n")
    args = [
        "--door", "agui", "-b", "scripted",
        "-o", f"tokens_file={tokens}",
        "-o", f"sqlite.path={folder / 'threads.sqlite3'}",
        "-o", f"sqlite.max_thread_chars={THREAD_LIMIT}",
        "-o", "agui.keepalive=0",
    ]  # fmt: skip
    with start_server(args) as srv:
        yield srv
        assert srv.proc.poll() is None, "the server died during the tests"


def url(server: Any, path: str = "") -> str:
    return f"{server.base_url}/agui/{path}"


def user(text: str) -> dict[str, Any]:
    return {"id": uuid.uuid4().hex, "role": "user", "content": text}


def run(server: Any, thread_id: str, messages: list[dict[str, Any]], token: str = ALICE, **extra: Any) -> httpx.Response:
    body = {"threadId": thread_id, "runId": uuid.uuid4().hex, "messages": messages, **extra}
    return httpx.post(url(server), json=body, headers=auth(token), timeout=60)


def events_of(response: httpx.Response) -> list[dict[str, Any]]:
    assert response.status_code == 200, response.text
    return parse_sse(response.text)


def reply_of(events: list[dict[str, Any]]) -> str:
    """The text of the run's last assistant message."""
    last = [e["messageId"] for e in events if e["type"] == "TEXT_MESSAGE_START"][-1]
    return "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT" and e["messageId"] == last)


def thread(server: Any, thread_id: str, token: str = ALICE) -> httpx.Response:
    return httpx.get(url(server, f"threads/{thread_id}"), headers=auth(token), timeout=30)


def new_id(name: str) -> str:
    return f"{name}-{uuid.uuid4().hex[:8]}"


# -- threadId names a stored thread ----------------------------------------------------------
def test_second_turn_sends_only_its_new_message(server):
    tid = new_id("two-turns")
    first = events_of(run(server, tid, [user("hello there")]))
    assert reply_of(first) == "You said: hello there (2 words, turn 1)"
    second = events_of(run(server, tid, [user("and again")]))
    assert reply_of(second) == "You said: and again (2 words, turn 2)"  # the server had turn 1
    stored = thread(server, tid).json()
    assert stored["threadId"] == tid and stored["title"] == "hello there" and stored["running"] is None
    roles = [m["role"] for m in stored["messages"]]
    assert roles == ["user", "assistant", "tool", "assistant"] * 2
    texts = [m["content"] for m in stored["messages"] if m["role"] == "user"]
    assert texts == ["hello there", "and again"]
    call = stored["messages"][1]["toolCalls"][0]
    assert call["function"]["name"] == "word_count" and stored["messages"][2]["toolCallId"] == call["id"]
    assert len({m["id"] for m in stored["messages"]}) == len(stored["messages"])


def test_a_client_sending_the_whole_history_adds_only_the_new_message(server):
    tid = new_id("full-history")
    history = [user("one")]
    first = events_of(run(server, tid, history, forwardedProps={"messagesSnapshot": True}))
    snapshot = next(e for e in first if e["type"] == "MESSAGES_SNAPSHOT")["messages"]
    assert [m["role"] for m in snapshot] == ["user", "reasoning", "assistant", "tool", "assistant"]
    second = events_of(run(server, tid, [*snapshot, user("two")], forwardedProps={"messagesSnapshot": True}))
    assert reply_of(second) == "You said: two (1 word, turn 2)"
    stored = thread(server, tid).json()["messages"]
    assert [m["content"] for m in stored if m["role"] == "user"] == ["one", "two"]
    # the snapshot of a threaded run is the whole thread plus this run
    snapshot2 = next(e for e in second if e["type"] == "MESSAGES_SNAPSHOT")["messages"]
    assert [m["content"] for m in snapshot2 if m["role"] == "user"] == ["one", "two"]
    assert snapshot2[-1]["content"] == "You said: two (1 word, turn 2)"


def test_a_new_thread_starts_with_the_history_the_client_sent(server):
    tid = new_id("seeded")
    messages = [user("earlier"), {"id": "a1", "role": "assistant", "content": "an earlier answer"}, user("now")]
    assert reply_of(events_of(run(server, tid, messages))) == "You said: now (1 word, turn 2)"
    stored = thread(server, tid).json()["messages"]
    assert [(m["role"], m["content"]) for m in stored[:3]] == [
        ("user", "earlier"), ("assistant", "an earlier answer"), ("user", "now"),
    ]  # fmt: skip


def test_frontend_tool_result_continues_the_thread_once(server):
    tid = new_id("frontend")
    tools = [{"name": "confirm", "description": "ask", "parameters": {"type": "object"}}]
    asked = events_of(run(server, tid, [user('/call confirm {"question": "ship it?"}')], tools=tools))
    pending = asked[-1]["outcome"]["pendingToolCallIds"]
    result = {"id": "t1", "role": "tool", "toolCallId": pending[0], "content": "yes, ship it"}
    answered = events_of(run(server, tid, [result], tools=tools))
    assert reply_of(answered) == "The tool returned: yes, ship it"
    stored = thread(server, tid).json()["messages"]
    assert [m for m in stored if m["role"] == "tool"] == [{**result, "id": stored[2]["id"]}]
    assert stored[1]["toolCalls"][0]["id"] == pending[0]


def test_questions_on_a_thread_resume_and_land_in_it(server):
    tid = new_id("question")
    asked = events_of(run(server, tid, [user('/ask deploy {"env": "prod"}')]))
    interrupt = asked[-1]["outcome"]["interrupts"][0]
    resumed = events_of(
        run(server, tid, [user('/ask deploy {"env": "prod"}')], resume=[{"interruptId": interrupt["id"], "status": "resolved", "payload": {"approved": True}}])
    )
    assert resumed[0]["parentRunId"] == asked[0]["runId"]
    assert reply_of(resumed) == "Approved (allow_once): ran deploy"
    stored = thread(server, tid).json()["messages"]
    assert stored[0]["content"] == '/ask deploy {"env": "prod"}'
    assert stored[-1]["content"] == "Approved (allow_once): ran deploy"


# -- the thread endpoints and owners -----------------------------------------------------------
def test_list_get_delete_are_the_callers_own(server):
    tid = new_id("owned")
    events_of(run(server, tid, [user("alice's secret plan")]))
    listed = httpx.get(url(server, "threads"), headers=auth(ALICE), timeout=30).json()
    assert tid in [t["threadId"] for t in listed["threads"]]
    mine = next(t for t in listed["threads"] if t["threadId"] == tid)
    assert mine["title"] == "alice's secret plan" and mine["messageCount"] == 4
    # bob: not in his list, 404 to read and to delete, 409 to continue (the id is taken), no data in any answer
    bobs = httpx.get(url(server, "threads"), headers=auth(BOB), timeout=30).json()
    assert tid not in [t["threadId"] for t in bobs["threads"]]
    read = thread(server, tid, BOB)
    assert read.status_code == 404 and read.json()["error"] == "unknown_thread"
    gone = httpx.delete(url(server, f"threads/{tid}"), headers=auth(BOB), timeout=30)
    assert gone.status_code == 404
    taken = run(server, tid, [user("what is the plan?")], token=BOB)
    assert taken.status_code == 409 and taken.json()["error"] == "thread_taken"
    for answer in (read, gone, taken):
        assert "secret" not in answer.text
    # alice's thread is untouched; she deletes it, and it is really gone
    assert len(thread(server, tid).json()["messages"]) == 4
    deleted = httpx.delete(url(server, f"threads/{tid}"), headers=auth(ALICE), timeout=30)
    assert deleted.json() == {"deleted": True, "threadId": tid}
    assert thread(server, tid).status_code == 404
    assert tid not in [t["threadId"] for t in httpx.get(url(server, "threads"), headers=auth(ALICE)).json()["threads"]]


def test_listing_pages(server):
    ids = [new_id("page") for _ in range(3)]
    for tid in ids:
        events_of(run(server, tid, [user(f"thread {tid}")], token=BOB))
    first = httpx.get(url(server, "threads?limit=2"), headers=auth(BOB), timeout=30).json()
    assert [t["threadId"] for t in first["threads"]] == ids[::-1][:2] and first["next"] == ids[1]
    rest = httpx.get(url(server, f"threads?limit=2&before={first['next']}"), headers=auth(BOB), timeout=30).json()
    assert rest["threads"][0]["threadId"] == ids[0]


@pytest.mark.parametrize(
    ("method", "path", "status", "words"),
    [
        ("GET", "threads/bad%20id", 422, "thread id"),
        ("GET", "threads/" + "x" * 129, 422, "1-128"),
        ("GET", "threads?limit=0", 422, "limit"),
        ("GET", "threads?limit=many", 422, "limit"),
        ("GET", "threads?limit=%E2%91%A0", 422, "limit"),  # "①" is a digit to str.isdigit, not to int()
        ("GET", "threads?limit=%C2%B2", 422, "limit"),
        ("GET", "threads?before=%00", 422, "before"),
        ("GET", "threads?limit=" + "9" * 4301, 422, "limit"),  # past Python's int() digit limit: never a 500
        ("GET", "threads?limit=%D9%A3", 422, "limit"),  # an Arabic-Indic digit: a digit to str.isdigit, ASCII only here
        ("GET", "threads?before=..", 422, "before"),  # (a thread id is never only dots)
        ("GET", "threads/no-such-thread", 404, "no thread"),
        ("POST", "threads", 405, "not allowed"),
        ("PUT", "threads/x", 405, "not allowed"),
        ("GET", "runs/no-such-run/events", 404, "no run"),
    ],
)
def test_bad_thread_requests_get_clear_errors(server, method, path, status, words):
    answer = httpx.request(method, url(server, path), headers={**auth(ALICE), "Content-Type": "application/json"}, timeout=30)
    assert answer.status_code == status, answer.text
    assert words in answer.json()["detail"]


@pytest.mark.parametrize(
    ("thread_id", "status", "words"),
    [("bad id!", 422, "threadId"), ("x" * 200, 422, "threadId"), ("../etc", 422, "threadId"), ("", 422, "threadId"),
     (".", 422, "threadId"), ("..", 422, "threadId"), ("...", 422, "threadId")],  # only dots: no URL path can name them
)
def test_bad_thread_ids_are_refused_before_anything_streams(server, thread_id, status, words):
    answer = run(server, thread_id, [user("hi")])
    assert answer.status_code == status and words in answer.json()["detail"]


def test_an_input_with_nothing_new_is_refused(server):
    tid = new_id("nothing-new")
    events_of(run(server, tid, [user("hi")]))
    answer = run(server, tid, [user("hi"), {"id": "a", "role": "assistant", "content": "hello"}])
    assert answer.status_code == 422 and "nothing new" in answer.json()["detail"]


def test_a_thread_over_its_size_limit_fails_clearly_and_the_server_goes_on(server):
    tid = new_id("huge")
    events = events_of(run(server, tid, [user("y " * (THREAD_LIMIT // 3))]))
    assert events[-1]["type"] == "RUN_ERROR" and f"the limit is {THREAD_LIMIT}" in events[-1]["message"]
    again = events_of(run(server, new_id("after-huge"), [user("still there?")]))
    assert reply_of(again) == "You said: still there? (2 words, turn 1)"


# -- reattach ---------------------------------------------------------------------------------
def start_and_leave(server: Any, tid: str, text: str, **extra: Any) -> tuple[str, list[dict[str, Any]]]:
    """Start a run, read until three text deltas arrived, and go away; (runId, events seen)."""
    run_id = uuid.uuid4().hex
    body = {"threadId": tid, "runId": run_id, "messages": [user(text)], **extra}
    seen: list[dict[str, Any]] = []
    with httpx.stream("POST", url(server), json=body, headers=auth(ALICE), timeout=60) as response:
        assert response.status_code == 200
        for line in response.iter_lines():
            if line.startswith("data: "):
                seen.append(json.loads(line[6:]))
            if sum(e["type"] == "TEXT_MESSAGE_CONTENT" for e in seen) >= 3:
                break
    return run_id, seen


def test_a_run_finishing_after_its_client_left_can_be_followed_again(server):
    tid = new_id("reattach")
    run_id, seen = start_and_leave(server, tid, "/slow /long 80 once upon a time", forwardedProps={"onDisconnect": "finish"})
    assert seen[-1]["type"] == "TEXT_MESSAGE_CONTENT"
    running = thread(server, tid).json()["running"]
    assert running == {"runId": run_id}
    assert thread(server, tid).json()["messages"][-1] == {"id": "h0", "role": "user", "content": "/slow /long 80 once upon a time"}
    # another principal cannot follow it or stop it
    assert httpx.get(url(server, f"runs/{run_id}/events"), headers=auth(BOB), timeout=30).status_code == 404
    stop = httpx.post(url(server, "cancel"), json={"runId": run_id}, headers=auth(BOB), timeout=30)
    assert stop.status_code == 404
    # the run from its start: the same message ids as the first stream, ending with the whole reply
    body = httpx.get(url(server, f"runs/{run_id}/events"), headers=auth(ALICE), timeout=60).text
    frames = support.parse_sse(body)
    events = [f.data for f in frames]
    assert events[0] == seen[0] and events[-1]["type"] == "RUN_FINISHED" and events[-1]["outcome"] == {"type": "success"}
    assert [e.get("messageId") for e in events[: len(seen)]] == [e.get("messageId") for e in seen]
    whole = reply_of(events)
    assert sum(e["type"] == "TEXT_MESSAGE_CONTENT" for e in events) == 80 and whole.startswith("You said: once")
    stored = thread(server, tid).json()
    assert stored["running"] is None and stored["messages"][-1]["content"] == whole
    # Last-Event-ID: a reader that saw up to a frame gets everything after it, exactly once
    ids = [f.id for f in frames if f.id]
    assert len(ids) >= 80 and all(i.startswith(run_id + ":") for i in ids)
    middle = next(k for k, f in enumerate(frames) if f.id == ids[len(ids) // 2])
    rest = httpx.get(url(server, f"runs/{run_id}/events"), headers={**auth(ALICE), "Last-Event-ID": ids[len(ids) // 2]}, timeout=60)
    after = [f.data for f in support.parse_sse(rest.text)]
    assert events[: middle + 1] + after == events
    # garbage or a cursor of another run is refused (422); one this run never gave out, or of another
    # life of the run (its epoch), is expired (409): the same answers as the REST door's
    for bad, status, code in (
        ("garbage", 422, "invalid_request"), ("other-run:0:3", 422, "invalid_request"), ("٣:0:1", 422, "invalid_request"),
        (f"{run_id}:0:999999", 409, "cursor_expired"), (f"{run_id}:99:1", 409, "cursor_expired"),
    ):
        refused = httpx.get(url(server, f"runs/{run_id}/events"), params={"after": bad}, headers=auth(ALICE), timeout=30)
        assert (refused.status_code, refused.json()["error"]) == (status, code), (bad, refused.text)


def test_by_default_a_client_that_leaves_cancels_its_run_into_the_thread(server):
    tid = new_id("leave")
    start_and_leave(server, tid, "/slow /long 80 a long story")

    def cancelled_turn() -> bool:
        messages = thread(server, tid).json()["messages"]
        return bool(messages) and messages[-1]["content"].endswith("[reply cancelled]")

    wait_for(cancelled_turn, "the cut-short reply to be kept, marked cancelled")
    assert thread(server, tid).json()["running"] is None


# -- the official client ------------------------------------------------------------------------
def test_official_client_two_turns_on_one_thread(server):
    node = node_or_skip()
    proc = subprocess.run([node, "threads.mjs", server.base_url, ALICE, BOB], cwd=JS, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["first"]["error"] is None and out["first"]["messages"][-1]["content"] == "You said: first question (2 words, turn 1)"
    second = out["second"]
    assert second["sent"] == [["user"]]  # the second agent knew only its new message
    assert second["messages"][-1]["content"] == "You said: second question (2 words, turn 2)"
    # its MESSAGES_SNAPSHOT gave it the whole conversation
    assert [m["content"] for m in second["messages"] if m["role"] == "user"] == ["first question", "second question"]
    tool = out["tool"]
    assert tool["asked"]["outcome"]["type"] == "success" and len(tool["asked"]["outcome"]["pendingToolCallIds"]) == 1
    assert tool["answered"]["sent"] == [["tool"]] and tool["answered"]["error"] is None
    assert tool["answered"]["messages"][-1]["content"] == "The tool returned: yes, ship it"
    intruder = out["intruder"]
    assert intruder["error"] is not None and "409" in intruder["error"] and "first question" not in intruder["error"]
    stored = thread(server, out["threadId"]).json()["messages"]
    assert [m["content"] for m in stored if m["role"] == "user"] == [
        "first question", "second question", '/call confirm {"question": "ship it?"}',
    ]  # fmt: skip


def test_without_a_store_runs_stay_stateless(tmp_path):
    with start_server(["--door", "agui", "-b", "scripted", "--store", "none", "-o", "agui.keepalive=0"]) as srv:
        listed = httpx.get(url(srv, "threads"), timeout=30)
        assert listed.status_code == 501 and listed.json()["error"] == "no_threads"
        assert "keeps no threads" in listed.json()["detail"]
        first = events_of(httpx.post(url(srv), json={"threadId": "any id at all!", "runId": "r1", "messages": [user("one")]}))
        again = events_of(httpx.post(url(srv), json={"threadId": "any id at all!", "runId": "r2", "messages": [user("two")]}))
        assert reply_of(first) == "You said: one (1 word, turn 1)" and reply_of(again) == "You said: two (1 word, turn 1)"


def test_a_run_left_to_finish_can_still_be_cancelled(server):
    tid = new_id("stop-later")
    run_id, _ = start_and_leave(server, tid, "/slow /long 200 a very long story", forwardedProps={"onDisconnect": "finish"})
    stopped = httpx.post(url(server, "cancel"), json={"runId": run_id, "threadId": tid}, headers=auth(ALICE), timeout=30)
    assert stopped.status_code == 200 and stopped.json() == {"cancelled": True, "runId": run_id}
    body = httpx.get(url(server, f"runs/{run_id}/events"), headers=auth(ALICE), timeout=60).text
    assert parse_sse(body)[-1] == {"type": "RUN_FINISHED", "threadId": tid, "runId": run_id, "outcome": {"type": "cancelled"}}
    assert thread(server, tid).json()["messages"][-1]["content"].endswith("[reply cancelled]")


def test_hostile_inputs_on_a_threaded_server_get_errors_and_it_keeps_serving(tmp_path):
    from onedoor.testing.hostile import all_raw, mutations, traceback_in

    template = {"threadId": "hostile-thread", "runId": "hostile-run", "messages": [user("hi")]}
    cases = [*all_raw(), *mutations(template)]
    args = ["--door", "agui", "-b", "scripted", "-o", f"sqlite.path={tmp_path / 't.sqlite3'}", "-o", "agui.keepalive=0"]
    with start_server(args) as srv, httpx.Client(timeout=30) as client:
        for case in cases:
            body = case.payload.replace(b'"hostile-run"', f'"{uuid.uuid4().hex}"'.encode())
            answer = client.post(url(srv), content=body, headers={"Content-Type": "application/json"})
            assert answer.status_code < 500, (case.name, answer.status_code, answer.text[:300])
            if answer.status_code == 200:
                assert parse_sse(answer.text)[-1]["type"] in ("RUN_FINISHED", "RUN_ERROR"), case.name
            else:
                assert set(answer.json()) == {"error", "detail"}, case.name
        for path in ("threads/%FF%FE", "threads/" + "a" * 5000, "threads?limit=" + "9" * 400, "runs/%00/events"):
            assert client.get(url(srv, path)).status_code in (404, 422), path
        again = events_of(client.post(url(srv), json={"threadId": new_id("fine"), "runId": "ok", "messages": [user("fine?")]}))
        assert reply_of(again) == "You said: fine? (1 word, turn 1)"
    stderr = srv.proc.stderr.read() if srv.proc.stderr else ""
    assert traceback_in(stderr) is None, stderr[-3000:]


def test_deleting_a_thread_stops_its_run_and_forgets_its_events(server):
    tid = new_id("deleted")
    run_id, _ = start_and_leave(server, tid, "/slow /long 200 the secret plan", forwardedProps={"onDisconnect": "finish"})
    assert httpx.get(url(server, f"runs/{run_id}/events"), headers=auth(ALICE), timeout=5,
                     params={"after": "x"}).status_code in (404, 422)  # the route exists for the run
    gone = httpx.delete(url(server, f"threads/{tid}"), headers=auth(ALICE), timeout=30)
    assert gone.status_code == 200
    after = httpx.get(url(server, f"runs/{run_id}/events"), headers=auth(ALICE), timeout=30)
    assert after.status_code == 404 and "secret plan" not in after.text, after.text
    assert thread(server, tid).status_code == 404
    assert reply_of(events_of(run(server, new_id("after"), [user("still serving")]))).startswith("You said")


def test_fifty_runs_on_one_thread_at_once_are_all_kept(server):
    """#24 item 1: 50 runs on one thread at once (the first ones creating it) all finish, and the
    thread keeps every message and every reply: no RUN_ERROR for write contention."""
    import concurrent.futures

    tid = new_id("crowd")
    with concurrent.futures.ThreadPoolExecutor(25) as pool:
        answers = list(pool.map(lambda n: run(server, tid, [user(f"crowd {n}")]), range(50)))
    endings = [events_of(answer)[-1] for answer in answers]
    assert [e["type"] for e in endings] == ["RUN_FINISHED"] * 50, [e for e in endings if e["type"] != "RUN_FINISHED"]
    stored = thread(server, tid).json()["messages"]
    assert sorted(m["content"] for m in stored if m["role"] == "user") == sorted(f"crowd {n}" for n in range(50))
    assert sum(m["role"] == "assistant" and m["content"].startswith("You said: crowd") for m in stored) == 50
