"""Real web pages in headless Chromium attack the token-less quick start: no run starts.

A cross-site page (http://attacker.test) sends what any page may send without asking
(no-cors text/plain fetches, a text/plain form post carrying JSON, sendBeacon) and a
JSON fetch; a DNS-rebinding page (http://evil.test:PORT, resolved to 127.0.0.1) fetches
its "own" origin. Chromium really sends them (we read the answers from the browser's
network events); the server refuses each, and its lifecycle hooks show no run.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from cross_helpers import doors_server
from onedoor.testing.hostile import traceback_in
from onedoor_test_support import node_or_skip

JS = Path(__file__).parents[1] / "door_agui" / "js"
CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")


@pytest.mark.timeout(180)
def test_attacking_pages_in_chromium_start_no_run():
    node = node_or_skip(JS, "playwright-core")
    if not Path(CHROMIUM).exists():
        pytest.skip("chromium not installed (apt-get install chromium)")
    with doors_server() as server:
        proc = subprocess.run([node, "attack.mjs", server.base_url], cwd=JS, capture_output=True, text=True, timeout=150)
        assert proc.returncode == 0, proc.stderr[-3000:]
        seen = json.loads(proc.stdout.strip().splitlines()[-1])
        paths = [p for p in ("/rest/chat", "/rest/chat/stream", "/agui/", "/mcp/") if p.split("/")[1] in server.doors]
        # the browser did send the cross-site requests; every one was refused by Origin
        cross = [r for r in seen["crossSite"] if r["path"] in paths]
        for path in paths:
            posts = [r for r in cross if r["path"] == path and r["method"] == "POST"]
            assert len(posts) >= 2, (path, seen)  # no-cors fetch and form post at least
        assert cross and all(r["status"] == 403 for r in cross), cross
        # the rebinding page could read its answers: 421 and a JSON error, for every door
        answers = {path: (status, text) for path, status, text in seen["rebindingPage"]}
        for path in paths:
            status, text = answers[path]
            assert status == 421 and json.loads(text)["error"] == "misdirected_request", (path, status, text)
        assert server.recorder.started == [], "a web page started a run"
        for door in server.doors:
            server.normal_request(door)
        assert traceback_in(server.logs.text) is None, server.logs.text[-3000:]
