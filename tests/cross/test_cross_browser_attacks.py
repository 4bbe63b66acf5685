"""Browser-borne requests against every HTTP door: none may start a run.

What a web page the user visits can make the browser send to ``onedoor serve`` on
127.0.0.1, on the token-less quick start and with a token: CORS "simple requests"
(text/plain, form posts: no preflight), requests from a foreign origin, DNS rebinding
(a foreign ``Host``), tokens in URLs and malformed tokens. Each is refused with a JSON
error, and the kernel's lifecycle hooks (a Recorder) show that no run started; then a
well-behaved request to each door still works (which also proves the Recorder sees runs).
For MCP the attack goes as far as it can: initialize, then tools/call in the session it
got (it gets none).
"""

from __future__ import annotations

import json

import httpx
import pytest
from cross_helpers import ENDPOINTS, INIT, MCP_HEADERS, doors_server
from onedoor.testing.hostile import traceback_in
from onedoor_test_support import wait_for

TOKEN = "cross-browser-token-0123456789abcdef"
EVIL = "http://evil.example"


def attacks(port: str, token: str) -> list[tuple[str, dict, set[int]]]:
    """(name, request changes, statuses that refuse it) for a server on ``port``."""
    plain = {"content-type": "text/plain;charset=UTF-8"}
    form = {"content-type": "application/x-www-form-urlencoded"}
    multipart = {"content-type": "multipart/form-data; boundary=xyz"}
    json_type = {"content-type": "application/json"}
    cases = [
        ("simple-text-plain-cross-site", {"headers": {**plain, "origin": EVIL}}, {403}),
        ("simple-text-plain-no-origin", {"headers": plain}, {415}),
        ("simple-form-cross-site", {"headers": {**form, "origin": EVIL}, "form": True}, {403}),
        ("simple-form-no-origin", {"headers": form, "form": True}, {415}),
        # a browser always sends Origin on a cross-origin POST: a form upload that would
        # start a run (its field is the REST chat's `message`) is refused for its origin
        ("simple-multipart-cross-site", {"headers": {**multipart, "origin": EVIL}, "multipart": "message"}, {403}),
        # no Origin: not a browser; the REST chat calls take uploads, and refuse this one's
        # unknown field (422); the other doors take no uploads (415)
        ("simple-multipart-no-origin", {"headers": multipart, "multipart": "m"}, {415, 422}),
        ("no-content-type", {"headers": {}}, {415}),
        ("json-cross-site", {"headers": {**json_type, "origin": EVIL}}, {403}),
        ("json-null-origin", {"headers": {**json_type, "origin": "null"}}, {403}),
        ("json-sibling-port-origin", {"headers": {**json_type, "origin": "http://127.0.0.1:1"}}, {403}),
        ("rebinding-same-origin", {"headers": {**json_type, "host": f"evil.example:{port}", "origin": f"{EVIL}:{port}"}}, {421}),
        ("rebinding-no-origin", {"headers": {**json_type, "host": "evil.example"}}, {421}),
        ("rebinding-suffix", {"headers": {**json_type, "host": f"127.0.0.1.evil.example:{port}"}}, {421}),
        ("rebinding-plain", {"headers": {**plain, "host": f"evil.example:{port}"}}, {421}),
    ]
    if token:
        # with a token, requests without one are refused by auth when nothing earlier refused them
        cases = [(n, c, {401} if 415 in s else s) for n, c, s in cases]
        bearer = {"authorization": f"Bearer {token}"}
        cases += [
            ("token-in-query", {"headers": json_type, "query": f"token={token}"}, {401}),
            ("token-in-query-and-header", {"headers": {**json_type, **bearer}, "query": f"token={token}"}, {401}),
            ("token-in-query-cross-site", {"headers": {**plain, "origin": EVIL}, "query": f"token={token}"}, {403}),
            ("malformed-query-token", {"headers": json_type, "query": "token=%ff%fe%zz"}, {401}),
            ("malformed-header-token", {"headers": {**json_type, "authorization": b"Bearer \xff\xfe"}}, {401}),
            ("huge-header-token", {"headers": {**json_type, "authorization": "Bearer " + "x" * 12_000}}, {401}),
            ("wrong-cookie", {"headers": {**json_type, "cookie": f"onedoor_token_{port}={'0' * 64}"}}, {401}),
            ("cookie-of-another-port", {"headers": {**json_type, "cookie": "onedoor_token_1=abc"}}, {401}),
            ("rebinding-with-token", {"headers": {**json_type, **bearer, "host": f"evil.example:{port}"}}, {421}),
            ("cross-site-with-token", {"headers": {**json_type, **bearer, "origin": EVIL}}, {403}),
        ]
    return cases


