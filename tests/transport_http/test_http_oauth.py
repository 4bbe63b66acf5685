"""OAuth resource-server mode: `onedoor serve --door mcp --door rest` (a real subprocess) against a
real authorization server the test starts (the MCP SDK's own routes, joserfc-signed JWTs, a JWKS),
with a static token beside it. Metadata, challenges, every kind of bad token on both doors,
good ones, and the token's subject as the principal that owns threads."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import httpx
import pytest

pytest.importorskip("joserfc", reason="the OAuth tests run in nox session tests(oauth)")
pytest.importorskip("mcp.server.auth.routes", reason="the OAuth tests run in nox session tests(oauth)")

from onedoor.errors import OptionsError
from onedoor_oauth_support import AuthServer, challenge
from onedoor_transport_http import HttpOptions
from onedoor_transport_http.principals import read_tokens_file
from onedoor_transport_http.testing import start_server

pytestmark = pytest.mark.timeout(120)

STATIC = "the-static-token-0123456789"
WELL_KNOWN = "/.well-known/oauth-protected-resource"
MCP_INIT = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}
MCP_HEADERS = {"accept": "application/json, text/event-stream"}
PREFIX = {"rest": "/rest", "mcp": "/mcp"}


@pytest.fixture(scope="module")
def auth() -> Any:
    with AuthServer() as server:
        yield server


@pytest.fixture(scope="module")
def served(auth: AuthServer, tmp_path_factory: pytest.TempPathFactory) -> Any:
    db = tmp_path_factory.mktemp("oauth") / "threads.sqlite3"
    args = ["--door", "mcp", "--door", "rest", "-o", f"oauth_issuer={auth.issuer}", "-o", "oauth_scopes=onedoor",
            "-o", f"token={STATIC}", "-o", "scripted.delay=0", "-o", f"sqlite.path={db}"]
    with start_server(args) as server:
        yield server


def call(base: str, door: str, token: str | None = None) -> httpx.Response:
    """The door's plainest call: REST ``POST /rest/chat``, MCP ``initialize``."""
    headers = {"authorization": f"Bearer {token}"} if token else {}
    if door == "rest":
        return httpx.post(base + "/rest/chat", json={"message": "hello"}, headers=headers, timeout=30)
    return httpx.post(base + "/mcp", json=MCP_INIT, headers={**MCP_HEADERS, **headers}, timeout=30)


def accepted(response: httpx.Response, door: str) -> bool:
    if door == "rest":
        return response.status_code == 200 and response.json()["reply"].startswith("You said: hello")
    return response.status_code == 200 and "mcp-session-id" in response.headers


@pytest.mark.parametrize("prefix", ["", "/mcp", "/rest"])
def test_metadata_documents_are_open_and_name_each_resource(served: Any, auth: AuthServer, prefix: str) -> None:
    response = httpx.get(served.base_url + WELL_KNOWN + prefix)
    assert response.status_code == 200, response.text
    assert response.json() == {
        "resource": served.base_url + prefix, "authorization_servers": [auth.issuer],
        "scopes_supported": ["onedoor"], "bearer_methods_supported": ["header"],
        "resource_name": "onedoor" + (f" {prefix}" if prefix else ""),
    }
    # the same server reached as localhost names itself so (a client checks the resource is its URL)
    port = served.base_url.rsplit(":", 1)[1]
    named = httpx.get(f"http://localhost:{port}{WELL_KNOWN}{prefix}").json()
    assert named["resource"] == f"http://localhost:{port}{prefix}"


def test_a_forged_host_gets_no_metadata(served: Any) -> None:
    refused = httpx.get(served.base_url + WELL_KNOWN + "/mcp", headers={"host": "evil.example"})
    assert refused.status_code == 421


@pytest.mark.parametrize("door", ["rest", "mcp"])
def test_no_token_is_challenged_with_the_doors_metadata(served: Any, door: str) -> None:
    refused = call(served.base_url, door)
    assert refused.status_code == 401 and refused.json()["error"] == "unauthorized"
    params = challenge(refused)
    assert params["error"] == "invalid_token" and params["scope"] == "onedoor"
    assert params["resource_metadata"] == served.base_url + WELL_KNOWN + PREFIX[door]
    # the document it names is the door's
    assert httpx.get(params["resource_metadata"]).json()["resource"] == served.base_url + PREFIX[door]


def _stranger() -> Any:
    from joserfc.jwk import RSAKey

    return RSAKey.generate_key(2048, parameters={"kid": "k1"})


