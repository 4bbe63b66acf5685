"""The chat page: the committed bundle is fresh, and the page works in a real Chromium."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import onedoor_door_agui
import pytest
from agui_helpers import JS, TOKEN, agui_server, artifacts_dir, node_or_skip
from onedoor_test_support import wait_for

WEB = Path(__file__).parents[2] / "plugins" / "door-agui" / "web"
STATIC = Path(onedoor_door_agui.__file__).parent / "static"
CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")


def test_committed_bundle_is_not_stale(tmp_path):
    node = node_or_skip()
    if not (WEB / "node_modules" / "esbuild").is_dir():
        pytest.skip("plugins/door-agui/web/node_modules is missing: run `npm ci --prefix plugins/door-agui/web`")
    proc = subprocess.run([node, "build.mjs", "--out", str(tmp_path)], cwd=WEB, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    # the bundle, and the notices of the third-party code in it (shipped as a license file)
    for built in (STATIC / "chat.js", WEB.parent / "THIRD-PARTY-NOTICES.txt"):
        assert built.is_file(), f"{built} is missing: run plugins/door-agui/web/build.sh"
        fresh = (tmp_path / built.name).read_bytes()
        assert fresh == built.read_bytes(), f"{built} is stale: run plugins/door-agui/web/build.sh and commit it"


def test_bundle_ships_inside_the_package():
    page = onedoor_door_agui.chat_page().decode()
    assert page.count("<script>") == 1 and "<style>" in page
    assert len((STATIC / "chat.js").read_bytes()) > 10_000


def test_page_in_headless_chromium():
    node = node_or_skip()
    if not Path(CHROMIUM).exists():
        pytest.skip("chromium not installed (apt-get install chromium)")
    if not (JS / "node_modules" / "playwright-core").is_dir():
        pytest.skip("tests/door_agui/js/node_modules is missing: run `npm ci --prefix tests/door_agui/js`")
    shot = artifacts_dir() / "agui-chat-page.png"
    with agui_server(token=TOKEN) as (server, kernel, recorder):
        url = f"{server.base_url}/agui/?token={TOKEN}"
        proc = subprocess.run([node, "browser.mjs", url, str(shot)], cwd=JS, capture_output=True, text=True, timeout=150)
        assert proc.returncode == 0, proc.stderr[-3000:]
        seen = json.loads(proc.stdout.strip().splitlines()[-1])
        # the token left the address bar at once; the page works on an HttpOnly, SameSite=Strict cookie
        assert "token" not in seen["url"] and seen["url"].endswith("/agui/")
        assert TOKEN not in seen["pageCookies"] and "onedoor_token" not in seen["pageCookies"]
        assert any(c["name"].startswith("onedoor_token_") and c["httpOnly"] and c["sameSite"] == "Strict" for c in seen["cookies"])
        # the reply streamed: its length grew through several values before the end
        growing = [n for n in seen["lengths"] if n > 0]
        assert len(set(growing)) >= 3 and growing == sorted(growing), seen["lengths"]
        assert seen["reply"] == "You said: tell me about the many doors of this house (9 words, turn 1)"
        assert seen["tool"]["name"] == "word_count" and json.loads(seen["tool"]["args"]) == {"text": "tell me about the many doors of this house"}
        assert seen["tool"]["state"] == "done" and '"words": 9' in seen["tool"]["result"]
        assert seen["reasoning"]["open"] is False and "this is turn 1" in seen["reasoning"]["text"]
        assert "scripted failure" in seen["error"]
        assert seen["refused"].startswith("Request refused (413)") and seen["unsent"] == 1
        assert '"iso"' in seen["frontendTool"]["result"] and seen["frontendTool"]["reply"].startswith("The tool returned: {")
        assert seen["stopVisible"] is True and seen["note"] == "Stopped." and seen["status"] == "stopped"
        # the only console errors are the browser's and the client's reports of the refused request
        unexpected = [e for e in seen["consoleErrors"] if "413" not in e and "Agent execution failed" not in e]
        assert unexpected == [], seen["consoleErrors"]
        # the server really cancelled the run behind the Stop button
        deadline = time.monotonic() + 10
        while kernel.active_runs and time.monotonic() < deadline:
            time.sleep(0.05)
        wait_for(lambda: kernel.active_runs == 0, "every run to end")
        assert any(o.stop_reason == "cancelled" for o in recorder.finished.values() if hasattr(o, "stop_reason"))
    assert shot.exists() and shot.stat().st_size > 5_000
