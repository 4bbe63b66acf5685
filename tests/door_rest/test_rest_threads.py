"""Threads over the REST door: create, list, get, delete, chat on a thread, owners.

A real `onedoor serve --door rest` process on 127.0.0.1 with a tokens file naming two
principals (alice and bob) and its own SQLite file; httpx as the client; the scripted
backend, whose reply says which turn of the conversation it saw ("turn N": 1 + the user
messages in its history), so a reply shows the thread's history reached the backend.
"""

from __future__ import annotations

import concurrent.futures
import os
from pathlib import Path
from typing import Any, Iterator

import httpx
import pytest
from onedoor_transport_http.testing import start_server
from rest_helpers import AUTH_A, AUTH_B, new_thread, sse_frames, threads_server

MAX_MESSAGE = 2000


@pytest.fixture(scope="module")
def server(tmp_path_factory: Any) -> Iterator[Any]:
    folder = tmp_path_factory.mktemp("rest-threads")
    with threads_server(folder, "-o", f"limits.max_message_chars={MAX_MESSAGE}", "-o", "max_body_bytes=65536") as (
        served,
        _,
    ):
        yield served


@pytest.fixture
def client(server: Any) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.base_url, timeout=60) as c:
        yield c


def check_error(r: httpx.Response, status: int, code: str) -> dict:
    assert r.status_code == status, (r.status_code, r.text)
    assert r.headers["content-type"].startswith("application/json"), r.headers
    body = r.json()
    assert body["error"] == code and body["detail"], body
    assert "Traceback" not in body["detail"]
    return body


def roles(thread: dict) -> list[str]:
    return [m["role"] for m in thread["messages"]]


# -- CRUD ---------------------------------------------------------------------------------
def test_create_get_list_delete(client: httpx.Client) -> None:
    r = client.post("/rest/threads", json={"title": "Plans", "settings": {"backend": "scripted"}}, headers=AUTH_A)
    assert r.status_code == 201, r.text
    made = r.json()
    assert made["title"] == "Plans" and made["message_count"] == 0
    assert r.headers["location"] == f"/rest/threads/{made['id']}"

    got = client.get(f"/rest/threads/{made['id']}", headers=AUTH_A).json()
    assert got["id"] == made["id"] and got["messages"] == [] and got["settings"] == {"backend": "scripted"}

    listed = client.get("/rest/threads", headers=AUTH_A).json()["threads"]
    assert listed[0]["id"] == made["id"]  # the newest first

    r = client.delete(f"/rest/threads/{made['id']}", headers=AUTH_A)
    assert r.status_code == 204 and r.content == b""
    check_error(client.get(f"/rest/threads/{made['id']}", headers=AUTH_A), 404, "unknown_thread")
    check_error(client.delete(f"/rest/threads/{made['id']}", headers=AUTH_A), 404, "unknown_thread")
    check_error(client.post(f"/rest/threads/{made['id']}/chat", json={"message": "hi"}, headers=AUTH_A), 404,
                "unknown_thread")
    assert made["id"] not in [t["id"] for t in client.get("/rest/threads", headers=AUTH_A).json()["threads"]]


def test_listing_pages_newest_first(client: httpx.Client) -> None:
    made = [new_thread(client, title=f"page {i}") for i in range(5)]
    seen: list[str] = []
    before = None
    for _ in range(50):  # bounded: at most 50 pages of 2
        params: dict[str, Any] = {"limit": 2}
        if before:
            params["before"] = before
        page = client.get("/rest/threads", params=params, headers=AUTH_A).json()
        assert len(page["threads"]) <= 2
        seen += [t["id"] for t in page["threads"]]
        before = page.get("next_before")
        if not before:
            break
    else:
        raise AssertionError("the listing never reached its last page")
    assert len(seen) == len(set(seen)), "a thread listed twice"
    mine = [t for t in seen if t in made]
    assert mine == list(reversed(made))


