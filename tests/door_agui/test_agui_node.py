"""The official @ag-ui/client HttpAgent (Node) against `onedoor serve` on real uvicorn."""

from __future__ import annotations

import json
import subprocess

import pytest
from agui_helpers import JS, TOKEN, node_or_skip
from onedoor_transport_http.testing import start_server


@pytest.fixture(scope="module")
def results():
    node = node_or_skip()
    with start_server(["--door", "agui", "-b", "scripted", "-o", "scripted.delay=0.005"], env={"ONEDOOR_HTTP_TOKEN": TOKEN}) as server:
        proc = subprocess.run(
            [node, "client.mjs", server.base_url, TOKEN], cwd=JS, capture_output=True, text=True, timeout=120
        )
        assert proc.returncode == 0, proc.stderr
        out = json.loads(proc.stdout.strip().splitlines()[-1])
        assert server.proc.poll() is None, "the server died"
    return out


def roles(messages):
    return [m["role"] for m in messages]


def test_normal_run_builds_the_conversation(results):
    r = results["normal"]
    assert r["error"] is None and r["runError"] is None and r["outcome"] == {"type": "success"}
    msgs = r["messages"]
    assert roles(msgs) == ["user", "reasoning", "assistant", "tool", "assistant"]
    assert msgs[-1]["content"] == "You said: hello there (2 words, turn 1)"
    call = msgs[2]["toolCalls"][0]
    assert call["function"]["name"] == "word_count" and json.loads(call["function"]["arguments"]) == {"text": "hello there"}
    assert msgs[3]["toolCallId"] == call["id"] and json.loads(msgs[3]["content"]) == {"words": 2}
    assert r["events"][0] == "RUN_STARTED" and r["events"][-1] == "RUN_FINISHED"


def test_second_turn_sends_history_back(results):
    r = results["second_turn"]
    assert r["messages"][-1]["content"] == "You said: second question (2 words, turn 2)"
    assert roles(r["messages"]).count("user") == 2


def test_failing_run_gives_run_error_and_keeps_partial_text(results):
    r = results["failing"]
    assert r["outcome"] is None and r["events"][-1] == "RUN_ERROR"
    assert "scripted failure" in r["runError"]
    assert r["messages"][-1]["role"] == "assistant" and r["messages"][-1]["content"].startswith("You said:")


def test_frontend_tool_round_trip(results):
    r = results["frontend_tool"]
    first, second = r["first"], r["second"]
    assert first["outcome"]["type"] == "success" and len(r["pending"]) == 1
    call = first["messages"][2]["toolCalls"][0]
    assert call["id"] == r["pending"][0] and call["function"]["name"] == "confirm"
    assert json.loads(call["function"]["arguments"]) == {"question": "ship it?"}
    assert "TOOL_CALL_RESULT" not in first["events"]
    assert second["outcome"] == {"type": "success"} and second["error"] is None
    assert second["messages"][-1] == {**second["messages"][-1], "role": "assistant", "content": "The tool returned: yes, ship it"}


def test_abort_stops_the_stream(results):
    r = results["abort"]
    assert r["contents"] == 3
    assert r["events"].count("TEXT_MESSAGE_CONTENT") < 50
    assert "RUN_FINISHED" not in r["events"]
    assert r["activeRuns"] == 0  # the server cancelled the run when the client went away


def test_cancel_gives_the_cancelled_outcome(results):
    r = results["cancel"]
    assert r["outcome"] == {"type": "cancelled"} and r["error"] is None
    assert r["events"][-1] == "RUN_FINISHED" and r["events"].count("TEXT_MESSAGE_CONTENT") < 100


def test_messages_snapshot_keeps_the_client_conversation(results):
    r = results["snapshot"]
    assert "MESSAGES_SNAPSHOT" in r["events"]
    assert roles(r["messages"]) == ["user", "reasoning", "assistant", "tool", "assistant"]
    assert r["messages"][-1]["content"] == "You said: snap (1 word, turn 1)"
