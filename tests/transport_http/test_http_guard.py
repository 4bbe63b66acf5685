"""The transport's guard: Host, Origin, token (header, cookie, ?token= on pages), content
type, body, JSON — once, for every mount and for routes a hook adds, on real uvicorn."""

from __future__ import annotations

import json

import httpx
import pytest
from onedoor.composition import AsgiMount, Endpoint, ServeContext
from onedoor.testing import scripted_kernel
from onedoor_transport_http import HttpOptions
from onedoor_transport_http.guard import HostPolicy, OriginPolicy, split_host
from onedoor_transport_http.testing import ThreadedServer

TOKEN = "guard-test-token-abcdefghijklmn"
JSON = {"content-type": "application/json"}


class SeenDoor:
    """An asgi door that records what reached it (scope path, query, decoded JSON)."""

    name = "seen"
    shapes = frozenset({"asgi"})

    def __init__(self, **mount: object) -> None:
        self.seen: list[dict] = []
        self.mount = mount

    def asgi_mount(self, ctx):
        self.endpoint = ctx.endpoint

        async def app(scope, receive, send):
            if scope["type"] != "http":
                return
            body = b""
            while True:
                message = await receive()
                body += message.get("body", b"")
                if not message.get("more_body"):
                    break
            self.seen.append({"path": scope["path"], "query": scope["query_string"].decode(),
                              "json": scope.get("onedoor.json", "absent"), "body": body.decode("latin-1")})
            out = json.dumps({"ok": True}).encode()
            await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
            await send({"type": "http.response.body", "body": out})

        return AsgiMount(app=app, prefix="/seen", **self.mount)


def serve(door: SeenDoor, **options: object) -> ThreadedServer:
    ctx = ServeContext(kernel=scripted_kernel(), door_names=["seen"], transport_name="http")
    return ThreadedServer([door], ctx, HttpOptions(port=0, **options))


# -- the policies, as tables -----------------------------------------------------------------
@pytest.mark.parametrize("value, parsed", [("a.example:80", ("a.example", "80")), ("[::1]:8000", ("[::1]", "8000")),
                                           ("LOCALHOST", ("localhost", None)), ("[::1]", ("[::1]", None))])
def test_split_host(value, parsed):
    assert split_host(value) == parsed


def test_host_policy():
    policy = HostPolicy("10.0.0.5", ["agent.example", "api.example:8443", "any.example:*"])
    for ok in ("127.0.0.1", "127.0.0.1:9", "localhost:8000", "[::1]:1", "127.0.0.2", "10.0.0.5:8000",
               "agent.example", "agent.example:1234", "api.example:8443", "any.example:7"):
        assert policy.allows(ok), ok
    for bad in ("evil.example", "127.0.0.1.evil.example", "10.0.0.6", "api.example:8444", "localhost.evil:80",
                "0.0.0.0:8000", "[::2]:80", "agent.example.evil"):
        assert not policy.allows(bad), bad
    assert HostPolicy("0.0.0.0", []).allows("127.0.0.1") and not HostPolicy("0.0.0.0", []).allows("0.0.0.0")
    assert HostPolicy("0.0.0.0", [], any_host=True).allows("whatever.example")
    assert HostPolicy("127.0.0.1", ["*"]).allows("whatever.example")
    assert HostPolicy("127.0.0.1", []).widened(["door.example"]).allows("door.example:1")


def test_origin_policy():
    policy = OriginPolicy(["https://app.example", "http://dev.example:*"])
    host = "127.0.0.1:8000"
    for ok in ("http://127.0.0.1:8000", "http://localhost:8000", "http://[::1]:8000", "https://app.example",
               "http://dev.example:5173", "HTTP://LOCALHOST:8000"):
        assert policy.allows(ok, host), ok
    for bad in ("null", "http://evil.example", "http://127.0.0.1:8001", "http://localhost:3000", "file://",
                "https://app.example.evil", "http://127.0.0.1.evil.example:8000", "http://dev.example:x", ""):
        assert not policy.allows(bad, host), bad
    assert OriginPolicy([]).allows("http://agent.example:9", "agent.example:9")  # same origin
    assert OriginPolicy(["*"]).allows("http://evil.example", host)


