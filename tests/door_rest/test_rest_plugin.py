"""The door as a plugin: a light entry point, options, prefix; the SSE encoder."""

from __future__ import annotations

import json
import subprocess
import sys

import httpx
from hypothesis import given
from hypothesis import strategies as st
from onedoor.events import (
    ReasoningDelta,
    RunFailed,
    RunFinished,
    RunStarted,
    TextDelta,
    ToolFinished,
    ToolStarted,
    event_from_dict,
    event_to_dict,
)
from onedoor.testing import scripted_kernel
from onedoor_door_rest import RestOptions
from onedoor_door_rest.app import describe_validation
from onedoor_door_rest.sse import encode_event
from onedoor_transport_http.testing import start_server
from rest_helpers import parse_sse, rest_server


def run_py(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)


def test_entry_point_module_imports_nothing_heavy():
    code = (
        "import sys, onedoor_door_rest\n"
        "heavy = [m for m in ('fastapi', 'starlette', 'uvicorn', 'pydantic') if m in sys.modules]\n"
        "print(heavy)"
    )
    result = run_py(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_onedoor_plugins_lists_rest_and_its_options():
    result = subprocess.run([sys.executable, "-m", "onedoor", "plugins", "--options"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    line = next(ln for ln in result.stdout.splitlines() if ln.strip().startswith("rest "))
    assert "onedoor-door-rest" in line and "BROKEN" not in line
    assert "-o keepalive=15.0" in result.stdout and "-o prefix='/rest'" in result.stdout
    assert "-o ask_fallback='deny'" in result.stdout and "-o question_ttl=0.0" in result.stdout


def test_bad_option_is_one_line_error():
    result = subprocess.run(
        [sys.executable, "-m", "onedoor", "serve", "--door", "rest", "-o", "prefix=nope", "--port", "0"],
        capture_output=True, text=True, timeout=60,
    )
    assert result.returncode == 2
    assert "prefix must start with '/'" in result.stderr and "Traceback" not in result.stderr


def test_bad_ask_fallback_is_one_line_error():
    result = subprocess.run(
        [sys.executable, "-m", "onedoor", "serve", "--door", "rest", "-o", "ask_fallback=maybe", "--port", "0"],
        capture_output=True, text=True, timeout=60,
    )
    assert result.returncode == 2
    assert "deny, allow, fail" in result.stderr and "Traceback" not in result.stderr


def test_rest_door_cannot_use_stdio():
    result = subprocess.run(
        [sys.executable, "-m", "onedoor", "serve", "--door", "rest", "--transport", "stdio"],
        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 2
    assert "cannot be served over transport 'stdio'" in result.stderr and "http" in result.stderr


def test_custom_prefix_and_no_docs():
    with start_server(["--door", "rest", "-o", "prefix=/api/v1/", "-o", "docs=false"]) as server:
        assert any(f"{server.base_url}/api/v1/" in line for line in server.lines)
        assert not any("/docs" in line for line in server.lines)
        r = httpx.post(server.base_url + "/api/v1/chat", json={"message": "hi"}, timeout=30)
        assert r.status_code == 200 and r.json()["reply"].startswith("You said: hi")
        assert httpx.get(server.base_url + "/api/v1/openapi.json", timeout=10).status_code == 404
        assert httpx.post(server.base_url + "/rest/chat", json={"message": "hi"}, timeout=10).status_code == 404


def test_options_validate():
    assert RestOptions(prefix="/x/").prefix == "/x"
    assert RestOptions().ask_fallback == "deny" and RestOptions(ask_fallback="fail").ask_fallback == "fail"
    for bad in (dict(prefix="x"), dict(prefix="/"), dict(keepalive=0), dict(ask_fallback="ask"), dict(question_ttl=-1),
                dict(question_ttl=float("nan"))):
        try:
            RestOptions(**bad)
        except ValueError:
            continue
        raise AssertionError(f"{bad} was accepted")


EVENTS = [
    RunStarted("r1"),
    TextDelta("a \"quoted\"\nline\r\n\u2028 \U0001f600"),
    ReasoningDelta("think"),
    ToolStarted("c1", "tool", {"x": [1, 2, None]}),
    ToolFinished("c1", "tool", "result text", True),
    RunFinished("r1", "done", "end_turn"),
    RunFailed("r1", "boom: it broke"),
]


def test_each_event_is_one_sse_event_with_its_json():
    for event in EVENTS:
        raw = encode_event(event).decode()
        assert raw.startswith("event: ") and raw.endswith("\n\n") and raw.count("\n\n") == 1
        events, _ = parse_sse(raw)
        (name, data), = events
        assert name == data["type"] == event_to_dict(event)["type"]
        assert event_from_dict(data) == event


@given(st.text())
def test_text_delta_fast_path_matches_the_general_encoding(text):
    general = json.dumps(event_to_dict(TextDelta(text)), ensure_ascii=False, separators=(",", ":"))
    try:
        expected = ("event: text_delta\ndata: " + general + "\n\n").encode()
    except UnicodeEncodeError:  # lone surrogates: escaped instead
        expected = None
    raw = encode_event(TextDelta(text))
    if expected is not None:
        assert raw == expected
    events, _ = parse_sse(raw.decode())
    assert events[0][1]["text"] == text


def test_unserialisable_tool_values_do_not_break_the_stream():
    raw = encode_event(ToolFinished("c", "t", {"when": {1, 2}}))
    data = json.loads(raw.decode().split("data: ", 1)[1])
    assert data["result"]["when"] == str({1, 2})


def test_validation_details_are_readable():
    status, code, detail = describe_validation(
        [{"type": "extra_forbidden", "loc": ("body", "history", 2, "x"), "msg": "Extra inputs are not permitted"}]
    )
    assert (status, code, detail) == (422, "invalid_request", "unknown field 'history[2].x'")
    many = [{"type": "missing", "loc": ("body", f"f{i}"), "msg": "Field required"} for i in range(8)]
    assert describe_validation(many)[2].endswith("and 3 more")


def test_sse_headers_and_framing_on_a_threaded_server():
    with rest_server(scripted_kernel()) as server:
        with httpx.stream("POST", server.base_url + "/rest/chat/stream", json={"message": "hi"}, timeout=30) as r:
            raw = r.read()
    assert b"\r" not in raw and raw.endswith(b"\n\n")
    assert r.headers["cache-control"] == "no-cache" and r.headers["x-accel-buffering"] == "no"


def test_an_unexpected_error_is_a_json_500_without_traceback():
    kernel = scripted_kernel()

    def broken_run(*args, **kwargs):
        raise RuntimeError("secret internals /etc/passwd")

    kernel.run = broken_run  # the door's own bug, not a refusal: the client still gets JSON
    with rest_server(kernel) as server:
        for path in ("/rest/chat", "/rest/chat/stream"):
            r = httpx.post(server.base_url + path, json={"message": "hi"}, timeout=30)
            assert r.status_code == 500
            assert r.json() == {"error": "internal", "detail": "internal error; see the server log"}
            assert "secret" not in r.text and "Traceback" not in r.text
        for method in ("HEAD", "PUT", "DELETE"):
            assert httpx.request(method, server.base_url + "/rest/chat", timeout=10).status_code == 405