# -- turns on a thread --------------------------------------------------------------------
def test_chat_on_a_thread_continues_the_conversation(client: httpx.Client) -> None:
    thread_id = new_thread(client)
    first = client.post(f"/rest/threads/{thread_id}/chat", json={"message": "hello there"}, headers=AUTH_A)
    assert first.status_code == 200, first.text
    assert first.json()["thread_id"] == thread_id
    assert first.json()["reply"] == "You said: hello there (2 words, turn 1)"

    r = client.post(f"/rest/threads/{thread_id}/chat/stream", json={"message": "and again"}, headers=AUTH_A)
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream"), r.text
    frames = sse_frames(r.text)
    assert frames[-1].event == "run_finished"
    assert frames[-1].data["text"] == "You said: and again (2 words, turn 2)"  # it saw the first turn
    assert all(f.id for f in frames), "every event carries its cursor"

    third = client.post(f"/rest/threads/{thread_id}/chat", json={"message": "once more"}, headers=AUTH_A).json()
    assert third["reply"] == "You said: once more (2 words, turn 3)"

    thread = client.get(f"/rest/threads/{thread_id}", headers=AUTH_A).json()
    assert roles(thread) == ["user", "assistant", "tool", "assistant"] * 3
    assert [m["content"] for m in thread["messages"] if m["role"] == "user"] == ["hello there", "and again", "once more"]
    call = thread["messages"][1]["tool_calls"][0]
    assert call["name"] == "word_count" and call["arguments"] == {"text": "hello there"}
    assert thread["messages"][2]["tool_call_id"] == call["id"] and '"words": 2' in thread["messages"][2]["content"]
    assert thread["messages"][3]["content"] == first.json()["reply"]
    assert thread["message_count"] == 12 and thread["title"] == "hello there"


def test_two_chats_at_once_lose_no_turn(client: httpx.Client) -> None:
    thread_id = new_thread(client)
    messages = [f"/slow writer {i}" for i in range(4)]

    def chat(message: str) -> int:
        with httpx.Client(base_url=str(client.base_url), timeout=60) as own:
            return own.post(f"/rest/threads/{thread_id}/chat", json={"message": message}, headers=AUTH_A).status_code

    with concurrent.futures.ThreadPoolExecutor(len(messages)) as pool:
        statuses = list(pool.map(chat, messages))
    assert statuses == [200] * len(messages)
    thread = client.get(f"/rest/threads/{thread_id}", headers=AUTH_A).json()
    users = [m["content"] for m in thread["messages"] if m["role"] == "user"]
    assert sorted(users) == sorted(messages), users
    assert thread["message_count"] == 4 * len(messages)
    # every turn is there once: its user message (kept as its run starts), the tool call, its result, the reply
    replies = [m["content"] for m in thread["messages"] if m["role"] == "assistant" and m["content"]]
    said = sorted(reply.partition(" (")[0] for reply in replies)
    assert said == [f"You said: writer {i}" for i in range(len(messages))], replies
    assert roles(thread).count("tool") == len(messages)


def test_questions_on_a_thread_keep_their_turn(client: httpx.Client) -> None:
    thread_id = new_thread(client)
    asked = client.post(
        f"/rest/threads/{thread_id}/chat", json={"message": "/question What is your name?"}, headers=AUTH_A
    ).json()
    assert asked["status"] == "needs_input" and asked["thread_id"] == thread_id, asked
    question = asked["questions"][0]
    answer = {"answers": [{"question_id": question["id"], "outcome": "accept", "value": {"answer": "Ada"}}]}
    check_error(client.post(asked["resume_url"], json=answer, headers=AUTH_B), 404, "unknown_question")
    done = client.post(asked["resume_url"], json=answer, headers=AUTH_A)
    assert done.status_code == 200, done.text
    assert done.json()["status"] == "completed" and done.json()["thread_id"] == thread_id
    assert "Ada" in done.json()["reply"]
    thread = client.get(f"/rest/threads/{thread_id}", headers=AUTH_A).json()
    assert thread["messages"][0] == {
        "role": "user", "content": "/question What is your name?", "tool_calls": [], "tool_call_id": None,
    }
    assert thread["messages"][-1]["role"] == "assistant" and thread["messages"][-1]["content"] == done.json()["reply"]


def test_questions_over_sse_continue_the_journal(client: httpx.Client) -> None:
    thread_id = new_thread(client)
    r = client.post(f"/rest/threads/{thread_id}/chat/stream", json={"message": "/question Your name?"}, headers=AUTH_A)
    first = sse_frames(r.text)
    assert [f.event for f in first[-2:]] == ["question_asked", "run_finished"]
    run_id = first[0].data["run_id"]
    question = first[-2].data["question"]
    answer = {"answers": [{"question_id": question["id"], "outcome": "accept", "value": {"answer": "Grace"}}]}
    r = client.post(f"/rest/runs/{run_id}/answers/stream", json=answer, headers=AUTH_A)
    assert r.status_code == 200, r.text
    rest = sse_frames(r.text)
    assert rest[-1].event == "run_finished" and "Grace" in rest[-1].data["text"]
    seqs = [int(f.id.rsplit(":", 1)[1]) for f in first + rest]
    assert seqs == list(range(1, len(seqs) + 1)), "one run, one journal: the numbers go on after the answers"
    thread = client.get(f"/rest/threads/{thread_id}", headers=AUTH_A).json()
    assert thread["messages"][-1]["content"] == rest[-1].data["text"]


