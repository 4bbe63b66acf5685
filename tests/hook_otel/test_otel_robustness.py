"""A collector that is down never fails a run nor holds a server's stop; an installed but
unconfigured plugin imports nothing and registers no hook; ``onedoor run`` exports its run."""

from __future__ import annotations

import json
import socket
import subprocess
import sys

import httpx
import pytest
from onedoor_test_support import free_port
from otel_support import Served, clean_env, named, otel_env

pytest.importorskip("onedoor_door_rest", reason="the REST door is not installed")

RUNS = 20


def run_many(client: httpx.Client) -> list[dict]:
    replies = []
    for index in range(RUNS):
        reply = client.post("/rest/chat", json={"message": f"still here {index}"})
        assert reply.status_code == 200, reply.text
        replies.append(reply.json())
    return replies


@pytest.mark.parametrize("collector", ["refused", "silent"])
def test_a_collector_that_is_down_changes_nothing_for_runs(collector):
    silent = socket.socket()
    try:
        if collector == "silent":  # accepts connections (the kernel's backlog) and never answers
            silent.bind(("127.0.0.1", 0))
            silent.listen(64)
            endpoint = f"http://127.0.0.1:{silent.getsockname()[1]}"
        else:
            endpoint = f"http://127.0.0.1:{free_port()}"  # nothing listens there
        env = otel_env(endpoint, OTEL_METRICS_EXPORTER="otlp,prometheus", ONEDOOR_OTEL_SHUTDOWN_TIMEOUT="2")
        with Served(["--door", "rest"], env) as served, httpx.Client(base_url=served.base_url, timeout=30) as client:
            replies = run_many(client)
            scraped = client.get("/metrics").text
            code = served.stop(timeout=30)  # the exporters get 2 s at the end, then are dropped
    finally:
        silent.close()
    assert code == 0
    assert [r["stop_reason"] for r in replies] == ["end_turn"] * RUNS
    assert all(f"still here {i}" in r["reply"] for i, r in enumerate(replies))
    assert f'onedoor_runs_total{{gen_ai_agent_name="scripted",onedoor_door="rest",onedoor_run_outcome="end_turn"}} {RUNS}.0' in scraped
    assert "Traceback" not in "".join(served.errors), "".join(served.errors)[-3000:]


def imports_after_run(env: dict[str, str]) -> tuple[subprocess.CompletedProcess, list[str]]:
    code = (
        "import sys, runpy\n"
        "sys.argv = ['onedoor', 'run', 'hello']\n"
        "try:\n"
        "    runpy.run_module('onedoor', run_name='__main__')\n"
        "except SystemExit:\n"
        "    pass\n"
        "print('OTEL=' + ','.join(sorted(m for m in sys.modules if m.split('.')[0] in ('opentelemetry', 'prometheus_client'))),"
        " file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env)
    line = next(line for line in done.stderr.splitlines() if line.startswith("OTEL="))
    return done, [m for m in line[5:].split(",") if m]


def test_installed_without_settings_it_imports_nothing_and_observes_nothing():
    done, loaded = imports_after_run(clean_env())
    assert "You said: hello" in done.stdout
    assert loaded == [], f"onedoor run imported {loaded}"
    import pluggy
    from onedoor import hookspecs
    from onedoor_hook_otel import Dormant

    pm = pluggy.PluginManager("onedoor")
    pm.add_hookspecs(hookspecs)
    pm.register(Dormant(), name="otel")
    assert not [c.name for c in pm.get_hookcallers(pm.get_plugin("otel")) or []]


def test_onedoor_run_exports_its_run_before_it_exits(receiver):
    env = otel_env(receiver.url, ONEDOOR_LOG_FORMAT="json")
    done = subprocess.run([sys.executable, "-m", "onedoor", "run", "hello from the terminal"], capture_output=True,
                          text=True, timeout=60, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().startswith("You said: hello from the terminal"), done.stdout  # stdout is the reply only
    spans = receiver.spans()  # the process has ended: what it sent is all there is
    [run] = named(spans, "invoke_agent scripted")
    assert run.parent_id == "" and run.attributes["onedoor.door"] == "terminal"
    assert run.attributes["gen_ai.usage.input_tokens"] == 4
    [line] = [json.loads(line) for line in done.stderr.splitlines() if line.startswith("{")]
    assert line["message"] == "run ended: end_turn" and line["run_id"] == run.attributes["onedoor.run.id"]
