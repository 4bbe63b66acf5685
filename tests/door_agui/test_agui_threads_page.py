"""The chat page's threads in headless Chromium against `onedoor serve` (SQLite on disk): the
thread list, a reload that restores the open conversation, a reload mid-reply that shows
the whole reply, and server text shown as text."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import httpx
import pytest
from agui_helpers import JS, TOKEN, artifacts_dir, node_or_skip
from onedoor_transport_http.testing import start_server

CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def seen(tmp_path_factory):
    node = node_or_skip()
    if not Path(CHROMIUM).exists():
        pytest.skip("chromium not installed (apt-get install chromium)")
    if not (JS / "node_modules" / "playwright-core").is_dir():
        pytest.skip("tests/door_agui/js/node_modules is missing: run `npm ci --prefix tests/door_agui/js`")
    db = tmp_path_factory.mktemp("agui-page-threads") / "threads.sqlite3"
    shot = artifacts_dir() / "agui-chat-page-threads.png"
    args = ["--door", "agui", "-b", "scripted", "-o", f"sqlite.path={db}"]
    with start_server(args, env={"ONEDOOR_HTTP_TOKEN": TOKEN}) as server:
        proc = subprocess.run(
            [node, "browser_threads.mjs", f"{server.base_url}/agui/?token={TOKEN}", str(shot)],
            cwd=JS, capture_output=True, text=True, timeout=240,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr[-3000:]
        out = json.loads(proc.stdout.strip().splitlines()[-1])
        headers = {"Authorization": f"Bearer {TOKEN}"}
        first = out["first"]["threads"][0]["id"]
        out["stored"] = httpx.get(f"{server.base_url}/agui/threads/{first}", headers=headers, timeout=30).json()
        assert server.proc.poll() is None, "the server died"
    assert shot.exists() and shot.stat().st_size > 5_000
    return out


def test_the_thread_list_holds_the_conversations(seen):
    first = seen["first"]
    assert first["listVisible"] is True
    assert [t["title"] for t in first["threads"]] == ["first thread hello"] and first["threads"][0]["current"]
    assert first["messages"] == [
        ["user", "first thread hello"], ["assistant", "You said: first thread hello (3 words, turn 1)"],
        ["user", "second turn"], ["assistant", "You said: second turn (2 words, turn 2)"],
    ]  # fmt: skip
    assert seen["afterNew"]["messages"] == [] and not any(t["current"] for t in seen["afterNew"]["threads"])
    second = seen["second"]
    assert [t["title"] for t in second["threads"]] == ["another conversation", "first thread hello"]
    assert second["threads"][0]["current"] and second["hash"] == "#thread=" + second["threads"][0]["id"]


def test_a_reload_restores_the_open_conversation(seen):
    expected = seen["second"]["messages"]
    assert expected[-1] == ["assistant", "You said: another conversation (2 words, turn 1)"]
    assert seen["reloaded"]["messages"] == expected and seen["reloaded"]["hash"] == seen["second"]["hash"]
    assert seen["fromStorage"]["messages"] == expected  # no hash in the URL: localStorage remembered it


def test_switch_and_delete(seen):
    assert seen["switched"]["messages"] == seen["first"]["messages"] and seen["switched"]["tools"] == 2
    assert [t["title"] for t in seen["deleted"]["threads"]] == ["first thread hello"]


def test_server_text_is_shown_as_text(seen):
    hostile = seen["hostile"]
    assert hostile["threads"][0]["title"] == '<img src=x onerror="window.__pwned=1">'
    assert hostile["messages"][0] == ["user", '<img src=x onerror="window.__pwned=1">']
    assert hostile["pwned"] is None and hostile["images"] == 0


def test_a_reload_mid_reply_shows_the_whole_reply(seen):
    assert seen["beforeReload"]  # part of the reply was on the page when it reloaded
    assert seen["reattachedWhileRunning"] is True and len(seen["followed"]) >= 1
    stored = seen["stored"]["messages"]
    whole = stored[-1]["content"]
    assert stored[-1]["role"] == "assistant" and "[reply" not in whole and whole.startswith("You said: a long story")
    assert seen["midReply"]["messages"][-2:] == [["user", "/slow /long 100 a long story"], ["assistant", whole]]
    assert seen["afterRun"]["messages"] == seen["midReply"]["messages"]


def test_no_console_errors(seen):
    assert seen["consoleErrors"] == []