# -- owners -------------------------------------------------------------------------------
def test_another_principal_gets_exactly_404(client: httpx.Client) -> None:
    thread_id = new_thread(client, title="alice's")
    r = client.post(f"/rest/threads/{thread_id}/chat/stream", json={"message": "secret plans"}, headers=AUTH_A)
    run_id = sse_frames(r.text)[0].data["run_id"]
    before = client.get(f"/rest/threads/{thread_id}", headers=AUTH_A).json()
    unknown = "t-000000000000000000000000"

    def same_as_unknown(method: str, path: str, **kw: Any) -> None:
        mine = client.request(method, path.format(thread_id), headers=AUTH_B, **kw)
        none = client.request(method, path.format(unknown), headers=AUTH_B, **kw)
        assert mine.status_code == none.status_code == 404, (path, mine.text, none.text)
        assert mine.json()["error"] == none.json()["error"] == "unknown_thread"
        assert mine.json()["detail"].replace(thread_id, "ID") == none.json()["detail"].replace(unknown, "ID")

    same_as_unknown("GET", "/rest/threads/{}")
    same_as_unknown("POST", "/rest/threads/{}/chat", json={"message": "hi"})
    same_as_unknown("POST", "/rest/threads/{}/chat/stream", json={"message": "hi"})
    same_as_unknown("DELETE", "/rest/threads/{}")
    assert thread_id not in [t["id"] for t in client.get("/rest/threads", headers=AUTH_B).json()["threads"]]
    check_error(client.get(f"/rest/runs/{run_id}/events", headers=AUTH_B), 404, "unknown_run")
    assert client.get(f"/rest/runs/{run_id}/events", headers=AUTH_A).status_code == 200
    # alice's thread is untouched by all of that
    assert client.get(f"/rest/threads/{thread_id}", headers=AUTH_A).json() == before


# -- bad input ----------------------------------------------------------------------------
def test_bad_input_gets_clear_errors_and_the_server_keeps_serving(client: httpx.Client) -> None:
    thread_id = new_thread(client)
    chat = f"/rest/threads/{thread_id}/chat"
    json_headers = {**AUTH_A, "content-type": "application/json"}
    check_error(client.post("/rest/threads", content=b'{"title": ', headers=json_headers), 400, "bad_json")
    check_error(client.post(chat, content=b"[1, 2", headers=json_headers), 400, "bad_json")
    check_error(client.post("/rest/threads", json={"title": 5}, headers=AUTH_A), 422, "invalid_request")
    check_error(client.post("/rest/threads", json={"title": "x" * 201}, headers=AUTH_A), 422, "invalid_request")
    check_error(client.post("/rest/threads", json={"owner": "bob"}, headers=AUTH_A), 422, "invalid_request")
    check_error(client.post("/rest/threads", json={"settings": []}, headers=AUTH_A), 422, "invalid_request")
    check_error(client.post(chat, json={"message": 5}, headers=AUTH_A), 422, "invalid_request")
    check_error(client.post(chat, json={"message": ""}, headers=AUTH_A), 422, "invalid_request")
    body = check_error(client.post(chat, json={"message": " \x1e\t"}, headers=AUTH_A), 422, "invalid_request")
    assert "empty" in body["detail"]
    body = check_error(client.post(chat, json={"message": "hi", "history": []}, headers=AUTH_A), 422,
                       "invalid_request")
    assert "history" in body["detail"]  # a thread keeps its own history
    body = check_error(client.post(chat, json={"message": "x" * (MAX_MESSAGE + 1)}, headers=AUTH_A), 422,
                       "too_large")
    assert str(MAX_MESSAGE) in body["detail"]
    check_error(client.post(chat, json={"message": "x" * 70_000}, headers=AUTH_A), 413, "too_large")  # the body cap
    check_error(client.post("/rest/threads/t-unknown/chat", json={"message": "hi"}, headers=AUTH_A), 404,
                "unknown_thread")
    for bad in ("bad%20id", "x" * 129, "semi;colon", "%C3%A9t%C3%A9"):
        body = check_error(client.get(f"/rest/threads/{bad}", headers=AUTH_A), 422, "invalid_request")
        assert "not a thread id" in body["detail"], body
    for params in ({"limit": 0}, {"limit": 10_000}, {"limit": "many"}, {"before": "no good"}):
        check_error(client.get("/rest/threads", params=params, headers=AUTH_A), 422, "invalid_request")
    body = check_error(client.get("/rest/runs/r1/events", params={"after": "garbage"}, headers=AUTH_A), 422,
                       "invalid_request")
    assert "not a cursor" in body["detail"]
    r = client.post(f"/rest/threads/{thread_id}/chat/stream", json={"message": "streamed"}, headers=AUTH_A)
    run_id = sse_frames(r.text)[0].data["run_id"]
    body = check_error(client.get(f"/rest/runs/{run_id}/events", headers={**AUTH_A, "Last-Event-ID": "1"}), 422,
                       "invalid_request")
    assert "not a cursor" in body["detail"]
    check_error(client.get("/rest/runs/r1/events", headers={**AUTH_A, "Last-Event-ID": "1"}), 404, "unknown_run")
    check_error(client.get("/rest/threads"), 401, "unauthorized")
    # still serving, and the thread took none of the refused turns
    ok = client.post(chat, json={"message": "still there?"}, headers=AUTH_A)
    assert ok.status_code == 200 and ok.json()["reply"].endswith("turn 2)"), ok.text
    assert client.get(f"/rest/threads/{thread_id}", headers=AUTH_A).json()["message_count"] == 8


