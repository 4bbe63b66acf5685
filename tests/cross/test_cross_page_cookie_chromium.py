"""The page cookie in headless Chromium against `onedoor serve --token` (agui + rest, SQLite).

The issue it answers: browsers send a 127.0.0.1 cookie to every port of 127.0.0.1, so an
unrelated local server got the chat page's cookie, and replayed from a plain client it
read the user's threads. Here the chat page works on its cookie (opens with ?token=,
streams, lists threads); an unrelated server on another port does receive the cookie, but
neither its replay nor its page's requests get anything; on the REST docs page Swagger UI
(served from tests/cross/js: no CDN here) loads the spec and runs "Try it out"; and the
chat page works on a plain-http name too, where browsers send no Sec-Fetch-* headers.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest
from onedoor_test_support import node_or_skip
from onedoor_transport_http.page_cookie import NO_PROOF
from onedoor_transport_http.testing import start_server

JS = Path(__file__).parents[1] / "door_agui" / "js"
SCRIPT = Path(__file__).parent / "js" / "page_cookie.mjs"
CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
TOKEN = "page-cookie-chromium-token-0123456789"


class Unrelated(BaseHTTPRequestHandler):
    """Another local server: serves a page at any path and keeps the Cookie headers it got."""

    cookies: list[str] = []

    def do_GET(self) -> None:
        if self.headers.get("cookie"):
            Unrelated.cookies.append(self.headers["cookie"])
        body = b"<!doctype html><title>another local app</title>"
        self.send_response(200)
        self.send_header("content-type", "text/html")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def unrelated():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Unrelated)
    Unrelated.cookies = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.timeout(240)
def test_the_page_cookie_in_chromium(tmp_path, unrelated):
    node = node_or_skip(JS, "playwright-core")
    node_or_skip(SCRIPT.parent, "swagger-ui-dist")
    if not Path(CHROMIUM).exists():
        pytest.skip("chromium not installed (apt-get install chromium)")
    pytest.importorskip("onedoor_door_rest", reason="needs the rest door (its docs page)")
    args = ["--door", "agui", "--door", "rest", "-b", "scripted", "-o", f"sqlite.path={tmp_path / 'threads.sqlite3'}",
            "-o", "allowed_hosts=agent.test:*"]
    with start_server(args, env={"ONEDOOR_HTTP_TOKEN": TOKEN}) as server:
        base = server.base_url
        port = base.rsplit(":", 1)[1]
        started = time.time()
        proc = subprocess.run([node, str(SCRIPT), base, unrelated, TOKEN], cwd=JS, capture_output=True, text=True,
                              timeout=200)
        assert proc.returncode == 0, proc.stderr[-3000:]
        seen = json.loads(proc.stdout.strip().splitlines()[-1])
        assert seen["consoleErrors"] == [], seen["consoleErrors"]
        name = f"onedoor_token_{port}"

        # 1. the chat page opens with ?token=, streams a reply and lists the thread, on its cookie
        assert "token" not in seen["loopback"]["url"]
        assert seen["loopback"]["reply"].startswith("You said: cookie check")
        assert seen["loopback"]["threads"] == ["cookie check"]
        cookies = {(c["name"], c["path"]): c for c in seen["cookies"] if c["domain"] == "127.0.0.1"}
        chat, docs = cookies[(name, "/agui")], cookies[(name, "/rest")]
        for cookie in (chat, docs):
            assert cookie["httpOnly"] and cookie["sameSite"] == "Strict" and TOKEN not in cookie["value"]
            assert started < cookie["expires"] <= time.time() + 4 * 3600 + 60  # Max-Age: a few hours

        # 2. the unrelated server did get the cookie (cookies ignore ports) ...
        stolen = [part.strip().split("=", 1)[1] for header in Unrelated.cookies for part in header.split(";")
                  if part.strip().startswith(name + "=")]
        assert stolen, Unrelated.cookies
        # ... but replayed from a plain client it reads nothing, and neither does its page in the browser
        replay = httpx.get(base + "/agui/threads", headers={"cookie": f"{name}={stolen[0]}"}, timeout=30)
        assert replay.status_code == 401 and replay.json() == {"error": "unauthorized", "detail": NO_PROOF}
        # (the chat page lists with ?limit=: these are the unrelated page's: no-cors 401, cors refused by its Origin)
        from_there = [r["status"] for r in seen["responses"] if r["url"] == base + "/agui/threads"]
        assert 401 in from_there and set(from_there) <= {401, 403}, from_there
        assert seen["unrelatedPage"]["noCors"] == "sent" and isinstance(seen["unrelatedPage"]["cors"], str)
        listed = [r["status"] for r in seen["responses"] if r["url"].startswith(base + "/agui/threads?")]
        assert listed and set(listed) == {200}, listed

        # 3. the REST docs page: Swagger UI got the spec and ran "Try it out" on its cookie
        spec = [r["status"] for r in seen["responses"] if r["url"] == base + "/rest/openapi.json"]
        assert spec == [200] and seen["docs"]["operations"] >= 3, (spec, seen["docs"])
        assert seen["docs"]["status"] == "200", seen["docs"]
        assert json.loads(seen["docs"]["body"])["reply"].startswith("You said: from the docs page")

        # 4. on a plain-http name the page works too: its GETs carry no Sec-Fetch-Site, only a Referer
        assert seen["lan"]["reply"].startswith("You said: over plain http")
        assert seen["lan"]["threads"] == ["over plain http", "cookie check"]
        lan = [r for r in seen["threadRequests"] if r["url"].startswith(f"http://agent.test:{port}/")]
        assert lan and all("sec-fetch-site" not in r["headers"] for r in lan), lan
        assert all(r["headers"].get("referer") == f"http://agent.test:{port}/" for r in lan), lan
        # there nothing tells a reload from a replay: reopening needs ?token= again
        assert seen["lanReload"]["status"] == 401 and json.loads(seen["lanReload"]["body"])["detail"] == NO_PROOF
        assert server.proc.poll() is None
