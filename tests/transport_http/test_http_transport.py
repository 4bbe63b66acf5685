"""The HTTP transport against real uvicorn servers on 127.0.0.1.

Safe by default (loopback bind, fail closed without a token elsewhere), one bearer check
for every door and for whatever a hook adds, body cap, CORS off unless listed, health,
start-up lines, graceful shutdown that cancels runs in flight.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import threading

import httpx
import pytest
from onedoor import plugins
from onedoor.composition import AsgiMount, ServeContext
from onedoor.errors import CompositionError
from onedoor.testing import scripted_kernel
from onedoor_transport_http import HttpOptions, check_bind, is_loopback
from onedoor_transport_http.testing import ThreadedServer, start_server

TOKEN = "transport-test-token-abcdefghij"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
JSON = {"content-type": "application/json"}


def serve_cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "onedoor", "serve", *args],
        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL, env={**os.environ, **(env or {})},
    )


def http_doors() -> list[str]:
    """Every installed door that can mount on the HTTP transport."""
    names = []
    for name in plugins.names("door"):
        try:
            door = plugins.load("door", name)
        except Exception:  # noqa: BLE001 - a broken plugin is not this test's business
            continue
        if "asgi" in door.shapes:
            names.append(name)
    return names


def public_paths(doors: list[str]) -> set[str]:
    """The paths the doors answer to GET without a token (``AsgiMount.public_paths``)."""
    ctx = ServeContext(kernel=scripted_kernel(), door_names=doors, transport_name="http")
    return {path for name in doors for path in plugins.load("door", name).asgi_mount(ctx).public_paths}


DOORS = http_doors()
needs_a_door = pytest.mark.skipif(not DOORS, reason="no asgi door is installed in this environment")


class EchoDoor:
    """A minimal asgi door for tests: answers 200 to anything under its prefix."""

    name = "echo"
    shapes = frozenset({"asgi"})

    def asgi_mount(self, ctx):
        async def app(scope, receive, send):
            if scope["type"] != "http":
                return
            body = json.dumps({"path": scope["path"]}).encode()
            await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
            await send({"type": "http.response.body", "body": body})

        return AsgiMount(app=app, prefix="/echo", links=[("echo", "/echo/")])


class AddsARoute:
    """Hooks that add a route to the shared app, the way a plugin might."""

    def onedoor_http_app(self, app, ctx):
        from starlette.responses import PlainTextResponse
        from starlette.routing import Route

        async def extra(request):
            return PlainTextResponse("extra")

        app.router.routes.insert(0, Route("/extra", extra))

    def onedoor_run_started(self, run):
        pass

    def onedoor_run_finished(self, run, outcome):
        pass


# -- binding -------------------------------------------------------------------------
@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "::1", "127.0.0.2", "[::1]"])
def test_loopback_hosts(host):
    assert is_loopback(host)
    check_bind(HttpOptions(host=host))


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.0.2.10", "example.com"])
def test_non_loopback_without_token_fails_closed(host):
    assert not is_loopback(host)
    with pytest.raises(CompositionError, match="without a token"):
        check_bind(HttpOptions(host=host))
    check_bind(HttpOptions(host=host, token=TOKEN))  # with a token it may start


@needs_a_door
@pytest.mark.parametrize("how", ["flag", "env"])
def test_cli_refuses_a_public_bind_without_token(how):
    if how == "flag":
        result = serve_cli("--door", DOORS[0], "--host", "0.0.0.0", "--port", "0")
    else:
        result = serve_cli("--door", DOORS[0], "--port", "0", env={"ONEDOOR_HTTP_HOST": "0.0.0.0"})
    assert result.returncode == 2
    assert "refusing to listen on 0.0.0.0 without a token" in result.stderr
    assert "--token" in result.stderr and "Traceback" not in result.stderr
    assert "listening" not in result.stdout


@needs_a_door
def test_short_token_is_refused():
    result = serve_cli("--door", DOORS[0], "--token", "short", "--port", "0")
    assert result.returncode == 2 and "at least 16 characters" in result.stderr


@needs_a_door
def test_port_in_use_is_a_clear_error():
    with start_server(["--door", DOORS[0]]) as first:
        port = first.base_url.rsplit(":", 1)[1]
        result = serve_cli("--door", DOORS[0], "--port", port)
    assert result.returncode == 2
    assert f"cannot listen on 127.0.0.1:{port}" in result.stderr and "Traceback" not in result.stderr
    assert f"port {port} is in use; choose another with --port N, or --port 0 for any free one" in result.stderr


@needs_a_door
def test_start_up_lines_and_default_loopback():
    with start_server(sum((["--door", d] for d in DOORS), [])) as server:
        assert re.match(r"http://127\.0\.0\.1:\d+$", server.base_url)
        assert server.lines[0].startswith(f"onedoor: listening on {server.base_url}")
        for door in DOORS:
            pattern = rf"onedoor:\s+{re.escape(door)}\s+.*{re.escape(server.base_url)}/"
            assert any(re.match(pattern, ln) for ln in server.lines), server.lines


class LinksDoor:
    """A door whose printed links answer GET in every way: a page, JSON, an endless stream, an error."""

    name = "links"
    shapes = frozenset({"asgi"})

    def asgi_mount(self, ctx):
        async def app(scope, receive, send):
            path = scope["path"]
            if path == "/links/broken":
                raise RuntimeError("a broken route")
            kinds = {"/links/page": b"text/html; charset=utf-8", "/links/stream": b"text/event-stream"}
            kind = kinds.get(path, b"application/json")
            await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", kind)]})
            if path == "/links/stream":
                while (await receive())["type"] != "http.disconnect":
                    pass
            await send({"type": "http.response.body", "body": b"{}"})

        links = [("page", "/links/page"), ("form (POST)", "/links/page"), ("json", "/links/json"),
                 ("stream", "/links/stream"), ("broken", "/links/broken")]
        return AsgiMount(app=app, prefix="/links", links=links)


@pytest.mark.parametrize("token", [TOKEN, ""], ids=["token", "no-token"])
def test_start_up_links_get_the_token_only_on_pages(token):
    from onedoor_transport_http.app import build_app
    from onedoor_transport_http.links import BEARER_LINE, door_lines

    ctx = ServeContext(kernel=scripted_kernel(), door_names=["links"], transport_name="http")
    door = LinksDoor()
    app, mounts = build_app([door], ctx, HttpOptions(port=0, token=token))
    lines = asyncio.run(door_lines(app, [door], mounts, "http://127.0.0.1:9", 9, token or None))
    hint = "?token=…" if token else ""
    assert lines[0] == (f"onedoor:   links  page http://127.0.0.1:9/links/page{hint}, form (POST) http://127.0.0.1:9/links/page, "
                        "json http://127.0.0.1:9/links/json, stream http://127.0.0.1:9/links/stream, "
                        "broken http://127.0.0.1:9/links/broken")
    assert lines[1:] == ([BEARER_LINE] if token else [])


# -- auth: once, for every door ---------------------------------------------------------
@needs_a_door
def test_every_installed_door_demands_the_token():
    args = sum((["--door", d] for d in DOORS), []) + ["--token", TOKEN]
    with start_server(args) as server:
        urls = set()
        for line in server.lines[1:]:
            urls.update(u.split("?")[0] for u in re.findall(r"(http://\S+?)(?:,|$|\s)", line))
        assert len(urls) >= len(DOORS)
        public = public_paths(DOORS)
        for url in sorted(urls):
            for method in ("GET", "POST", "PUT", "DELETE"):
                if method == "GET" and httpx.URL(url).path in public:
                    assert httpx.get(url, timeout=10).status_code == 200, url  # e.g. A2A's agent card
                    continue
                for headers, detail in (({}, "missing"), ({"Authorization": "Bearer wrong-token-wrong-token"}, "wrong")):
                    r = httpx.request(method, url, headers=headers, json={"message": "hi"}, timeout=10)
                    assert r.status_code == 401, (method, url, r.status_code, r.text[:200])
                    assert r.json() == {"error": "unauthorized", "detail": f"{detail} bearer token"}
            r = httpx.get(url, headers=AUTH, timeout=10)
            assert r.status_code != 401, url
        health = httpx.get(server.base_url + "/healthz", timeout=10)
        assert health.status_code == 200 and health.json() == {"status": "ok"}, "no token: nothing more"
        assert httpx.get(server.base_url + "/healthz", headers=AUTH, timeout=10).json()["doors"] == DOORS


def test_hook_routes_and_any_mount_sit_behind_the_check():
    ctx = ServeContext(kernel=scripted_kernel(), hooks=AddsARoute(), door_names=["echo"], transport_name="http")
    with ThreadedServer([EchoDoor()], ctx, HttpOptions(port=0, token=TOKEN)) as server:
        base = server.base_url
        for path in ("/extra", "/echo/", "/echo/anything/deeper", "/", "/nowhere", "/healthz/../echo/"):
            r = httpx.get(base + path, timeout=10)
            assert r.status_code == 401, (path, r.status_code)
        assert httpx.get(base + "/extra", headers=AUTH, timeout=10).text == "extra"
        assert httpx.get(base + "/echo/x", headers=AUTH, timeout=10).json() == {"path": "/echo/x"}
        assert httpx.get(base + "/echo/x", params={"token": TOKEN}, timeout=10).status_code == 200
        assert httpx.get(base + "/echo/x", headers={"Authorization": f"bearer {TOKEN}"}, timeout=10).status_code == 200
        assert httpx.get(base + "/echo/x", headers={"Authorization": f"Bearer {TOKEN}x"}, timeout=10).status_code == 401
        assert httpx.get(base + "/echo/x", headers={"Authorization": f"Bearer {TOKEN[:-1]}"}, timeout=10).status_code == 401
        assert httpx.get(base + "/healthz", timeout=10).status_code == 200  # the only open path


def test_token_from_environment():
    pytest.importorskip("onedoor_door_rest", reason="needs the rest door to have something to call")
    with start_server(["--door", "rest"], env={"ONEDOOR_HTTP_TOKEN": TOKEN}) as server:
        assert httpx.post(server.base_url + "/rest/chat", json={"message": "hi"}, timeout=10).status_code == 401
        assert httpx.post(server.base_url + "/rest/chat", json={"message": "hi"}, headers=AUTH, timeout=30).status_code == 200


# -- body cap, errors, CORS, health -------------------------------------------------------
def test_body_cap_is_413_json_before_the_door_reads():
    ctx = ServeContext(kernel=scripted_kernel(), door_names=["echo"], transport_name="http")
    with ThreadedServer([EchoDoor()], ctx, HttpOptions(port=0, max_body_bytes=2048)) as server:
        url = server.base_url + "/echo/x"
        r = httpx.post(url, content=b"a" * 4096, headers=JSON, timeout=10)
        assert r.status_code == 413 and r.json() == {"error": "too_large", "detail": "request body over 2048 bytes"}

        def chunks():
            for _ in range(8):
                yield b"b" * 512

        r = httpx.post(url, content=chunks(), headers=JSON, timeout=10)  # chunked: no Content-Length to trust
        assert r.status_code == 413 and r.json()["error"] == "too_large"
        fits = b'"' + b"c" * 2046 + b'"'
        assert httpx.post(url, content=fits, headers=JSON, timeout=10).status_code == 200
        missing = httpx.get(server.base_url + "/nowhere", timeout=10)
        assert missing.status_code == 404 and missing.json() == {"error": "not_found", "detail": "no route for /nowhere"}
        root = httpx.get(server.base_url + "/", timeout=10, follow_redirects=False)
        assert root.status_code == 307 and root.headers["location"] == "/echo/"
        health = httpx.get(server.base_url + "/healthz", timeout=10).json()
        assert health == {"status": "ok", "doors": ["echo"], "backend": "scripted", "active_runs": 0, "parked_runs": 0,
                          "draining": False}


def preflight(url: str, origin: str) -> httpx.Response:
    headers = {"Origin": origin, "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "authorization"}
    return httpx.options(url, headers=headers, timeout=10)


def test_cors_is_off_unless_origins_are_listed():
    ctx = ServeContext(kernel=scripted_kernel(), door_names=["echo"], transport_name="http")
    with ThreadedServer([EchoDoor()], ctx, HttpOptions(port=0)) as server:
        r = preflight(server.base_url + "/echo/x", "https://evil.example")
        assert "access-control-allow-origin" not in r.headers
        r = httpx.get(server.base_url + "/echo/x", headers={"Origin": "https://evil.example"}, timeout=10)
        assert "access-control-allow-origin" not in r.headers
    options = HttpOptions(port=0, token=TOKEN, cors_origins=["https://app.example"])
    with ThreadedServer([EchoDoor()], ctx, options) as server:
        ok = preflight(server.base_url + "/echo/x", "https://app.example")
        assert ok.status_code == 200  # preflights carry no token: answered before auth
        assert ok.headers["access-control-allow-origin"] == "https://app.example"
        bad = preflight(server.base_url + "/echo/x", "https://evil.example")
        assert bad.headers.get("access-control-allow-origin") != "https://evil.example"
        r = httpx.get(server.base_url + "/echo/x", headers={"Origin": "https://app.example"}, timeout=10)
        assert r.status_code == 401 and r.headers["access-control-allow-origin"] == "https://app.example"


# -- graceful shutdown ---------------------------------------------------------------------
def test_shutdown_cancels_runs_in_flight():
    pytest.importorskip("onedoor_door_rest", reason="needs the rest door to stream a run")
    server = start_server(["--door", "rest"])
    got: dict[str, object] = {}
    streaming = threading.Event()

    def stream() -> None:
        with httpx.stream("POST", server.base_url + "/rest/chat/stream", json={"message": "/hang until shutdown"},
                          timeout=30) as r:
            text = ""
            for chunk in r.iter_text():
                text += chunk
                streaming.set()
            got["stream"] = text

    def chat() -> None:
        got["chat"] = httpx.post(server.base_url + "/rest/chat", json={"message": "/hang me too"}, timeout=30)

    threads = [threading.Thread(target=stream), threading.Thread(target=chat)]
    try:
        for t in threads:
            t.start()
        assert streaming.wait(20)
        for _ in range(200):
            if httpx.get(server.base_url + "/healthz", timeout=10).json()["active_runs"] == 2:
                break
            threading.Event().wait(0.05)
        server.proc.send_signal(signal.SIGINT)
        for t in threads:
            t.join(30)
        code = server.proc.wait(30)
    finally:
        server.stop()
    assert code in (0, 130)  # 130: the conventional exit after Ctrl-C
    assert "Traceback" not in server.proc.stderr.read()
    last = [b for b in str(got["stream"]).split("\n\n") if b][-1]
    assert "event: run_finished" in last.splitlines() and '"stop_reason":"cancelled"' in last
    chat_response = got["chat"]
    assert isinstance(chat_response, httpx.Response) and chat_response.status_code == 503
    assert chat_response.json()["error"] == "cancelled"


def test_connections_are_accepted_with_tcp_nodelay():
    """Without it a response's body waits for the client's delayed ACK of its headers
    (about 40 ms a request here): accepted connections inherit the listener's flag."""
    import socket

    from onedoor_transport_http.server import _listen

    listener = _listen("127.0.0.1", 0)
    try:
        listener.listen()
        client = socket.create_connection(listener.getsockname()[:2])
        accepted, _ = listener.accept()
        try:
            assert accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
        finally:
            accepted.close()
            client.close()
    finally:
        listener.close()