# -- limits, deletion on disk, no store -----------------------------------------------------
def test_a_thread_over_its_size_limit_is_refused(tmp_path: Path) -> None:
    with threads_server(tmp_path, "-o", "sqlite.max_thread_chars=1000") as (served, _):
        with httpx.Client(base_url=served.base_url, timeout=60) as client:
            thread_id = new_thread(client)
            r = client.post(f"/rest/threads/{thread_id}/chat", json={"message": "a few words"}, headers=AUTH_A)
            assert r.status_code == 200, r.text
            thread = client.get(f"/rest/threads/{thread_id}", headers=AUTH_A).json()
            held = sum(len(m["content"]) for m in thread["messages"])
            too_much = "y" * (1000 - held + 1)
            for path in ("chat", "chat/stream"):
                body = check_error(
                    client.post(f"/rest/threads/{thread_id}/{path}", json={"message": too_much}, headers=AUTH_A),
                    413, "thread_too_large",
                )
                assert "1000" in body["detail"] and "new thread" in body["detail"]
            after = client.get(f"/rest/threads/{thread_id}", headers=AUTH_A).json()
            assert after["messages"] == thread["messages"]
            assert client.post(f"/rest/threads/{new_thread(client)}/chat", json={"message": "fresh"},
                               headers=AUTH_A).status_code == 200


def _on_disk(db: Path) -> bytes:
    """The SQLite file and its side files (WAL, shared memory), as bytes."""
    return b"".join(p.read_bytes() for p in sorted(db.parent.glob(db.name + "*")))


def test_delete_really_deletes(tmp_path: Path) -> None:
    marker = "zebra-" + os.urandom(8).hex()
    with threads_server(tmp_path) as (served, db):
        with httpx.Client(base_url=served.base_url, timeout=60) as client:
            thread_id = new_thread(client, title="to forget")
            r = client.post(f"/rest/threads/{thread_id}/chat", json={"message": f"remember {marker}"}, headers=AUTH_A)
            assert r.status_code == 200, r.text
            keep_id = new_thread(client, title="to keep")
            assert client.post(f"/rest/threads/{keep_id}/chat", json={"message": "keep me"},
                               headers=AUTH_A).status_code == 200
            assert marker.encode() in _on_disk(db), "the text should be on disk before the delete"
            assert client.delete(f"/rest/threads/{thread_id}", headers=AUTH_A).status_code == 204
        served.stop()
    data = _on_disk(db)
    assert marker.encode() not in data, "the deleted thread's text is still in the SQLite files"
    assert b"keep me" in data


def test_without_a_store_threads_answer_501(tmp_path: Path) -> None:
    with start_server(["--door", "rest", "--store", "none"]) as served:
        with httpx.Client(base_url=served.base_url, timeout=60) as client:
            assert client.get("/rest/").json()["keeps_threads"] is False
            for method, path, body in [
                ("POST", "/rest/threads", {}),
                ("GET", "/rest/threads", None),
                ("GET", "/rest/threads/t-1", None),
                ("DELETE", "/rest/threads/t-1", None),
                ("POST", "/rest/threads/t-1/chat", {"message": "hi"}),
                ("POST", "/rest/threads/t-1/chat/stream", {"message": "hi"}),
            ]:
                r = client.request(method, path, json=body)
                detail = check_error(r, 501, "no_threads")["detail"]
                assert "keeps no threads" in detail
            r = client.post("/rest/chat", json={"message": "hi"})  # stateless chat still works
            assert r.status_code == 200 and r.json()["reply"].startswith("You said: hi"), r.text


