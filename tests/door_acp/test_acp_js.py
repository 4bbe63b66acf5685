"""Independent clients from npm drive `onedoor acp`: the TypeScript SDK and acpx."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from acp_harness import HERE, JS_DIR, node_ready, onedoor_command  # type: ignore[import-not-found]

pytestmark = [
    pytest.mark.timeout(120),
    pytest.mark.skipif(node_ready() is not None, reason=node_ready() or ""),
]


def _node(args: list[str], env: dict[str, str], cwd: Path = JS_DIR) -> dict:
    out = subprocess.run(["node", *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=90)
    lines = [line for line in out.stdout.splitlines() if line.strip()]
    assert lines, f"no output; stderr:\n{out.stderr[-3000:]}"
    result = json.loads(lines[-1])
    assert out.returncode == 0 and result.get("ok"), f"{result}\nstderr:\n{out.stderr[-3000:]}"
    return result


def test_typescript_sdk_client_prompts_streams_and_cancels(agent_env: dict[str, str]) -> None:
    result = _node(["client.mjs", "basic", json.dumps(onedoor_command() + ["acp"])], agent_env)
    assert result["collapsed"] == ["agent_thought_chunk", "tool_call", "tool_call_update", "agent_message_chunk"]
    assert result["statuses"] == ["pending", "in_progress", "completed"]
    assert result["reply"] == "You said: hello from typescript (3 words, turn 1)"
    assert result["cancelled"] == "cancelled"
    assert 2 <= result["chunksAfterCancel"] < 100000
    assert result["unknownCode"] == -32002


@pytest.mark.parametrize("mode", ["async", "sync"])
def test_typescript_sdk_client_answers_permission_requests_both_ways(agent_env: dict[str, str], mode: str) -> None:
    command = [sys.executable, str(HERE / "approval_agent.py"), mode]
    result = _node(["client.mjs", "permission", json.dumps(command)], agent_env)
    assert result["stops"] == ["end_turn", "end_turn"]
    assert result["allowedText"] == "I will write the file. Done."
    assert result["allowedStatuses"] == ["pending", "in_progress", "completed"]
    assert result["rejectedText"] == "I will write the file. Not written."
    assert result["rejectedStatuses"] == ["pending", "failed"]
    assert result["optionKinds"] == ["allow_once", "allow_always", "reject_once", "reject_always"]


def test_acpx_runs_a_prompt_end_to_end(agent_env: dict[str, str], tmp_path: Path) -> None:
    agent = " ".join(onedoor_command() + ["acp"])
    cli = JS_DIR / "node_modules" / "acpx" / "dist" / "cli.js"
    env = dict(agent_env, HOME=str(tmp_path))  # acpx keeps its own state under HOME
    out = subprocess.run(
        ["node", str(cli), "--agent", agent, "--approve-all", "--format", "json", "exec", "hello acpx"],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=90,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    messages = [json.loads(line) for line in out.stdout.splitlines() if line.strip()]
    results = {m["id"]: m["result"] for m in messages if "result" in m and "id" in m}
    assert any(r.get("protocolVersion") == 1 for r in results.values())
    assert any(r.get("stopReason") == "end_turn" for r in results.values())
    text = "".join(
        m["params"]["update"]["content"]["text"] for m in messages
        if m.get("method") == "session/update" and m["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
    )
    assert text == "You said: hello acpx (2 words, turn 1)"
    kinds = [m["params"]["update"]["sessionUpdate"] for m in messages if m.get("method") == "session/update"]
    assert "tool_call" in kinds and "tool_call_update" in kinds


# -- questions (issue 15): approvals, elicitation, hostile answers, disconnect ---------------


def test_typescript_sdk_client_answers_approvals_and_a_free_form_question(agent_env: dict[str, str]) -> None:
    result = _node(["client.mjs", "questions", json.dumps(onedoor_command() + ["acp"])], agent_env)
    assert result["optionKinds"] == result["optionIds"] == ["allow_once", "allow_always", "reject_once", "reject_always"]
    assert result["rawInput"] == {"path": "x"}
    assert result["allowOnce"] == {"stop": "end_turn", "text": "Approved (allow_once): ran rm",
                                   "statuses": ["pending", "in_progress", "completed"], "asked": 1}
    assert result["rejectOnce"] == {"stop": "end_turn", "text": "Not approved (reject_once): did not run rm",
                                    "statuses": ["pending", "in_progress", "failed"], "asked": 1}
    assert result["allowAlways"]["text"] == "Approved (allow_always): ran rm" and result["allowAlways"]["asked"] == 1
    # "always" is kept with the session: the next turn is not asked
    assert result["afterAlways"]["text"] == "Approved (allow_always): ran rm" and result["afterAlways"]["asked"] == 0
    assert result["accepted"]["text"] == 'You answered {"answer": "main"}'
    assert result["declined"]["text"] == "No answer (decline)"
    assert result["cancelled"]["text"] == "No answer (cancel)"
    elicitation = result["elicitation"]
    assert elicitation["mode"] == "form" and elicitation["message"] == "Which branch?"
    assert elicitation["requestedSchema"]["properties"] == {"answer": {"type": "string"}}


def test_typescript_sdk_client_allow_always_covers_the_rest_of_the_turn(agent_env: dict[str, str]) -> None:
    command = [sys.executable, str(HERE / "approval_agent.py"), "twice"]
    result = _node(["client.mjs", "always", json.dumps(command)], agent_env)
    assert result["first"]["text"] == "Done. Done." and result["first"]["asked"] == 1  # two calls, one question
    assert result["second"]["text"] == "Done. Done." and result["second"]["asked"] == 0


def test_typescript_sdk_client_unreadable_permission_answers_are_no(agent_env: dict[str, str]) -> None:
    result = _node(["client.mjs", "hostile", json.dumps(onedoor_command() + ["acp"])], agent_env)
    for seen in result["seen"]:
        assert seen == {"stop": "end_turn", "text": "Not approved (reject_once): did not run rm",
                        "statuses": ["pending", "in_progress", "failed"], "asked": 1}
    assert result["good"]["text"] == "Approved (allow_once): ran rm"


@pytest.mark.parametrize("ask", ["ask", "question"])
def test_typescript_sdk_client_leaving_while_asked_ends_the_agent(agent_env: dict[str, str], ask: str) -> None:
    result = _node(["client.mjs", "disconnect", json.dumps(onedoor_command() + ["acp"])], dict(agent_env, ACP_TEST_ASK=ask))
    assert result["asked"] == 1
    assert result["exit"] == {"code": 0, "signal": None}, "the agent must exit by itself once stdin closes"
