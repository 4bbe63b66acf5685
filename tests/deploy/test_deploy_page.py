"""The chat page behind a round-robin nginx in front of three servers on one PostgreSQL, in
Chromium: the servers share a ``page_cookie_secret``, so the cookie one gave the page (for
``?token=``) is good on the others; a reload in the middle of a reply lands on another
server, which reattaches to the run and shows the whole reply."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import httpx
import pytest
from deploy_harness import AUTH, TOKEN, Cluster
from onedoor_test_support import node_or_skip

pytest.importorskip("onedoor_door_agui", reason="the AG-UI door (onedoor-door-agui) is not installed")
JS = Path(__file__).parents[1] / "door_agui" / "js"
SECRET = "deploy-page-cookie-secret-0123456789abcdef"


def test_the_chat_page_works_through_the_balancer_and_a_reload_reattaches(tmp_path, postgres, balancer):
    node = node_or_skip(JS, "playwright-core")
    chromium = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
    if not Path(chromium).exists():
        pytest.skip(f"chromium is not installed at {chromium}")
    options = ("scripted.delay=0.01", "agui.keepalive=0", f"page_cookie_secret={SECRET}")
    with Cluster(tmp_path, postgres.dsn, balancer=balancer, doors=("agui",), options=options) as cluster:
        page = f"{cluster.url}/agui/"
        proc = subprocess.run([node, "browser_servers.mjs", f"{page}?token={TOKEN}", page],
                              cwd=JS, capture_output=True, text=True, timeout=180)
        assert proc.returncode == 0, proc.stderr[-3000:]
        seen = json.loads(proc.stdout.strip().splitlines()[-1])
        assert seen["beforeReload"] and seen["consoleErrors"] == []
        tid = seen["hash"].removeprefix("#thread=")
        stored = httpx.get(f"{page}threads/{tid}", headers=AUTH, timeout=30).json()["messages"]
        whole = stored[-1]["content"]
        assert stored[-1]["role"] == "assistant" and "[reply" not in whole and whole.startswith("You said: a long story")
        assert seen["midReply"]["messages"][-2:] == [["user", "/slow /long 100 a long story"], ["assistant", whole]]
        assert seen["afterRun"]["messages"] == seen["midReply"]["messages"]
        # the page's requests (with the cookie alone) were answered by more than one server
        answered = {line.rsplit(" ", 1)[-1] for line in cluster.upstreams() if " /agui/" in line and " 200 " in line}
        assert len(answered) >= 2, cluster.upstreams()[-20:]