def test_deleting_a_thread_ends_its_waiting_run_and_forgets_its_events(client: httpx.Client) -> None:
    thread_id = new_thread(client)
    asked = client.post(f"/rest/threads/{thread_id}/chat/stream", json={"message": "/question the secret word?"},
                        headers=AUTH_A)
    frames = sse_frames(asked.text)
    run_id = frames[0].data["run_id"]
    question_url = f"/rest/runs/{run_id}/questions"
    assert client.get(question_url, headers=AUTH_A).json()["questions"], "the run waits for an answer"
    replay = client.get(f"/rest/runs/{run_id}/events", headers=AUTH_A)
    assert replay.status_code == 200 and "the secret word" in replay.text
    assert client.delete(f"/rest/threads/{thread_id}", headers=AUTH_A).status_code == 204
    check_error(client.get(f"/rest/runs/{run_id}/events", headers=AUTH_A), 404, "unknown_run")
    waiting = client.get(question_url, headers=AUTH_A)
    assert waiting.status_code == 404 or waiting.json()["questions"] == [], waiting.text
    assert client.post("/rest/chat", json={"message": "still serving"}, headers=AUTH_A).status_code == 200


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
def test_twenty_clients_three_turns_each_on_one_thread_are_all_kept(client: httpx.Client, stream: bool) -> None:
    """#24 item 1: 20 clients x 3 turns on one thread at once: all 60 answered (never a 502
    for write contention), all kept."""
    thread_id = new_thread(client)

    def worker(n: int) -> list[str]:
        ends = []
        with httpx.Client(base_url=str(client.base_url), timeout=60) as own:
            for t in range(3):
                body = {"message": f"worker {n} turn {t}"}
                if stream:
                    text = own.post(f"/rest/threads/{thread_id}/chat/stream", json=body, headers=AUTH_A).text
                    ends.append([f for f in text.split("\n") if f.startswith("event: run_")][-1])
                else:
                    r = own.post(f"/rest/threads/{thread_id}/chat", json=body, headers=AUTH_A)
                    ends.append(f"{r.status_code} {r.json().get('stop_reason', r.text)}")
        return ends

    with concurrent.futures.ThreadPoolExecutor(20) as pool:
        ends = [end for batch in pool.map(worker, range(20)) for end in batch]
    assert ends == (["event: run_finished"] if stream else ["200 end_turn"]) * 60, ends
    thread = client.get(f"/rest/threads/{thread_id}", headers=AUTH_A).json()
    users = sorted(m["content"] for m in thread["messages"] if m["role"] == "user")
    assert users == sorted(f"worker {n} turn {t}" for n in range(20) for t in range(3))


@pytest.mark.parametrize("then", ["running", "killed"])
def test_deleted_text_leaves_the_wal_at_once(tmp_path: Path, then: str) -> None:
    """#24 item 3: after the 204, the text is in none of the SQLite files (the database, its
    -wal and -shm), while the server runs and after a kill -9: not only after a clean stop."""
    import signal

    marker = "okapi-" + os.urandom(8).hex()
    with threads_server(tmp_path) as (served, db):
        with httpx.Client(base_url=served.base_url, timeout=60) as client:
            thread_id = new_thread(client, title="to forget")
            for n in range(3):
                r = client.post(f"/rest/threads/{thread_id}/chat", json={"message": f"{marker} {n}"}, headers=AUTH_A)
                assert r.status_code == 200, r.text
            keep_id = new_thread(client, title="to keep")
            assert client.post(f"/rest/threads/{keep_id}/chat", json={"message": "keep me"}, headers=AUTH_A).status_code == 200
            assert marker.encode() in _on_disk(db), "the text should be on disk before the delete"
            assert client.delete(f"/rest/threads/{thread_id}", headers=AUTH_A).status_code == 204
            if then == "killed":
                served.proc.send_signal(signal.SIGKILL)
                served.proc.wait(timeout=30)
            files = sorted(p.name for p in db.parent.glob(db.name + "*"))
            assert marker.encode() not in _on_disk(db), f"the deleted text is still on disk ({files})"
            assert b"keep me" in _on_disk(db), "the check can find text that is there"
