"""The page cookie (what ``?token=`` is swapped for), on real uvicorn: it expires, changes with
each server start, belongs to one port's server, and alone it is accepted only from the
server's own pages (same-origin ``Origin`` / ``Sec-Fetch-Site``; a reload gets the page
itself); a replay from a plain client is refused. A bearer token works as before."""

from __future__ import annotations

import json
import re

import httpx
import pytest
from onedoor.composition import AsgiMount, ServeContext
from onedoor.testing import scripted_kernel
from onedoor_test_support import free_port, wait_for
from onedoor_transport_http import HttpOptions
from onedoor_transport_http.page_cookie import EXPIRED, INVALID, NO_PROOF, PageCookies, page_proof
from onedoor_transport_http.testing import ThreadedServer, start_server

TOKEN = "page-cookie-test-token-0123456789"
BOB = "page-cookie-bob-token-0123456789"
PAGE = "/who/page"


class WhoDoor:
    """Answers every request with the principal and path that reached it."""

    name = "who"
    shapes = frozenset({"asgi"})

    def asgi_mount(self, ctx):
        async def app(scope, receive, send):
            if scope["type"] != "http":
                return
            body = json.dumps({"principal": ctx.principal_of(scope), "path": scope["path"]}).encode()
            headers = [(b"content-type", b"application/json")]
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            await send({"type": "http.response.body", "body": body})

        return AsgiMount(app=app, prefix="/who", links=[("page", PAGE)])


def serve(port: int = 0, **options) -> ThreadedServer:
    ctx = ServeContext(kernel=scripted_kernel(), door_names=["who"], transport_name="http")
    options.setdefault("token", TOKEN)
    return ThreadedServer([WhoDoor()], ctx, HttpOptions(port=port, **options))


def open_page(base: str, token: str = TOKEN) -> tuple[str, str, str]:
    """Open the page with ?token= as a browser does: (cookie name, value, the Set-Cookie header)."""
    navigation = {"sec-fetch-site": "none", "sec-fetch-mode": "navigate"}
    r = httpx.get(base + PAGE, params={"token": token}, headers=navigation)
    assert r.status_code == 200, r.text
    header = r.headers["set-cookie"]
    name, value = header.split(";", 1)[0].split("=", 1)
    return name, value, header


def with_cookie(base: str, name: str, value: str, path: str = "/who/threads", method: str = "GET",
                **headers: str) -> httpx.Response:
    headers = {k.replace("_", "-"): v for k, v in headers.items()}
    return httpx.request(method, base + path, json={} if method == "POST" else None, timeout=10,
                         headers={"cookie": f"{name}={value}", **headers})


def refused(r: httpx.Response, detail: str) -> None:
    assert r.status_code == 401, (r.status_code, r.text)
    assert r.json() == {"error": "unauthorized", "detail": detail}
    assert r.headers["www-authenticate"] == 'Bearer realm="onedoor"'


# -- the rules, as tables ---------------------------------------------------------------------
HOST = "127.0.0.1:8000"
OWN = "http://127.0.0.1:8000"


@pytest.mark.parametrize("method, origin, site, mode, referer, proof", [
    ("GET", None, "same-origin", "cors", None, "page"),
    ("POST", OWN, "same-origin", "cors", None, "page"),
    ("POST", OWN, None, None, None, "page"),  # a browser that sends no fetch metadata
    ("GET", None, None, None, OWN + "/", "page"),  # ... and its same-origin GET (Referrer-Policy: strict-origin)
    ("GET", None, "none", "navigate", None, "navigation"),  # typed, reloaded, bookmarked
    ("HEAD", None, "none", "navigate", None, "navigation"),
    ("GET", None, None, None, None, None),  # a plain replay
    ("GET", None, "cross-site", "cors", None, None),
    ("GET", None, "cross-site", "no-cors", OWN + "/", None),
    ("GET", None, "same-site", "no-cors", None, None),  # a page on another port of the host
    ("POST", "http://127.0.0.1:9999", "same-site", "cors", None, None),
    ("POST", "http://evil.example", None, None, None, None),
    ("POST", "null", None, None, None, None),
    ("POST", OWN, "cross-site", "cors", None, None),  # headers that contradict each other
    ("GET", OWN, "none", "navigate", None, None),
    ("POST", None, "none", "navigate", None, None),  # a navigation that posts is not a reload
    ("GET", None, "none", "cors", None, None),
    ("GET", None, None, None, "http://127.0.0.1:9999/", None),
    ("GET", None, None, None, "http://127.0.0.1:8000.evil.example/", None),
    ("GET", None, None, None, "not a url", None),
])  # fmt: skip
def test_page_proof(method, origin, site, mode, referer, proof):
    assert page_proof(method, HOST, origin, site, mode, referer) == proof


