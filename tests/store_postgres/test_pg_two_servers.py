"""Two `onedoor serve --store postgres` processes sharing one PostgreSQL (REST door, a
tokens file naming alice and bob): a thread started through one continues through the
other, with the same messages in the same order; owners hold across servers; turns sent
to both servers at once are all kept; each server stops cleanly (its pool closed).

The scripted backend's reply says which turn of the conversation it saw ("turn N"), so a
reply shows the history the *other* server kept reached this server's backend.
"""

from __future__ import annotations

import concurrent.futures
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

TOKEN_A = "postgres-alice-token-0123456789"
TOKEN_B = "postgres-bob-token-9876543210ab"
AUTH_A = {"Authorization": f"Bearer {TOKEN_A}"}
AUTH_B = {"Authorization": f"Bearer {TOKEN_B}"}

pytest.importorskip("onedoor_door_rest", reason="the two-server test drives the REST door (onedoor-door-rest)")


@pytest.fixture(scope="module")
def servers(postgres: Any, tmp_path_factory: Any) -> Iterator[tuple[Any, Any]]:
    from onedoor_transport_http.testing import start_server

    tokens = tmp_path_factory.mktemp("tokens") / "tokens"
    tokens.write_text(f"alice {TOKEN_A}\nbob {TOKEN_B}\n")
    common = ["--door", "rest", "--store", "postgres", "-o", f"tokens_file={tokens}", "-o", "rest.on_disconnect=finish"]
    # The DSN both ways: on the command line, and (as a secret should be) in the environment.
    with start_server([*common, "-o", f"postgres.dsn={postgres.dsn}"]) as one:
        with start_server(common, env={"ONEDOOR_POSTGRES_DSN": postgres.dsn}) as two:
            yield one, two
            _stops_cleanly(two)
        _stops_cleanly(one)


def _stops_cleanly(server: Any) -> None:
    """Ctrl-C: exit 130 (as after Ctrl-C in a shell), no traceback (the store's pool closed quietly)."""
    code = server.stop()
    errors = server.proc.stderr.read()
    assert code == 130, f"exit {code}: {errors[-2000:]}"
    assert "Traceback" not in errors and "Exception ignored" not in errors, errors[-2000:]


def _chat(base: str, thread_id: str, message: str) -> dict:
    r = httpx.post(f"{base}/rest/threads/{thread_id}/chat", json={"message": message}, headers=AUTH_A, timeout=60)
    assert r.status_code == 200, r.text
    return r.json()


def _thread(base: str, thread_id: str, auth: dict[str, str] = AUTH_A) -> httpx.Response:
    return httpx.get(f"{base}/rest/threads/{thread_id}", headers=auth, timeout=30)


def _frames(text: str) -> list[tuple[str, str, dict]]:
    out = []
    for frame in text.split("\n\n"):
        fields = dict(line.split(": ", 1) for line in frame.split("\n") if ": " in line)
        if "event" in fields:
            out.append((fields.get("id", ""), fields["event"], json.loads(fields["data"])))
    return out


def test_a_reader_reattaches_through_the_other_server_to_a_run_still_going(servers: tuple[Any, Any]) -> None:
    one, two = servers
    thread_id = httpx.post(f"{one.base_url}/rest/threads", json={}, headers=AUTH_A, timeout=30).json()["id"]
    seen: list[tuple[str, str, dict]] = []
    with httpx.stream("POST", f"{one.base_url}/rest/threads/{thread_id}/chat/stream", json={"message": "/slow /long 40"},
                      headers=AUTH_A, timeout=60) as response:
        buffer = ""
        for chunk in response.iter_text():
            buffer += chunk
            *whole, buffer = buffer.split("\n\n")
            seen += _frames("\n\n".join(whole))
            if len(seen) >= 5:
                break  # the client's connection to server one drops mid-reply
    run_id = seen[0][2]["run_id"]
    assert httpx.get(f"{two.base_url}/rest/runs/{run_id}/events", headers={**AUTH_B, "last-event-id": seen[-1][0]},
                     timeout=30).status_code == 404, "bob cannot follow alice's run on either server"
    rest = httpx.get(f"{two.base_url}/rest/runs/{run_id}/events", headers={**AUTH_A, "last-event-id": seen[-1][0]},
                     timeout=60)
    assert rest.status_code == 200, rest.text
    after = _frames(rest.text)
    numbers = [int(event_id.rsplit(":", 1)[1]) for event_id, _, _ in seen + after]
    assert numbers == list(range(1, len(numbers) + 1)), "every event exactly once, through two servers"
    ending = after[-1]
    assert ending[1] == "run_finished" and ending[2]["stop_reason"] == "end_turn", ending
    text = "".join(data["text"] for _, name, data in seen + after if name == "text_delta")
    assert text == ending[2]["text"]
    stored = _thread(two.base_url, thread_id).json()["messages"]
    assert stored[-1]["content"] == ending[2]["text"], "the run finished into its thread after its client left"


