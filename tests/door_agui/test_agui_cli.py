"""The door as a user meets it: `onedoor serve` prints the chat page, options, light import."""

from __future__ import annotations

import json
import signal
import subprocess
import sys

import httpx
from agui_helpers import TOKEN, parse_sse, run_input
from onedoor_transport_http.testing import start_server


def test_entry_point_module_imports_nothing_heavy():
    code = (
        "import sys, onedoor_door_agui;"
        "print([m for m in ('ag_ui', 'pydantic', 'starlette', 'uvicorn', 'onedoor_door_agui.app') if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == "[]", out.stdout + out.stderr


def test_plugins_lists_the_door():
    out = subprocess.run([sys.executable, "-m", "onedoor", "plugins"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "agui" in out.stdout and "onedoor-door-agui" in out.stdout


def test_serve_with_default_doors_prints_the_chat_page():
    with start_server([]) as server:
        lines = "\n".join(server.lines)
        assert f"chat page {server.base_url}/agui/" in lines, lines
        page = httpx.get(server.base_url + "/", follow_redirects=True)
        assert page.status_code == 200 and page.url.path.startswith("/")
        assert '<textarea id="input"' in httpx.get(server.base_url + "/agui/").text


def test_serve_options_and_token_from_the_command_line():
    args = ["--door", "agui", "-o", "agui.prefix=/chat", "-o", "agui.keepalive=5", "--token", TOKEN]
    with start_server(args) as server:
        lines = "\n".join(server.lines)
        assert f"chat page {server.base_url}/chat/?token=" in lines, lines
        response = httpx.post(f"{server.base_url}/chat/", json=run_input("hi"), headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30)
        assert response.status_code == 200 and parse_sse(response.text)[-1]["type"] == "RUN_FINISHED"
        assert httpx.post(f"{server.base_url}/chat/", json=run_input("hi")).status_code == 401


def test_bad_option_is_refused_with_a_clear_message():
    out = subprocess.run(
        [sys.executable, "-m", "onedoor", "serve", "--door", "agui", "--port", "0", "-o", "agui.snapshot=sometimes"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode != 0
    assert "snapshot" in (out.stderr + out.stdout)


def test_pending_tool_outcome_over_the_real_cli_server():
    tools = [{"name": "confirm", "description": "Ask", "parameters": {"type": "object"}}]
    with start_server(["--door", "agui", "-b", "scripted", "-o", "scripted.mode=async"]) as server:
        response = httpx.post(f"{server.base_url}/agui/", json=run_input('/call confirm {"a": 1}', tools=tools), timeout=30)
        events = parse_sse(response.text)
        assert events[-1]["outcome"]["type"] == "success"
        assert len(events[-1]["outcome"]["pendingToolCallIds"]) == 1
        assert json.loads(next(e for e in events if e["type"] == "TOOL_CALL_ARGS")["delta"]) == {"a": 1}


def test_ctrl_c_ends_open_streams_with_the_cancelled_outcome():
    server = start_server(["--door", "agui", "-b", "scripted"])
    try:
        with httpx.Client(timeout=30) as client:
            with client.stream("POST", f"{server.base_url}/agui/", json=run_input("/hang")) as response:
                chunks = response.iter_text()
                body = next(chunks)
                assert "RUN_STARTED" in body
                server.proc.send_signal(signal.SIGINT)
                body += "".join(chunks)
        events = parse_sse(body)
        assert events[-1]["type"] == "RUN_FINISHED" and events[-1]["outcome"] == {"type": "cancelled"}
    finally:
        assert server.stop() in (0, 130)


def test_the_door_refuses_a_transport_it_cannot_use():
    out = subprocess.run(
        [sys.executable, "-m", "onedoor", "serve", "--door", "agui", "--transport", "stdio"],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert out.returncode != 0
    assert "agui" in out.stderr and "http" in out.stderr, out.stderr


def test_plugins_options_show_ask_fallback():
    out = subprocess.run([sys.executable, "-m", "onedoor", "plugins", "--options"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    section = out.stdout.split("onedoor-door-agui", 1)[1].split("onedoor-door-", 1)[0]
    assert "-o ask_fallback='deny'" in section and "Limits.max_parked_runs" in section, section
    refused = subprocess.run(
        [sys.executable, "-m", "onedoor", "serve", "--door", "agui", "--port", "0", "-o", "agui.ask_fallback=maybe"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert refused.returncode != 0 and "ask_fallback" in refused.stderr + refused.stdout