def test_cookie_values_are_signed_bound_and_expire():
    now = [1000.0]
    cookies = PageCookies([(b"token-a", "alice"), (b"token-b", "bob")], max_age=60, clock=lambda: now[0])
    alice, bob = cookies.issue(0, "/agui/"), cookies.issue(1, "/rest/docs")
    assert cookies.check(alice.encode()) == ("alice", "/agui/") and cookies.check(bob.encode()) == ("bob", "/rest/docs")
    assert "token" not in alice and alice != bob
    issued, page, mac = alice.split(".")
    other_page = cookies.issue(0, "/rest/docs").split(".")[1]
    for forged in (f"{int(issued) + 1}.{page}.{mac}", f"{issued}.{other_page}.{mac}", f"{issued}.{page}.{mac[:-2]}AA",
                   f"{issued}.{page}", "", "..", "x.y.z", "\xff", f"-{issued}.{page}.{mac}",
                   f"{issued}.{page}.{mac}.x"):
        assert cookies.check(forged.encode("utf-8")) == INVALID, forged
    assert PageCookies([(b"token-a", "alice")]).check(alice.encode()) == INVALID  # another server start
    now[0] += 60
    assert cookies.check(alice.encode()) == ("alice", "/agui/")
    now[0] += 0.002
    assert cookies.check(alice.encode()) == EXPIRED
    with pytest.raises(ValueError):
        PageCookies([], max_age=0)
    with pytest.raises(ValueError, match="cookie_max_age"):
        HttpOptions(cookie_max_age=0)


# -- on a real server -----------------------------------------------------------------------------
def test_the_cookie_is_scoped_expiring_and_never_the_token():
    with serve() as server:
        base = server.base_url
        port = base.rsplit(":", 1)[1]
        name, value, header = open_page(base)
        assert name == f"onedoor_token_{port}"
        attributes = {a.strip().split("=")[0].lower(): a.strip() for a in header.split(";")[1:]}
        assert set(attributes) == {"path", "max-age", "httponly", "samesite"}
        assert attributes["path"] == "Path=/who" and attributes["max-age"] == "Max-Age=14400"
        assert attributes["samesite"] == "SameSite=Strict"
        assert TOKEN not in value and TOKEN.encode().hex() not in value
        # the server root only redirects (carrying the query): it sets no cookie
        root = httpx.get(base + "/", params={"token": TOKEN}, follow_redirects=False)
        assert root.status_code == 307 and "set-cookie" not in root.headers
        assert root.headers["location"] == f"{PAGE}?token={TOKEN}"


@pytest.mark.parametrize("name, headers, path, method, detail", [
    ("no-origin-no-fetch-metadata", {}, "/who/threads", "GET", NO_PROOF),
    ("no-origin-no-fetch-metadata-post", {}, "/who/threads", "POST", NO_PROOF),
    ("no-headers-on-the-page-itself", {}, PAGE, "GET", NO_PROOF),
    ("sec-fetch-site-cross-site", {"sec_fetch_site": "cross-site", "sec_fetch_mode": "no-cors"}, "/who/threads", "GET",
     NO_PROOF),
    ("sec-fetch-site-same-site", {"sec_fetch_site": "same-site", "sec_fetch_mode": "no-cors"}, "/who/threads", "GET",
     NO_PROOF),
    ("listed-cors-origin-on-another-port", {"origin": "http://127.0.0.1:1", "sec_fetch_site": "same-site"},
     "/who/threads", "POST", NO_PROOF),
    ("referer-of-another-port", {"referer": "http://127.0.0.1:1/"}, "/who/threads", "GET", NO_PROOF),
    ("navigation-to-another-path", {"sec_fetch_site": "none", "sec_fetch_mode": "navigate"}, "/who/threads", "GET",
     "opened directly, the page cookie gives only the page it was given to (/who/page); open it with ?token=<token>"),
])  # fmt: skip
def test_a_cookie_alone_must_come_from_the_page(name, headers, path, method, detail):
    with serve(cors_origins=["http://127.0.0.1:1"]) as server:
        base = server.base_url
        cookie = open_page(base)[:2]
        refused(with_cookie(base, *cookie, path=path, method=method, **headers), detail)
        # what the page's own requests send is accepted, as the token's principal
        for ok in ({"sec_fetch_site": "same-origin"}, {"origin": base, "sec_fetch_site": "same-origin"},
                   {"origin": base}, {"referer": base + "/"}):
            got = with_cookie(base, *cookie, path=path, method=method, **ok)
            assert got.status_code == 200 and got.json() == {"principal": "local", "path": path}, (ok, got.text)
        reload = with_cookie(base, *cookie, path=PAGE, sec_fetch_site="none", sec_fetch_mode="navigate")
        assert reload.status_code == 200 and reload.json()["path"] == PAGE