def bad_tokens(auth: AuthServer, base: str, door: str) -> dict[str, tuple[str, int, str, str]]:
    """{case: (token, status, challenge error, words of the description)}."""
    aud = base + PREFIX[door]
    other_door = base + ("/rest" if door == "mcp" else "/mcp")
    stranger = _stranger()
    return {
        "wrong audience": (auth.token(aud="https://elsewhere.example/mcp"), 401, "invalid_token", "audience"),
        "another door's audience": (auth.token(aud=other_door), 401, "invalid_token", f"must be {aud}"),
        "no audience": (auth.token(aud=None), 401, "invalid_token", "no aud claim"),
        "expired": (auth.token(aud=aud, lifetime=-120), 401, "invalid_token", "expired"),
        "not valid yet": (auth.token(aud=aud, nbf=2**31), 401, "invalid_token", "not valid yet"),
        "missing scope": (auth.token(aud=aud, scope="other"), 403, "insufficient_scope", "lacks the scope onedoor"),
        "no scope at all": (auth.token(aud=aud, scope=None), 403, "insufficient_scope", "lacks the scope onedoor"),
        "bad signature": (auth.token(aud=aud, key=stranger), 401, "invalid_token", "signature does not verify"),
        "unknown kid": (auth.token(aud=aud, kid="k9", key=stranger), 401, "invalid_token", "kid 'k9'"),
        "another issuer": (auth.token(aud=aud, iss="https://other-issuer.example"), 401, "invalid_token", "issuer"),
        "no subject": (auth.token(aud=aud, sub=None), 401, "invalid_token", "sub"),
        "alg none": (auth.unsigned_token(aud=aud), 401, "invalid_token", "'none' is not accepted"),
        "HS256": (auth.hs256_token(aud=aud), 401, "invalid_token", "'HS256' is not accepted"),
        "not a JWT": ("not-a-token-of-anyone-0123", 401, "invalid_token", "neither"),
        "wrong static token": (STATIC + "x", 401, "invalid_token", "neither"),
    }


@pytest.mark.parametrize("door", ["rest", "mcp"])
def test_every_bad_token_is_refused_with_its_challenge(served: Any, auth: AuthServer, door: str) -> None:
    for case, (token, status, error, words) in bad_tokens(auth, served.base_url, door).items():
        refused = call(served.base_url, door, token)
        assert refused.status_code == status, (case, refused.text)
        assert refused.json()["error"] == ("insufficient_scope" if status == 403 else "unauthorized"), case
        params = challenge(refused)
        assert params["error"] == error and words in params["error_description"], (case, params)
        assert params["resource_metadata"] == served.base_url + WELL_KNOWN + PREFIX[door], case
        assert words in refused.json()["detail"], case
    assert served.proc.poll() is None  # still serving
    assert accepted(call(served.base_url, door, auth.token(aud=served.base_url + PREFIX[door])), door)


@pytest.mark.parametrize("door", ["rest", "mcp"])
def test_good_tokens_and_the_static_token_are_let_in(served: Any, auth: AuthServer, door: str) -> None:
    base = served.base_url
    port = base.rsplit(":", 1)[1]
    good = {
        "RS256 for the door": auth.token(aud=base + PREFIX[door]),
        "ES256 for the door": auth.token(aud=base + PREFIX[door], alg="ES256", kid="e1"),
        "for the server": auth.token(aud=base),
        "for the door, with a final slash": auth.token(aud=base + PREFIX[door] + "/"),
        "for the door under localhost": auth.token(aud=f"http://localhost:{port}{PREFIX[door]}"),
        "one audience of several": auth.token(aud=["https://elsewhere.example", base + PREFIX[door]]),
        "more scopes than asked": auth.token(aud=base, scope="other onedoor"),
        "the static token": STATIC,
    }
    for case, token in good.items():
        response = call(base, door, token)
        assert accepted(response, door), (case, response.status_code, response.text)


def test_a_token_that_passed_at_one_door_is_still_refused_at_another(served: Any, auth: AuthServer) -> None:
    token = auth.token(aud=served.base_url + "/mcp")
    assert accepted(call(served.base_url, "mcp", token), "mcp")
    assert accepted(call(served.base_url, "mcp", token), "mcp")  # remembered
    refused = call(served.base_url, "rest", token)
    assert refused.status_code == 401 and "must be " + served.base_url + "/rest" in challenge(refused)["error_description"]


def _threads(base: str, token: str) -> list[str]:
    response = httpx.get(base + "/rest/threads", headers={"authorization": f"Bearer {token}"})
    assert response.status_code == 200, response.text
    return [t["id"] for t in response.json()["threads"]]


