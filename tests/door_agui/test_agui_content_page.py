"""The chat page's attachments and shared state in headless Chromium against `onedoor serve`
(SQLite on disk): a PNG attached and one pasted show in the conversation and after a reload,
tool and reply images show, and the state panel shows the agent's state and carries the
user's edit to the agent."""

from __future__ import annotations

import base64
import json
import os
import subprocess
from pathlib import Path

import httpx
import pytest
from agui_helpers import JS, TOKEN, artifacts_dir, node_or_skip
from onedoor.builtins.scripted_extras import DOT_PNG
from onedoor_transport_http.testing import start_server

CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
PNG = base64.b64encode(DOT_PNG).decode()
pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def seen(tmp_path_factory):
    node = node_or_skip()
    if not Path(CHROMIUM).exists():
        pytest.skip("chromium not installed (apt-get install chromium)")
    if not (JS / "node_modules" / "playwright-core").is_dir():
        pytest.skip("tests/door_agui/js/node_modules is missing: run `npm ci --prefix tests/door_agui/js`")
    db = tmp_path_factory.mktemp("agui-page-content") / "threads.sqlite3"
    shot = artifacts_dir() / "agui-chat-page-content.png"
    args = ["--door", "agui", "-b", "scripted", "-o", f"sqlite.path={db}", "-o", "scripted.reasoning=false"]
    with start_server(args, env={"ONEDOOR_HTTP_TOKEN": TOKEN}) as server:
        proc = subprocess.run(
            [node, "browser_content.mjs", f"{server.base_url}/agui/?token={TOKEN}", str(shot), PNG],
            cwd=JS, capture_output=True, text=True, timeout=240,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr[-4000:]
        out = json.loads(proc.stdout.strip().splitlines()[-1])
        headers = {"Authorization": f"Bearer {TOKEN}"}
        listed = httpx.get(f"{server.base_url}/agui/threads", headers=headers, timeout=30).json()["threads"]
        out["stored"] = httpx.get(f"{server.base_url}/agui/threads/{listed[0]['threadId']}", headers=headers, timeout=30).json()
        assert server.proc.poll() is None, "the server died"
    assert shot.exists() and shot.stat().st_size > 5_000
    return out


def test_the_attach_button_follows_the_capabilities(seen):
    assert seen["attachVisible"] is True and seen["accept"] == ""  # the scripted backend takes any file


def test_an_attached_png_reaches_the_agent_and_shows(seen):
    assert seen["pendingBefore"] == 1 and seen["pendingAfter"] == 0
    assert seen["attachedReply"].startswith("Received: 1 image (image/png, 70 bytes, dot-test.png). You said: what is in this picture")
    sent = seen["posted"][0]["messages"][-1]["content"]
    assert sent == [{"type": "text", "text": "what is in this picture"},
                    {"type": "image", "source": {"type": "data", "value": PNG, "mimeType": "image/png"}, "metadata": {"filename": "dot-test.png"}}]
    first = seen["usersLive"][0]
    assert first["text"] == "what is in this picture"
    assert first["images"] == [{"alt": "dot-test.png", "width": 1, "src": "data:image/png;base64,"}]


def test_a_pasted_image_is_a_message_of_its_own(seen):
    assert seen["pastedReply"].startswith("Received: 1 image (image/png, 70 bytes, pasted.png).")
    assert seen["usersLive"][1]["images"] == [{"alt": "pasted.png", "width": 1, "src": "data:image/png;base64,"}]


def test_the_images_survive_a_reload(seen):
    reloaded = seen["usersReloaded"]
    assert reloaded[:2] == seen["usersLive"][:2]
    stored = [m for m in seen["stored"]["messages"] if m["role"] == "user"]
    assert stored[0]["content"][1]["metadata"] == {"filename": "dot-test.png"}


def test_tool_and_reply_images_show(seen):
    assert seen["drawReply"].startswith("[image dot.png: image/png, 70 bytes]\nYou said: a dot")
    assert seen["toolImages"] == 1 and seen["replyImages"] == 1
    assert seen["toolImagesReloaded"] == 1  # the tool's image is kept in the thread


def test_the_state_panel_shows_the_state_and_carries_an_edit(seen):
    assert seen["stateReply"].endswith('State: {"todo":["milk"]}')
    assert json.loads(seen["stateShown"]["editor"]) == {"todo": ["milk"]} and seen["stateShown"]["version"] == "version 1"
    assert seen["saveNote"].startswith("saved")
    edited = {"todo": ["milk", "eggs"], "note": "from the page"}
    assert seen["editedReply"].endswith("State: " + json.dumps(edited, separators=(",", ":")))  # the agent saw the edit
    sent = seen["posted"][-2]
    assert sent["state"] == edited and sent["forwardedProps"]["onedoor"] == {"stateVersion": 1}
    assert seen["stateAfterEdit"]["version"] == "version 2"
    assert json.loads(seen["stateReloaded"]["editor"]) == edited and seen["stateReloaded"]["version"] == "version 2"
    assert seen["stored"]["state"] == edited and seen["stored"]["stateVersion"] == 2
    assert seen["afterReloadReply"].endswith("State: " + json.dumps(edited, separators=(",", ":")))


def test_no_console_errors(seen):
    assert seen["consoleErrors"] == []