def test_a_foreign_origin_is_refused_before_the_cookie_is_read():
    with serve() as server:
        cookie = open_page(server.base_url)[:2]
        r = with_cookie(server.base_url, *cookie, method="POST", origin="http://evil.example",
                        sec_fetch_site="cross-site")
        assert r.status_code == 403 and r.json()["error"] == "forbidden_origin"


def test_an_expired_cookie_is_refused():
    with serve(cookie_max_age=2) as server:
        base = server.base_url
        name, value, header = open_page(base)
        assert "Max-Age=2;" in header

        def status() -> int:
            return with_cookie(base, name, value, sec_fetch_site="same-origin").status_code

        assert status() == 200
        wait_for(lambda: status() == 401, "the cookie to expire", timeout=30, interval=0.2)
        refused(with_cookie(base, name, value, sec_fetch_site="same-origin"), EXPIRED)
        fresh = open_page(base)[:2]
        assert with_cookie(base, *fresh, sec_fetch_site="same-origin").status_code == 200


def test_an_old_cookie_is_refused_after_a_restart_on_the_same_port():
    port = free_port()
    with serve(port=port) as server:
        old = open_page(server.base_url)[:2]
        assert with_cookie(server.base_url, *old, sec_fetch_site="same-origin").status_code == 200
    with serve(port=port) as server:
        assert server.base_url.endswith(f":{port}")
        refused(with_cookie(server.base_url, *old, sec_fetch_site="same-origin"), INVALID)
        new = open_page(server.base_url)[:2]
        assert new[0] == old[0] and new[1] != old[1]
        assert with_cookie(server.base_url, *new, sec_fetch_site="same-origin").status_code == 200


def test_a_cookie_of_another_ports_server_is_refused(tmp_path):
    (tmp_path / "alice").write_text(f"alice {TOKEN}\n")
    (tmp_path / "bob").write_text(f"bob {BOB}\n")
    alice_server = serve(token="", tokens_file=str(tmp_path / "alice"))
    with alice_server as alice, serve(token="", tokens_file=str(tmp_path / "bob")) as bob:
        a, b = alice.base_url, bob.base_url
        mine, theirs = open_page(a)[:2], open_page(b, BOB)[:2]
        assert mine[0] != theirs[0], "each server's cookie has its own name: neither overwrites the other"
        # the other server's cookie under its own name is not this server's cookie; renamed, it is not valid here
        refused(with_cookie(a, *theirs, sec_fetch_site="same-origin"), "missing bearer token")
        refused(with_cookie(a, mine[0], theirs[1], sec_fetch_site="same-origin"), INVALID)
        refused(with_cookie(b, theirs[0], mine[1], sec_fetch_site="same-origin"), INVALID)
        # a browser sends both to both (cookies ignore ports): each server reads its own
        both = f"{theirs[0]}={theirs[1]}; {mine[0]}={mine[1]}"
        for base, principal in ((a, "alice"), (b, "bob")):
            r = httpx.get(base + "/who/threads", headers={"cookie": both, "sec-fetch-site": "same-origin"}, timeout=10)
            assert r.status_code == 200 and r.json()["principal"] == principal


