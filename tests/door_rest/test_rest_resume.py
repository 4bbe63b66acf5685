"""Resumable streams over the REST door: cursors, reconnects, and what a dropped client does.

Real `onedoor serve --door rest` processes on 127.0.0.1 (a tokens file, their own SQLite
file), httpx streaming as the client: it reads part of a stream, drops the connection,
and comes back to ``GET /rest/runs/{run_id}/events`` with ``Last-Event-ID`` or ``?after=``.
The scripted backend's ``/slow /long N`` streams N text deltas 50 ms apart, so a run is
still going when its client drops.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

import httpx
import pytest
from onedoor_test_support import wait_for
from rest_helpers import AUTH_A, new_thread, sse_frames, threads_server

SLOW = "/slow /long 30 resumable"


@pytest.fixture(scope="module")
def finishing(tmp_path_factory: Any) -> Iterator[httpx.Client]:
    """A server whose runs finish into their thread when the client drops."""
    with threads_server(tmp_path_factory.mktemp("rest-finish"), "-o", "on_disconnect=finish") as (served, _):
        with httpx.Client(base_url=served.base_url, timeout=60, headers=AUTH_A) as client:
            yield client


def read_then_drop(client: httpx.Client, method: str, url: str, count: int, **kw: Any) -> list[Any]:
    """The first ``count`` SSE frames of a response, then the connection is closed."""
    frames: list[Any] = []
    with client.stream(method, url, **kw) as r:
        assert r.status_code == 200, r.read()
        pending = ""
        for chunk in r.iter_text():
            pending += chunk
            while "\n\n" in pending:
                block, pending = pending.split("\n\n", 1)
                frames += sse_frames(block + "\n\n")
                if len(frames) >= count:
                    return frames
    raise AssertionError(f"the stream ended after {len(frames)} frames, before {count}")


def seq_of(frame: Any) -> int:
    return int(frame.id.rsplit(":", 1)[1])


def text_of(frames: list[Any]) -> str:
    return "".join(f.data["text"] for f in frames if f.event == "text_delta")


def test_a_reconnect_gets_every_event_exactly_once(finishing: httpx.Client) -> None:
    whole = sse_frames(finishing.post("/rest/chat/stream", json={"message": SLOW}).text)
    assert all(f.id for f in whole) and [seq_of(f) for f in whole] == list(range(1, len(whole) + 1))

    first = read_then_drop(finishing, "POST", "/rest/chat/stream", 5, json={"message": SLOW})
    run_id = first[0].data["run_id"]
    assert all(f.id.startswith(f"{run_id}:") for f in first)
    # back with Last-Event-ID (what EventSource sends), dropped again part way ...
    second = read_then_drop(finishing, "GET", f"/rest/runs/{run_id}/events", 10,
                            headers={"Last-Event-ID": first[-1].id})
    # ... and back with ?after= to the end
    r = finishing.get(f"/rest/runs/{run_id}/events", params={"after": second[-1].id})
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream"), r.text
    rest = sse_frames(r.text)
    got = first + second + rest
    assert [seq_of(f) for f in got] == list(range(1, len(got) + 1)), "each event once, none missing"
    assert [f.event for f in got] == [f.event for f in whole]
    assert text_of(got) == text_of(whole) and got[-1].data["text"] == whole[-1].data["text"]
    assert got[-1].event == "run_finished" and got[-1].data["stop_reason"] == "end_turn"
    # replaying from the start gives the same events again; after the last one there is nothing
    replay = sse_frames(finishing.get(f"/rest/runs/{run_id}/events").text)
    assert [(f.id, f.event, f.data) for f in replay] == [(f.id, f.event, f.data) for f in got]
    assert finishing.get(f"/rest/runs/{run_id}/events", headers={"Last-Event-ID": got[-1].id}).status_code == 204


def test_finish_keeps_the_turn_when_the_stream_drops(finishing: httpx.Client) -> None:
    thread_id = new_thread(finishing)
    first = read_then_drop(finishing, "POST", f"/rest/threads/{thread_id}/chat/stream", 4, json={"message": SLOW})
    run_id = first[0].data["run_id"]
    ending = sse_frames(finishing.get(f"/rest/runs/{run_id}/events").text)[-1]  # the turn is kept before its ending
    assert ending.event == "run_finished" and ending.data["stop_reason"] == "end_turn", ending
    thread = finishing.get(f"/rest/threads/{thread_id}").json()
    assert thread["messages"][0]["content"] == SLOW
    assert thread["messages"][-1] == {
        "role": "assistant", "content": ending.data["text"], "tool_calls": [], "tool_call_id": None,
        "usage": ending.data["usage"],  # the turn's usage is kept with its last assistant message
    }


def test_finish_keeps_the_turn_when_a_json_client_drops(finishing: httpx.Client) -> None:
    thread_id = new_thread(finishing)
    with pytest.raises(httpx.ReadTimeout):
        finishing.post(f"/rest/threads/{thread_id}/chat", json={"message": SLOW},
                       timeout=httpx.Timeout(60, read=0.3))

    def replied() -> Any:
        thread = finishing.get(f"/rest/threads/{thread_id}").json()
        last = thread["messages"][-1] if thread["messages"] else {}
        return last if last.get("role") == "assistant" and last.get("content") else None

    last = wait_for(replied, "the dropped JSON run's reply in its thread")
    assert last["content"].startswith("You said: resumable") and "[reply" not in last["content"], last


def test_cancel_is_the_default_when_the_client_drops(tmp_path: Path) -> None:
    with threads_server(tmp_path) as (served, _):
        with httpx.Client(base_url=served.base_url, timeout=60, headers=AUTH_A) as client:
            thread_id = new_thread(client)
            first = read_then_drop(client, "POST", f"/rest/threads/{thread_id}/chat/stream", 4,
                                   json={"message": SLOW})

            def cut_short() -> Any:
                messages = client.get(f"/rest/threads/{thread_id}").json()["messages"]
                return messages[-1] if messages and messages[-1]["role"] == "assistant" else None

            last = wait_for(cut_short, "the cancelled run's turn in its thread")
            assert last["content"].endswith("[reply cancelled]"), last
            replay = sse_frames(client.get(f"/rest/runs/{first[0].data['run_id']}/events").text)
            assert replay[-1].event == "run_finished" and replay[-1].data["stop_reason"] == "cancelled"


def test_a_cursor_older_than_the_journal_gets_409(tmp_path: Path) -> None:
    extra = ["-o", "limits.max_journal_events=5", "-o", "limits.journal_retention=1"]
    with threads_server(tmp_path, *extra) as (served, _):
        with httpx.Client(base_url=served.base_url, timeout=60, headers=AUTH_A) as client:
            whole = sse_frames(client.post("/rest/chat/stream", json={"message": "/slow /long 20 kept briefly"}).text)
            run_id = whole[0].data["run_id"]
            r = client.get(f"/rest/runs/{run_id}/events", headers={"Last-Event-ID": whole[1].id})
            assert r.status_code == 409 and r.json()["error"] == "cursor_expired", r.text
            assert "no longer kept" in r.json()["detail"]
            kept = sse_frames(client.get(f"/rest/runs/{run_id}/events", params={"after": whole[-4].id}).text)
            assert [(f.id, f.data) for f in kept] == [(f.id, f.data) for f in whole[-3:]]
            r = client.get(f"/rest/runs/{run_id}/events", params={"after": f"{run_id}:0:{len(whole) + 5}"})
            assert r.status_code == 409 and r.json()["error"] == "cursor_expired", r.text
            r = client.get(f"/rest/runs/{run_id}/events", params={"after": f"other-run:0:{len(whole)}"})
            assert r.status_code == 422 and "another run" in r.json()["detail"], r.text

            def forgotten() -> bool:
                return client.get(f"/rest/runs/{run_id}/events").status_code == 404

            wait_for(forgotten, "the journal to be forgotten after limits.journal_retention")
            assert client.get(f"/rest/runs/{run_id}/events").json()["error"] == "unknown_run"
