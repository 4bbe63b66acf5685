"""Across doors on one HTTP server: auth wraps every route of every door, one port."""

from __future__ import annotations

import httpx
import pytest
from cross_helpers import installed_asgi_doors
from onedoor import plugins

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


def test_every_route_of_every_door_demands_the_token(server):
    from onedoor.composition import ServeContext
    from onedoor.testing import scripted_kernel

    ctx = ServeContext(kernel=scripted_kernel(), door_names=DOORS, transport_name="http")
    checked = 0
    with httpx.Client(base_url=server.base_url, timeout=10) as client:
        for name in DOORS:
            mount = plugins.load("door", name).asgi_mount(ctx)
            routes = _routes(mount.app, mount.prefix.rstrip("/")) or [(mount.prefix, {"GET", "POST"})]
            for path, methods in routes:
                path = path.replace("{", "").replace("}", "") or "/"
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