def test_the_bearer_token_works_as_before():
    with serve() as server:
        base = server.base_url
        bearer = {"authorization": f"Bearer {TOKEN}"}
        for method in ("GET", "POST"):
            r = httpx.request(method, base + "/who/threads", headers=bearer, json={} if method == "POST" else None)
            assert r.status_code == 200 and r.json()["principal"] == "local" and "set-cookie" not in r.headers
        name = open_page(base)[0]
        # the header decides, whatever cookie comes along, and needs no Origin or Sec-Fetch-Site
        garbage = {"cookie": f"{name}=garbage", "sec-fetch-site": "cross-site"}
        r = httpx.get(base + "/who/threads", headers={**bearer, **garbage})
        assert r.status_code == 200
        wrong = httpx.get(base + "/who/threads", headers={"authorization": f"Bearer {TOKEN}x"})
        refused(wrong, "wrong bearer token")


def test_a_real_server_restart_refuses_the_docs_pages_old_cookie():
    pytest.importorskip("onedoor_door_rest", reason="needs the rest door's docs page")
    port = str(free_port())
    args = ["--door", "rest", "--port", port, "--token", TOKEN]
    same_origin = {"sec-fetch-site": "same-origin", "sec-fetch-mode": "cors"}
    with start_server(args) as server:
        page = httpx.get(server.base_url + "/rest/docs", params={"token": TOKEN}, timeout=30)
        assert page.status_code == 200 and "swagger" in page.text.lower()
        assert re.search(r"Path=/rest;", page.headers["set-cookie"])
        cookie = page.headers["set-cookie"].split(";", 1)[0]
        spec = httpx.get(server.base_url + "/rest/openapi.json", headers={"cookie": cookie, **same_origin}, timeout=30)
        assert spec.status_code == 200 and spec.json()["openapi"]
    with start_server(args) as server:
        again = httpx.get(server.base_url + "/rest/openapi.json", headers={"cookie": cookie, **same_origin}, timeout=30)
        refused(again, INVALID)


# -- several servers behind one balancer: page_cookie_secret ----------------------------------
SECRET = "page-cookie-shared-secret-0123456789abcdef"
SEEN = "127.0.0.1:9443"  # the port the browser sees: the balancer's, not either server's


def open_page_as_seen(base: str) -> tuple[str, str]:
    navigation = {"sec-fetch-site": "none", "sec-fetch-mode": "navigate", "host": SEEN}
    r = httpx.get(base + PAGE, params={"token": TOKEN}, headers=navigation)
    assert r.status_code == 200, r.text
    return tuple(r.headers["set-cookie"].split(";", 1)[0].split("=", 1))  # type: ignore[return-value]


def from_the_page(base: str, name: str, value: str) -> httpx.Response:
    return with_cookie(base, name, value, method="POST", host=SEEN, origin=f"http://{SEEN}", sec_fetch_site="same-origin")


def test_servers_sharing_a_cookie_secret_take_each_others_page_cookies():
    """One server gives the page its cookie, the next request goes to another (round robin):
    with the same page_cookie_secret it is good there, named after the port the browser sees,
    and still only from the page; without the secret, or with another, it is refused."""
    with serve(page_cookie_secret=SECRET) as first, serve(page_cookie_secret=SECRET) as second, \
            serve() as unshared, serve(page_cookie_secret=SECRET[::-1]) as other:
        name, value = open_page_as_seen(first.base_url)
        assert name == "onedoor_token_9443"
        for server in (first, second):
            r = from_the_page(server.base_url, name, value)
            assert r.status_code == 200 and r.json()["principal"] == "local", r.text
            refused(with_cookie(server.base_url, name, value, method="POST", host=SEEN), NO_PROOF)  # a replay
        refused(from_the_page(unshared.base_url, name, value), "missing bearer token")  # named after its own port
        refused(from_the_page(other.base_url, name, value), INVALID)


def test_a_shared_cookie_outlives_a_restart_but_not_its_max_age(monkeypatch):
    cookies = PageCookies([(TOKEN.encode(), "local")], max_age=60, secret=SECRET.encode())
    value = cookies.issue(0, PAGE).encode()
    assert PageCookies([(TOKEN.encode(), "local")], max_age=60, secret=SECRET.encode()).check(value) == ("local", PAGE)
    import time

    later = time.time() + 61
    assert PageCookies([(TOKEN.encode(), "local")], max_age=60, secret=SECRET.encode(),
                       clock=lambda: later).check(value) == EXPIRED
    assert PageCookies([(BOB.encode(), "bob")], max_age=60, secret=SECRET.encode()).check(value) == INVALID


def test_a_short_cookie_secret_is_refused():
    with pytest.raises(ValueError, match="page_cookie_secret"):
        HttpOptions(token=TOKEN, page_cookie_secret="short")
