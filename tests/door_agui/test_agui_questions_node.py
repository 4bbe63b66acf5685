"""Interrupts and resume with the official @ag-ui/client HttpAgent (Node) against `onedoor serve`."""

from __future__ import annotations

import json
import subprocess

import pytest
from agui_helpers import JS, TOKEN, node_or_skip
from onedoor_transport_http.testing import start_server

ENV = {"ONEDOOR_HTTP_TOKEN": TOKEN}
pytestmark = pytest.mark.timeout(300)  # a real browser / node / hundreds of runs on a loaded machine


@pytest.fixture(scope="module", params=["sync", "async"])
def results(request):
    node = node_or_skip()
    mode = ["-o", f"scripted.mode={request.param}"]
    with start_server(["--door", "agui", "-b", "scripted", *mode], env=ENV) as server, start_server(
        ["--door", "agui", "-b", "scripted", *mode, "-o", "limits.question_ttl=0.5"], env=ENV
    ) as short:
        proc = subprocess.run(
            [node, "interrupts.mjs", server.base_url, TOKEN, short.base_url], cwd=JS, capture_output=True, text=True, timeout=180
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        out = json.loads(proc.stdout.strip().splitlines()[-1])
        assert server.proc.poll() is None and short.proc.poll() is None, "a server died"
    return out


def test_the_client_receives_the_interrupt_outcome(results):
    r = results["approve"]
    first, interrupt = r["first"], r["interrupt"]
    assert first["error"] is None and first["outcome"] == "interrupt" and first["pendingInterrupts"] == [interrupt["id"]]
    assert first["events"] == ["RUN_STARTED", "TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "RUN_FINISHED"]
    assert interrupt["reason"] == "tool_approval" and interrupt["metadata"]["toolName"] == "deploy"
    assert interrupt["toolCallId"].endswith("_deploy") and interrupt["expiresAt"].endswith("Z")


def test_approve_resumes_and_the_backend_runs_the_tool(results):
    r = results["approve"]
    second = r["second"]
    assert second["error"] is None and second["outcome"] == "success" and second["pendingInterrupts"] == []
    assert second["started"] == {"runId": second["runId"], "parentRunId": r["first"]["runId"]}
    assert second["custom"] == [
        {"name": "onedoor.question_answered", "value": {"interruptId": r["interrupt"]["id"], "outcome": "allow_once", "how": "person"}}
    ]
    assert r["reply"] == "Approved (allow_once): ran deploy"
    assert r["tool"] == {"toolCallId": r["interrupt"]["toolCallId"], "content": '{"ran":"deploy"}'}
    assert r["roles"] == ["user", "assistant", "tool", "assistant"]  # one tool call, its result, the reply


@pytest.mark.parametrize(
    "scenario, reply",
    [
        ("reject", "Not approved (reject_once): did not run deploy"),
        ("cancel", "Not approved (reject_once): did not run deploy"),
        ("outcome", "Approved (allow_always): ran deploy"),
        ("input", 'You answered {"answer": "blue"}'),
    ],
)
def test_other_answers_reach_the_backend(results, scenario, reply):
    r = results[scenario]
    assert r["second"]["error"] is None and r["second"]["outcome"] == "success"
    assert r["reply"] == reply


def test_client_refuses_to_skip_an_interrupt(results):
    r = results["unaddressed"]
    assert "pending interrupt" in r["error"] and r["events"] == []  # nothing was sent
    assert r["after"] == "success" and r["reply"] == "Not approved (reject_once): did not run deploy"


def test_invalid_answer_is_refused_then_a_valid_one_goes_through(results):
    r = results["invalid"]
    assert "422" in r["refused"]["error"] and "invalid_answer" in r["refused"]["error"]
    assert r["refused"]["pendingInterrupts"] != []  # the interrupt is still there to answer
    assert r["fixed"] == "success" and r["reply"] == 'You answered {"answer": "red"}'


def test_expired_interrupt_is_abandoned_and_the_thread_goes_on(results):
    r = results["expired"]
    assert r["active"] == 0  # the server ended the parked run
    assert "expired" in r["late"]["error"] and r["late"]["events"] == []  # the client will not answer it
    abandoned = r["abandoned"]
    assert abandoned["error"] is None and abandoned["outcome"] == "cancelled" and abandoned["pendingInterrupts"] == []
    assert abandoned["started"]["parentRunId"] is not None
    assert r["next"] == "success" and r["reply"].startswith("You said: hello again")
