"""#24 item 6: readers see a turn's true state at any time. Two ``onedoor serve`` processes
share one SQLite threads file; a run on server A is answering a thread: a reader through
server B (REST and AG-UI) sees the user's message and no mark (it is being answered); A is
killed with SIGKILL: the same reader, before anyone writes to the thread, sees the turn
marked as having no reply; the next turn keeps that mark once."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import httpx
import pytest
from onedoor.kernel import INTERRUPTED_REPLY
from onedoor_transport_http.testing import start_server

pytestmark = pytest.mark.timeout(120)


def _rest_messages(base: str, thread_id: str) -> list[tuple[str, str]]:
    r = httpx.get(f"{base}/rest/threads/{thread_id}", timeout=30)
    assert r.status_code == 200, r.text
    return [(m["role"], m["content"]) for m in r.json()["messages"]]


def _agui_messages(base: str, thread_id: str) -> list[tuple[str, str]]:
    r = httpx.get(f"{base}/agui/threads/{thread_id}", timeout=30)
    assert r.status_code == 200, r.text
    return [(m["role"], m["content"]) for m in r.json()["messages"]]


def test_a_cut_turn_is_shown_marked_at_once_and_a_live_one_is_not(tmp_path: Path) -> None:
    db = tmp_path / "threads.sqlite3"
    common = ["--door", "rest", "--door", "agui", "-o", f"sqlite.path={db}", "-o", "rest.on_disconnect=finish"]
    with start_server(common) as reader:
        killed = start_server(common)
        try:
            thread_id = httpx.post(f"{killed.base_url}/rest/threads", json={}, timeout=30).json()["id"]
            with httpx.stream("POST", f"{killed.base_url}/rest/threads/{thread_id}/chat/stream",
                              json={"message": "/slow /long 400 a long reply"}, timeout=60) as stream:
                for line in stream.iter_lines():
                    if line.startswith("event: text_delta"):
                        break  # the run is answering now
            for read in (_rest_messages, _agui_messages):
                live = read(reader.base_url, thread_id)
                assert live[-1] == ("user", "/slow /long 400 a long reply") and INTERRUPTED_REPLY not in dict(live).values()
            killed.proc.send_signal(signal.SIGKILL)
            killed.proc.wait(timeout=30)
        finally:
            if killed.proc.poll() is None:
                killed.proc.kill()
        for read in (_rest_messages, _agui_messages):
            cut = read(reader.base_url, thread_id)
            assert cut[-2:] == [("user", "/slow /long 400 a long reply"), ("assistant", INTERRUPTED_REPLY)], cut
        # the next turn keeps the mark (once), then its own reply
        r = httpx.post(f"{reader.base_url}/rest/threads/{thread_id}/chat", json={"message": "are you there?"}, timeout=60)
        assert r.status_code == 200, r.text
        after = _rest_messages(reader.base_url, thread_id)
        assert [c for _, c in after].count(INTERRUPTED_REPLY) == 1 and after[-1][0] == "assistant"
        assert ("user", "are you there?") in after


def test_a_reply_that_could_not_be_kept_is_shown_marked(tmp_path: Path) -> None:
    """The store refused the reply (the thread's size limit, as a store that is down would):
    the run ended failed, and the thread shows the turn marked, not a bare message."""
    db = tmp_path / "threads.sqlite3"
    with start_server(["--door", "rest", "-o", f"sqlite.path={db}", "-o", "sqlite.max_thread_chars=1000"]) as server:
        thread_id = httpx.post(f"{server.base_url}/rest/threads", json={}, timeout=30).json()["id"]
        r = httpx.post(f"{server.base_url}/rest/threads/{thread_id}/chat", json={"message": "/long 2000 x"}, timeout=60)
        assert r.status_code == 502 and "could not be kept" in r.json()["detail"], r.text
        deadline = time.monotonic() + 10
        while _rest_messages(server.base_url, thread_id)[-1][0] != "assistant" and time.monotonic() < deadline:
            time.sleep(0.05)  # the run's end (and its lease) may take a moment after the answer
        assert _rest_messages(server.base_url, thread_id)[-2:] == [("user", "/long 2000 x"), ("assistant", INTERRUPTED_REPLY)]