def test_threads_belong_to_the_tokens_subject(served: Any, auth: AuthServer) -> None:
    base = served.base_url
    alice, bob = auth.token(sub="alice", aud=base), auth.token(sub="bob", aud=base + "/rest")
    made = httpx.post(base + "/rest/threads", json={"title": "alice's"}, headers={"authorization": f"Bearer {alice}"})
    assert made.status_code == 201, made.text
    thread = made.json()["id"]
    again = auth.token(sub="alice", aud=base + "/rest", alg="ES256", kid="e1")  # another token, the same person
    assert thread in _threads(base, again)
    assert thread not in _threads(base, bob) and thread not in _threads(base, STATIC)
    for token in (bob, STATIC):
        seen = httpx.get(f"{base}/rest/threads/{thread}", headers={"authorization": f"Bearer {token}"})
        assert seen.status_code == 404 and seen.json()["error"] == "unknown_thread"


def test_a_tokens_file_principal_cannot_be_an_oauth_subject(tmp_path: Any) -> None:
    path = tmp_path / "tokens"
    path.write_text("oauth/alice some-token-0123456789abcdef\n")
    with pytest.raises(OptionsError, match="a principal is"):
        read_tokens_file(path)


def test_health_details_for_a_caller_with_an_oauth_token(served: Any, auth: AuthServer) -> None:
    assert httpx.get(served.base_url + "/healthz").json() == {"status": "ok"}
    bad = httpx.get(served.base_url + "/healthz", headers={"authorization": f"Bearer {auth.token(aud='https://x.example')}"})
    assert bad.json() == {"status": "ok"}
    good = httpx.get(served.base_url + "/healthz", headers={"authorization": f"Bearer {auth.token(aud=served.base_url)}"})
    assert good.status_code == 200 and sorted(good.json()["doors"]) == ["mcp", "rest"]


@pytest.mark.parametrize("options, problem", [
    ({"oauth_scopes": ["x"]}, "oauth_scopes needs oauth_issuer"),
    ({"oauth_issuer": "http://as.example.com"}, "must use https"),
    ({"oauth_issuer": "https://as.example.com", "oauth_jwks_url": "ftp://as.example.com/jwks"}, "http(s) URL"),
    ({"oauth_issuer": "https://as.example.com", "oauth_introspection_url": "https://as.example.com/i"}, "oauth_client_id"),
    ({"oauth_issuer": "https://as.example.com", "oauth_algorithms": ["HS256"]}, "oauth_algorithms"),
    ({"oauth_issuer": "https://as.example.com", "oauth_scopes": ["a b"]}, "without spaces"),
    ({"public_url": "https://agent.example.com/under/a/path"}, "no path"),
])
def test_inconsistent_oauth_options_are_one_clear_error(options: dict[str, Any], problem: str) -> None:
    with pytest.raises(ValueError, match=problem.replace("(", r"\(").replace(")", r"\)")):
        HttpOptions(**options)


def test_serve_on_every_address_with_oauth_needs_public_url() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "onedoor", "serve", "--door", "rest", "--host", "0.0.0.0", "--port", "0",
         "-o", "oauth_issuer=https://as.example.com"], capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and "public_url" in done.stderr and "Traceback" not in done.stderr


def test_public_url_names_the_resources_and_its_host_is_served(auth: AuthServer) -> None:
    args = ["--door", "rest", "-o", f"oauth_issuer={auth.issuer}", "-o", "public_url=https://agent.example.com"]
    with start_server(args) as server:
        via_proxy = {"host": "agent.example.com"}
        document = httpx.get(server.base_url + WELL_KNOWN + "/rest", headers=via_proxy).json()
        assert document["resource"] == "https://agent.example.com/rest"
        refused = httpx.post(server.base_url + "/rest/chat", json={"message": "x"}, headers=via_proxy)
        assert challenge(refused)["resource_metadata"] == "https://agent.example.com" + WELL_KNOWN + "/rest"
        # the bound address is not the resource any more: only the public URL is an audience
        local = auth.token(aud=server.base_url + "/rest")
        assert httpx.post(server.base_url + "/rest/chat", json={"message": "x"},
                          headers={"authorization": f"Bearer {local}"}).status_code == 401
        public = auth.token(aud="https://agent.example.com/rest")
        ok = httpx.post(server.base_url + "/rest/chat", json={"message": "x"},
                        headers={"authorization": f"Bearer {public}", **via_proxy})
        assert ok.status_code == 200, ok.text


def test_start_up_without_oauth_imports_neither_pyjwt_nor_httpx() -> None:
    code = (
        "import sys\n"
        "from onedoor.composition import ServeContext\n"
        "from onedoor.testing import scripted_kernel\n"
        "from onedoor_transport_http import HttpOptions, HttpTransport\n"
        "from onedoor_transport_http.app import build_app\n"
        "import onedoor_door_rest\n"
        "HttpTransport().prepare(HttpOptions())\n"
        "ctx = ServeContext(kernel=scripted_kernel(), door_names=['rest'], transport_name='http')\n"
        "build_app([onedoor_door_rest.RestDoor()], ctx, HttpOptions())\n"
        "print(sorted(m for m in ('jwt', 'httpx', 'cryptography') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
