"""Across doors on one HTTP server: auth wraps every route of every door, one port."""

from __future__ import annotations

import re

import httpx
import pytest
from cross_helpers import installed_asgi_doors
from onedoor import plugins
from onedoor.composition import ServeContext
from onedoor.testing import scripted_kernel

TOKEN = "cross-door-test-token-0123456789"
DOORS = installed_asgi_doors()


def _routes(app, prefix: str = "") -> list[tuple[str, set[str]]]:
    """Every (path, methods) reachable in a Starlette/FastAPI app tree."""
    found = []
    for route in getattr(app, "routes", []) or []:
        path = getattr(route, "path", "")
        sub = getattr(route, "app", None)
        if getattr(route, "methods", None):
            found.append((prefix + path, set(route.methods)))
        elif sub is not None and hasattr(sub, "routes"):
            found += _routes(sub, prefix + path)
        else:
            found.append((prefix + path or "/", {"GET", "POST"}))
    return found


@pytest.fixture(scope="module")
def server():
    if len(DOORS) < 2:
        pytest.skip(f"needs at least two asgi doors installed (found {DOORS}); the cross combo installs them")
    from onedoor_transport_http.testing import start_server

    args = [arg for name in DOORS for arg in ("--door", name)] + ["--transport", "http", "--token", TOKEN]
    with start_server(args) as srv:
        yield srv


def test_every_door_is_on_one_server_and_printed(server):
    printed = "\n".join(server.lines)
    for name in DOORS:
        assert f"onedoor:   {name}" in printed, printed


def printed_links(lines: list[str]) -> list[tuple[str, str]]:
    """(label, URL) of every link on the door lines (``onedoor:   NAME   label URL, label URL``)."""
    links = []
    for line in lines:
        if re.match(r"onedoor:   \S", line):
            for item in line.split(None, 2)[2].split(", "):
                label, url = item.rsplit(" ", 1)
                links.append((label, url))
    return links


def test_printed_urls_do_what_their_lines_say(server):
    """``?token=…`` only on pages (GET answers HTML, and a cookie); POST endpoints bare, answering
    401 without the header and not 401 with it; the rest need the header too (or are public)."""
    links = printed_links(server.lines)
    assert any('"Authorization: Bearer <token>"' in line for line in server.lines), server.lines
    pages = [(label, url) for label, url in links if url.endswith("?token=…")]
    expected = {"agui": "chat page", "rest": "docs"}
    assert sorted(label for label, _ in pages) == sorted(expected[d] for d in DOORS if d in expected), links
    for label, url in pages:
        opened = httpx.get(url.replace("…", TOKEN), timeout=30)  # as the browser opens it: no header
        assert opened.status_code == 200 and opened.headers["content-type"].startswith("text/html"), (label, url)
        assert opened.headers["set-cookie"].startswith("onedoor_token_"), (label, url)
    public = set()
    ctx = ServeContext(kernel=scripted_kernel(), door_names=DOORS, transport_name="http")
    for name in DOORS:
        public.update(plugins.load("door", name).asgi_mount(ctx).public_paths)
    bearer = {"Authorization": f"Bearer {TOKEN}"}
    others = [(label, url) for label, url in links if (label, url) not in pages]
    assert others, links
    for label, url in others:
        assert "token" not in url, (label, url)
        method = "POST" if re.search(r"\bPOST\b", label) else "GET"
        if method == "GET" and httpx.URL(url).path in public:
            assert httpx.get(url, timeout=30).status_code == 200, (label, url)
            continue
        bare = httpx.request(method, url, json={} if method == "POST" else None, timeout=30)
        assert bare.status_code == 401 and bare.json()["error"] == "unauthorized", (label, url, bare.status_code)
        authorized = httpx.request(method, url, json={} if method == "POST" else None, headers=bearer, timeout=30)
        assert authorized.status_code != 401, (label, url, authorized.text[:200])
    if "agui" in DOORS or "a2a" in DOORS:
        assert any(re.search(r"\bPOST\b", label) for label, _ in others), links


def test_every_route_of_every_door_demands_the_token(server):
    ctx = ServeContext(kernel=scripted_kernel(), door_names=DOORS, transport_name="http")
    checked = 0
    with httpx.Client(base_url=server.base_url, timeout=10) as client:
        for name in DOORS:
            mount = plugins.load("door", name).asgi_mount(ctx)
            routes = _routes(mount.app, mount.prefix.rstrip("/")) or [(mount.prefix, {"GET", "POST"})]
            for path, methods in routes:
                path = path.replace("{", "").replace("}", "") or "/"
                if path in mount.public_paths:  # what tells a client how to authenticate (A2A's card): GET is open
                    assert client.get(path).status_code == 200, path
                    methods = methods - {"GET"}
                for method in sorted(methods - {"HEAD", "OPTIONS"}):
                    bare = client.request(method, path, json={})
                    assert bare.status_code == 401, f"{method} {path} answered {bare.status_code} without a token"
                    assert bare.json()["error"] == "unauthorized"
                    wrong = client.request(method, path, json={}, headers={"Authorization": "Bearer nope-nope-nope-nope"})
                    assert wrong.status_code == 401
                    checked += 1
    assert checked >= len(DOORS)
    with httpx.Client(base_url=server.base_url, timeout=10) as client:
        assert client.get("/healthz").status_code == 200, "health stays open for load balancers"


def test_non_loopback_without_token_is_refused():
    import subprocess
    import sys

    result = subprocess.run(
        [sys.executable, "-m", "onedoor", "serve", "--host", "0.0.0.0", "--port", "0"],
        capture_output=True, text=True, timeout=60,
    )
    assert result.returncode == 2
    assert "refusing to listen on 0.0.0.0 without a token" in result.stderr