def send(base: str, path: str, body: dict, change: dict, extra_headers: dict | None = None) -> httpx.Response:
    headers = {**(extra_headers or {}), **change["headers"]}
    raw = json.dumps(body).encode()
    if change.get("form"):
        raw = b"message=hello&payload=" + raw.replace(b" ", b"+")
    elif change.get("multipart"):
        field = change["multipart"].encode()
        raw = b'--xyz\r\nContent-Disposition: form-data; name="' + field + b'"\r\n\r\n' + raw + b"\r\n--xyz--\r\n"
    url = base + path + ("?" + change["query"] if change.get("query") else "")
    return httpx.post(url, content=raw, headers=headers, timeout=30)


@pytest.mark.parametrize("token", ["", TOKEN], ids=["no-token", "token"])
def test_browser_borne_requests_start_no_run_on_any_door(token):
    with doors_server(token=token) as server:
        port = server.base_url.rsplit(":", 1)[1]
        tried = 0
        for endpoint in [e for e in ENDPOINTS if e.door in server.doors]:
            for name, change, refused in attacks(port, token):
                r = send(server.base_url, endpoint.path, endpoint.valid(), change, endpoint.headers)
                where = f"{name} -> {endpoint.path}"
                assert r.status_code in refused, (where, r.status_code, r.text[:300])
                assert r.headers["content-type"].startswith("application/json"), where
                assert set(r.json()) == {"error", "detail"}, (where, r.text)
                assert "mcp-session-id" not in r.headers, where
                if endpoint.door == "mcp":  # the attacker's next step, in a session it did not get
                    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                            "params": {"name": "ask", "arguments": {"message": "run me"}}}
                    follow = send(server.base_url, endpoint.path, call, change, endpoint.headers)
                    assert follow.status_code in refused | {400}, (where, follow.status_code)
                tried += 1
                assert server.recorder.started == [], f"{where} started a run"
        assert tried >= len(server.doors) * 13
        wait_for(lambda: server.kernel.active_runs == 0, "every run to end")
        # a well-behaved client still gets through every door, and the Recorder sees its runs
        for door in server.doors:
            server.normal_request(door)
        if "rest" in server.doors or "agui" in server.doors:
            assert server.recorder.started, "the Recorder must observe runs, or 'no run' above proves nothing"
        assert traceback_in(server.logs.text) is None, server.logs.text[-3000:]


def test_mcp_session_cannot_be_driven_cross_site():
    """Even with a session id (e.g. leaked), a foreign page or Host cannot call the tool."""
    with doors_server() as server:
        if "mcp" not in server.doors:
            pytest.skip("the mcp door is not installed")
        base = server.base_url
        init = httpx.post(base + "/mcp/", json=INIT, headers=MCP_HEADERS, timeout=30)
        session = init.headers["mcp-session-id"]
        headers = {**MCP_HEADERS, "mcp-session-id": session}
        httpx.post(base + "/mcp/", json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers, timeout=30)
        call = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "ask", "arguments": {"message": "x"}}}
        port = base.rsplit(":", 1)[1]
        for extra, status in (({"origin": EVIL}, 403), ({"host": f"evil.example:{port}"}, 421),
                              ({"content-type": "text/plain"}, 415)):
            r = httpx.post(base + "/mcp/", content=json.dumps(call), headers={"content-type": "application/json", **headers, **extra},
                           timeout=30)
            assert r.status_code == status, (extra, r.text)
        assert server.recorder.started == []
        ok = httpx.post(base + "/mcp/", json=call, headers=headers, timeout=30)
        assert ok.status_code == 200 and "You said: x" in ok.text
        assert len(server.recorder.started) == 1
        assert traceback_in(server.logs.text) is None, server.logs.text[-3000:]