# -- on a real server ---------------------------------------------------------------------------
def test_foreign_host_origin_and_simple_requests_never_reach_the_door():
    door = SeenDoor()
    with serve(door) as server:
        url = server.base_url + "/seen/x"
        refused = [
            (httpx.post(url, json={}, headers={"host": "evil.example"}), 421, "misdirected_request"),
            (httpx.get(url, headers={"host": "evil.example:8000"}), 421, "misdirected_request"),
            (httpx.get(server.base_url + "/healthz", headers={"host": "rebound.example"}), 421, "misdirected_request"),
            (httpx.post(url, json={}, headers={"origin": "https://evil.example"}), 403, "forbidden_origin"),
            (httpx.post(url, json={}, headers={"origin": "null"}), 403, "forbidden_origin"),
            (httpx.post(url, content=b"{}", headers={"content-type": "text/plain"}), 415, "unsupported_media_type"),
            (httpx.post(url, data={"a": "b"}), 415, "unsupported_media_type"),
            (httpx.post(url, files={"f": b"x"}), 415, "unsupported_media_type"),
            (httpx.post(url, content=b"{}"), 415, "unsupported_media_type"),
            (httpx.post(url, content=b'{"a":"\\ud800"}', headers=JSON), 400, "bad_json"),
            (httpx.post(url, content=b"[" * 100 + b"]" * 100, headers=JSON), 400, "bad_json"),
            (httpx.post(url, content=b"\xff", headers=JSON), 400, "bad_json"),
            (httpx.post(url, content=b'{"n":1e999}', headers=JSON), 400, "bad_json"),
        ]
        for response, status, code in refused:
            assert response.status_code == status, (response.request.method, response.request.headers, response.text)
            assert response.json()["error"] == code and set(response.json()) == {"error", "detail"}
        assert door.seen == []
        # what is allowed: same origin, loopback twins, +json types, a well-formed body
        ok = httpx.post(url, content=b'{"a":[1,2]}', headers={**JSON, "origin": server.base_url})
        port = server.base_url.rsplit(":", 1)[1]
        twin = httpx.post(url, json={}, headers={"origin": f"http://localhost:{port}", "host": f"127.0.0.1:{port}"})
        typed = httpx.post(url, content=b'{"b":1}', headers={"content-type": "application/vnd.api+json"})
        assert ok.status_code == twin.status_code == typed.status_code == 200
        assert door.seen[0]["json"] == {"a": [1, 2]} and door.seen[0]["body"] == '{"a":[1,2]}'
        assert door.seen[2]["json"] == {"b": 1}
        assert door.endpoint.port == int(port) and door.endpoint.base_url == server.base_url


def test_allowed_hosts_option_and_door_declared_hosts_and_types():
    door = SeenDoor(allowed_hosts=("door.example",), content_types=("text/csv",))
    with serve(door, allowed_hosts=["agent.example:*"]) as server:
        url = server.base_url + "/seen/"
        assert httpx.get(url, headers={"host": "agent.example:443"}).status_code == 200
        assert httpx.get(url, headers={"host": "door.example"}).status_code == 200
        assert httpx.get(server.base_url + "/healthz", headers={"host": "door.example"}).status_code == 421
        csv = httpx.post(url, content=b"a,b\n", headers={"content-type": "text/csv"})
        assert csv.status_code == 200 and door.seen[-1]["json"] == "absent" and door.seen[-1]["body"] == "a,b\n"
        refused = httpx.post(url, json={})
        assert refused.status_code == 415 and "text/csv" in refused.json()["detail"]


def test_wildcard_bind_behind_a_token_serves_any_host():
    door = SeenDoor()
    ctx = ServeContext(kernel=scripted_kernel(), endpoint=Endpoint(host="0.0.0.0", token_required=True))
    options = HttpOptions(host="127.0.0.1", port=0, token=TOKEN)
    with ThreadedServer([door], ctx, options) as server:
        # the endpoint says 0.0.0.0 (what a wildcard bind would publish); the socket is loopback for the test
        got = httpx.get(server.base_url + "/seen/", headers={"host": "agent.lan:8000", "authorization": f"Bearer {TOKEN}"})
        assert got.status_code == 200
        foreign = httpx.post(server.base_url + "/seen/", json={}, headers={"host": "agent.lan:8000", "origin": "http://evil.example",
                                                                          "authorization": f"Bearer {TOKEN}"})
        assert foreign.status_code == 403


def test_page_token_is_swapped_for_a_cookie_and_api_calls_refuse_it():
    door = SeenDoor()
    with serve(door, token=TOKEN) as server:
        base = server.base_url
        with httpx.Client(base_url=base, timeout=10) as browser:
            page = browser.get("/seen/page", params={"token": TOKEN, "x": "1"})
            assert page.status_code == 200
            assert door.seen[-1]["query"] == "x=1", "the door never sees the token"
            cookie = page.headers["set-cookie"]
            assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Path=/seen;" in cookie and TOKEN not in cookie
            assert page.headers["referrer-policy"] == "strict-origin"
            # the page's own API calls carry the cookie, not the token (and the browser's Sec-Fetch-Site)
            same_origin = {"sec-fetch-site": "same-origin"}
            assert browser.post("/seen/api", json={"q": 1}, headers={"origin": base}).status_code == 200
            assert browser.get("/seen/again", headers=same_origin).status_code == 200
        # POST with the token in the URL: refused even when the header is right, and nothing ran
        before = len(door.seen)
        for headers in ({}, {"authorization": f"Bearer {TOKEN}"}):
            r = httpx.post(base + "/seen/api", params={"token": TOKEN}, json={}, headers=headers)
            assert r.status_code == 401 and "in the URL" in r.json()["detail"]
        assert len(door.seen) == before
        # a forged or stale cookie is not a token
        name = "onedoor_token_" + base.rsplit(":", 1)[1]
        assert cookie.startswith(name + "=")
        stale = httpx.post(base + "/seen/api", json={}, headers={"cookie": f"{name}={'0' * 64}", "origin": base})
        assert stale.status_code == 401 and "not valid on this server" in stale.json()["detail"] and len(door.seen) == before


