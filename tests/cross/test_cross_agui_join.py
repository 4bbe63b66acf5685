"""A thread started over REST, joined by the official AG-UI client (@ag-ui/client) that holds
nothing of it: its first run starts with a MESSAGES_SNAPSHOT of the thread's history, so the
client ends with the whole conversation in order. One real ``onedoor serve`` (REST and AG-UI)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterator

import httpx
import pytest

AGUI_JS = Path(__file__).resolve().parents[2] / "tests" / "door_agui" / "js"
pytestmark = pytest.mark.timeout(180)


@pytest.fixture
def url(tmp_path: Path) -> Iterator[str]:
    if shutil.which("node") is None or not (AGUI_JS / "node_modules" / "@ag-ui" / "client").is_dir():
        pytest.skip("node and tests/door_agui/js/node_modules (npm ci) are needed")
    proc = subprocess.Popen(
        [sys.executable, "-m", "onedoor", "serve", "--door", "rest", "--door", "agui", "--port", "0",
         "-o", f"sqlite.path={tmp_path / 'threads.sqlite3'}"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    assert proc.stdout is not None
    found = None
    for _ in range(200):  # bounded: the start-up banner is a few lines
        line = proc.stdout.readline()
        found = re.search(r"listening on (http://127\.0\.0\.1:\d+)", line)
        if found or not line:
            break
    try:
        if found is None:
            pytest.fail("onedoor serve did not say where it listens")
        yield found.group(1)
    finally:
        proc.terminate()
        proc.wait(30)


def test_a_rest_thread_joined_by_the_official_agui_client(url: Any) -> None:
    thread_id = httpx.post(url + "/rest/threads", json={"title": "started over REST"}, timeout=30).json()["id"]
    for text in ("first over rest", "second over rest"):
        answer = httpx.post(url + f"/rest/threads/{thread_id}/chat", json={"message": text}, timeout=60)
        assert answer.status_code == 200, answer.text
    done = subprocess.run(["node", "join_thread.mjs", url, thread_id, "now from AG-UI"], cwd=AGUI_JS,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["error"] is None and out["events"][:2] == ["RUN_STARTED", "MESSAGES_SNAPSHOT"]
    users = [m["content"] for m in out["messages"] if m["role"] == "user"]
    assert users == ["first over rest", "second over rest", "now from AG-UI"]
    replies = [m["content"] for m in out["messages"] if m["role"] == "assistant" and m["content"]]
    assert replies[-1].startswith("You said: now from AG-UI") and "turn 3" in replies[-1]
    # what the client holds is the thread as REST stores it
    stored = httpx.get(url + f"/rest/threads/{thread_id}", timeout=30).json()["messages"]
    assert [m["content"] for m in stored if m["role"] == "user"] == users