def test_a_thread_started_on_one_server_continues_on_the_other(servers: tuple[Any, Any]) -> None:
    one, two = servers
    r = httpx.post(f"{one.base_url}/rest/threads", json={"title": "across"}, headers=AUTH_A, timeout=30)
    assert r.status_code == 201, r.text
    thread_id = r.json()["id"]

    assert "turn 1" in _chat(one.base_url, thread_id, "hello from one")["reply"]
    seen_by_two = _thread(two.base_url, thread_id).json()
    assert [m["content"] for m in seen_by_two["messages"] if m["role"] == "user"] == ["hello from one"]

    assert "turn 2" in _chat(two.base_url, thread_id, "and from two")["reply"], "server two saw server one's turn"
    assert "turn 3" in _chat(one.base_url, thread_id, "back on one")["reply"], "server one saw server two's turn"

    on_one, on_two = _thread(one.base_url, thread_id).json(), _thread(two.base_url, thread_id).json()
    assert on_one["messages"] == on_two["messages"], "both servers show the same messages in the same order"
    users = [m["content"] for m in on_one["messages"] if m["role"] == "user"]
    assert users == ["hello from one", "and from two", "back on one"]
    listed = httpx.get(f"{two.base_url}/rest/threads", headers=AUTH_A, timeout=30).json()["threads"]
    assert thread_id in [t["id"] for t in listed]

    assert _thread(two.base_url, thread_id, AUTH_B).status_code == 404, "bob gets 404 for alice's thread on either"
    assert httpx.delete(f"{one.base_url}/rest/threads/{thread_id}", headers=AUTH_A, timeout=30).status_code == 204
    assert _thread(two.base_url, thread_id).status_code == 404, "deleted through one, gone through the other"


def test_turns_sent_to_both_servers_at_once_are_all_kept(servers: tuple[Any, Any]) -> None:
    one, two = servers
    r = httpx.post(f"{two.base_url}/rest/threads", json={}, headers=AUTH_A, timeout=30)
    thread_id = r.json()["id"]
    # Each run appends twice (its message as it starts, its reply as it ends); writers that lose
    # a compare-and-set re-read, back off at random and try again.
    sent = [(one if n % 2 else two, f"message {n}") for n in range(8)]
    with concurrent.futures.ThreadPoolExecutor(len(sent)) as pool:
        replies = list(pool.map(lambda item: _chat(item[0].base_url, thread_id, item[1]), sent))
    assert all(reply["stop_reason"] == "end_turn" for reply in replies), replies
    kept = _thread(one.base_url, thread_id).json()
    users = sorted(m["content"] for m in kept["messages"] if m["role"] == "user")
    assert users == sorted(message for _, message in sent), "no turn lost when two servers write one thread"


def test_many_turns_on_one_thread_through_both_servers_are_all_kept(servers: tuple[Any, Any]) -> None:
    """#24 item 1: 20 clients x 3 turns on one thread, through two servers at once: every turn
    answered 200 (never a 502 for write contention), every one kept."""
    one, two = servers
    thread_id = httpx.post(f"{one.base_url}/rest/threads", json={}, headers=AUTH_A, timeout=30).json()["id"]

    def worker(n: int) -> list[dict]:
        server = one if n % 2 else two
        return [_chat(server.base_url, thread_id, f"worker {n} turn {t}") for t in range(3)]

    with concurrent.futures.ThreadPoolExecutor(20) as pool:
        replies = [reply for batch in pool.map(worker, range(20)) for reply in batch]
    assert [r["stop_reason"] for r in replies] == ["end_turn"] * 60
    kept = _thread(two.base_url, thread_id).json()
    users = sorted(m["content"] for m in kept["messages"] if m["role"] == "user")
    assert users == sorted(f"worker {n} turn {t}" for n in range(20) for t in range(3))


def test_a_turn_cut_on_one_server_is_shown_marked_through_the_other(postgres: Any, tmp_path: Any) -> None:
    """#24 item 6 on PostgreSQL: while server one answers, server two shows the turn as it is;
    once server one is killed, server two shows it marked, before anyone writes to it."""
    import signal

    from onedoor.kernel import INTERRUPTED_REPLY
    from onedoor_transport_http.testing import start_server

    common = ["--door", "rest", "--store", "postgres", "-o", f"postgres.dsn={postgres.dsn}", "-o", "rest.on_disconnect=finish"]
    with start_server(common) as reader:
        killed = start_server(common)
        try:
            thread_id = httpx.post(f"{killed.base_url}/rest/threads", json={}, timeout=30).json()["id"]
            with httpx.stream("POST", f"{killed.base_url}/rest/threads/{thread_id}/chat/stream",
                              json={"message": "/slow /long 400 cut me"}, timeout=60) as stream:
                for line in stream.iter_lines():
                    if line.startswith("event: text_delta"):
                        break
            live = httpx.get(f"{reader.base_url}/rest/threads/{thread_id}", timeout=30).json()["messages"]
            assert live[-1]["role"] == "user" and live[-1]["content"] == "/slow /long 400 cut me"
            killed.proc.send_signal(signal.SIGKILL)
            killed.proc.wait(timeout=30)
        finally:
            if killed.proc.poll() is None:
                killed.proc.kill()
        cut = httpx.get(f"{reader.base_url}/rest/threads/{thread_id}", timeout=30).json()["messages"]
        assert [(m["role"], m["content"]) for m in cut[-2:]] == [("user", "/slow /long 400 cut me"), ("assistant", INTERRUPTED_REPLY)]
