"""hermes with machine tools behind the web doors: a web page must not be able to run it.

With ``toolsets=["terminal"]`` and ``allow_machine_tools=true``, a run of this agent can
execute shell commands: any request that starts a run is remote code execution. The
doors are served as ``onedoor serve`` serves them (the HTTP transport's app on real
uvicorn, 127.0.0.1, no token: the quick start), and every request a web page can make
the browser send is tried against REST and AG-UI. None may reach the model: the fake
model server's request record stays empty, no lifecycle hook reports a run, and the
canary file the "attack" asks the terminal to create never appears. A well-behaved
local client then does the same and the file appears, which shows that the attacks
were real.
"""

from __future__ import annotations

import json
import uuid

import pytest

pytest.importorskip("onedoor_transport_http", reason="the HTTP transport is not installed in this environment")
pytest.importorskip("onedoor_door_rest", reason="the REST door is not installed in this environment")
pytest.importorskip("onedoor_door_agui", reason="the AG-UI door is not installed in this environment")

import httpx
from onedoor.composition import ServeContext
from onedoor.testing import kernel_for_agent
from onedoor_backend_hermes import HermesOptions, hermes_backend
from onedoor_door_agui import AguiDoor, AguiOptions
from onedoor_door_rest import RestDoor
from onedoor_transport_http import HttpOptions
from onedoor_transport_http.testing import ThreadedServer

EVIL = "http://evil.example"


class Runs:
    """Lifecycle hooks: every run the kernel starts."""

    def __init__(self) -> None:
        self.started: list[object] = []

    def onedoor_run_started(self, run: object) -> None:
        self.started.append(run)

    def onedoor_run_finished(self, run: object, outcome: object) -> None:
        pass


def bodies(message: str) -> dict[str, dict]:
    run_input = {"threadId": "t", "runId": uuid.uuid4().hex, "messages": [{"id": "u", "role": "user", "content": message}]}
    return {"/rest/chat": {"message": message}, "/rest/chat/stream": {"message": message}, "/agui/": run_input}


def attacks(port: str) -> list[tuple[str, dict[str, str], int]]:
    """(name, headers, the refusal) for what a page on another site, or a rebinding page, can send."""
    plain, form, json_type = "text/plain;charset=UTF-8", "application/x-www-form-urlencoded", "application/json"
    return [
        ("cross-site text/plain (no preflight)", {"content-type": plain, "origin": EVIL}, 403),
        ("cross-site form post (no preflight)", {"content-type": form, "origin": EVIL}, 403),
        ("text/plain without Origin", {"content-type": plain}, 415),
        ("form post without Origin", {"content-type": form}, 415),
        ("cross-site JSON", {"content-type": json_type, "origin": EVIL}, 403),
        ("sandboxed page (Origin: null)", {"content-type": json_type, "origin": "null"}, 403),
        ("another local port's page", {"content-type": json_type, "origin": "http://127.0.0.1:1"}, 403),
        ("DNS rebinding", {"content-type": json_type, "host": f"evil.example:{port}", "origin": f"{EVIL}:{port}"}, 421),
        ("DNS rebinding without Origin", {"content-type": json_type, "host": f"evil.example:{port}"}, 421),
    ]


@pytest.mark.timeout(120)
def test_web_pages_cannot_start_hermes_with_machine_tools(server, hermes_home, tmp_path):
    canary = tmp_path / f"pwned-{uuid.uuid4().hex}"
    message = "/tool terminal " + json.dumps({"command": f"touch {canary}"})
    options = HermesOptions(model="fake-model", base_url=server.base_url, api_key="sk-test", home=hermes_home,
                            toolsets=["terminal"], allow_machine_tools=True)
    kernel = kernel_for_agent(lambda: hermes_backend(options), "hermes")
    runs = Runs()
    kernel.hooks = runs
    doors = [RestDoor(), AguiDoor()]
    doors[0].name, doors[1].name = "rest", "agui"
    ctx = ServeContext(kernel=kernel, options={"agui": AguiOptions(keepalive=0)}, door_names=["rest", "agui"],
                       transport_name="http")
    with ThreadedServer(doors, ctx, HttpOptions(port=0)) as http:
        port = http.base_url.rsplit(":", 1)[1]
        tried = 0
        for path, body in bodies(message).items():
            for name, headers, refused in attacks(port):
                r = httpx.post(http.base_url + path, content=json.dumps(body), headers=headers, timeout=30)
                assert r.status_code == refused, (name, path, r.status_code, r.text)
                tried += 1
        assert tried == 27
        assert runs.started == [], "a web page started a run"
        assert server.chat_requests() == [], "a web page reached the model"
        assert not canary.exists(), "a web page ran a command on this machine"
        # the control: a local client (no Origin, JSON, loopback Host) really runs the terminal tool
        ok = httpx.post(http.base_url + "/rest/chat", json={"message": message}, timeout=60)
        assert ok.status_code == 200, ok.text
        assert ok.json()["tool_calls"][0]["name"] == "terminal"
        assert canary.exists() and len(runs.started) == 1 and server.chat_requests()