@pytest.mark.parametrize(
    "how",
    ["query-not-utf8", "query-bad-escape", "query-empty", "query-twice", "header-not-utf8", "header-no-scheme",
     "header-huge", "header-nul", "cookie-garbage", "basic-scheme"],
)
def test_malformed_tokens_are_401_never_500(how):
    door = SeenDoor()
    with serve(door, token=TOKEN) as server:
        url = server.base_url + "/seen/x"
        headers: dict = {}
        query = ""
        if how == "query-not-utf8":
            query = "?token=%ff%fe"
        elif how == "query-bad-escape":
            query = "?token=%zz%"
        elif how == "query-empty":
            query = "?token="
        elif how == "query-twice":
            query = f"?token={TOKEN}&token=nope"
        elif how == "header-not-utf8":
            headers = {"authorization": b"Bearer \xff\xfe\xfd"}
        elif how == "header-no-scheme":
            headers = {"authorization": TOKEN}
        elif how == "header-huge":
            headers = {"authorization": "Bearer " + "x" * 12_000}
        elif how == "header-nul":
            headers = {"authorization": "Bearer a\tb"}
        elif how == "cookie-garbage":
            headers = {"cookie": b"onedoor_token_1=\xff; ; =; a; onedoor_token_2"}
        elif how == "basic-scheme":
            headers = {"authorization": f"Basic {TOKEN}"}
        r = httpx.get(url + query, headers=headers, timeout=10)
        assert r.status_code == 401, r.text
        assert r.json()["error"] == "unauthorized" and door.seen == []
        assert httpx.get(url, headers={"authorization": f"Bearer {TOKEN}"}, timeout=10).status_code == 200


def test_a_header_over_the_servers_limit_is_a_4xx_not_a_crash():
    door = SeenDoor()
    with serve(door, token=TOKEN) as server:
        try:
            r = httpx.get(server.base_url + "/seen/x", headers={"authorization": "Bearer " + "y" * 200_000}, timeout=10)
            assert 400 <= r.status_code < 500
        except (httpx.RemoteProtocolError, httpx.ReadError):
            pass  # uvicorn's parser drops a connection whose head is over its limit: also not a 500
        assert httpx.get(server.base_url + "/seen/x", headers={"authorization": f"Bearer {TOKEN}"}).status_code == 200
        assert door.seen and all(s["path"] == "/seen/x" for s in door.seen)


def test_cors_headers_come_from_the_doors():
    door = SeenDoor(cors_headers=("x-door-header",), cors_expose=("x-door-id",))
    with serve(door, cors_origins=["https://app.example"]) as server:
        pre = httpx.options(server.base_url + "/seen/x", headers={
            "origin": "https://app.example", "access-control-request-method": "POST",
            "access-control-request-headers": "x-door-header, content-type"})
        assert pre.status_code == 200 and "x-door-header" in pre.headers["access-control-allow-headers"].lower()
        got = httpx.post(server.base_url + "/seen/x", json={}, headers={"origin": "https://app.example"})
        assert got.status_code == 200 and got.headers["access-control-expose-headers"].lower() == "x-door-id"
        other = httpx.post(server.base_url + "/seen/x", json={}, headers={"origin": "https://evil.example"})
        assert other.status_code == 403 and "access-control-allow-origin" not in other.headers


def test_a_doors_public_paths_need_no_token_for_get_only():
    door = SeenDoor(public_paths=("/seen/card.json",))
    with serve(door, token=TOKEN) as server, httpx.Client(base_url=server.base_url) as client:
        assert client.get("/seen/card.json").status_code == 200
        assert client.head("/seen/card.json").status_code == 200
        assert client.post("/seen/card.json", json={}).status_code == 401
        assert client.get("/seen/card.json/x").status_code == 401 and client.get("/seen/other").status_code == 401
        assert client.get("/seen/card.json", headers={"host": "evil.example"}).status_code == 421
