"""Independent npm clients against the MCP door: the TypeScript SDK, the TypeScript v2 client
(@modelcontextprotocol/client, MCP 2026-07-28), the MCP Inspector CLI and the official
conformance suite (pinned in tests/door_mcp/js/package-lock.json)."""

from __future__ import annotations

import base64
import json
import os
import shlex
import subprocess
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).parent
JS = HERE / "js"
INSPECTOR = JS / "node_modules" / ".bin" / "mcp-inspector"
CONFORMANCE = JS / "node_modules" / ".bin" / "conformance"

pytestmark = pytest.mark.timeout(180)


@pytest.fixture(autouse=True)
def _node(request: pytest.FixtureRequest) -> None:
    from shutil import which

    if which("node") is None:
        pytest.skip("node is not installed (the CI image needs Node 20+)")
    if not (JS / "node_modules" / "@modelcontextprotocol" / "sdk").is_dir():
        pytest.skip("npm packages missing: run `npm ci --prefix tests/door_mcp/js` (nox does it for this combo)")


def node_client(*args: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    out = subprocess.run(["node", str(JS / "client.mjs"), *args], capture_output=True, text=True, timeout=120,
                         env={**os.environ, **(env or {})})
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def check_ask(result: dict[str, Any]) -> None:
    assert result["server"] == {"name": "onedoor", "version": "0.1.0"}
    assert "'ask'" in result["instructions"]
    assert result["tools"] == [{"name": "ask", "required": ["message"]}]
    assert result["text"] == "You said: hello from node (3 words, turn 1)" and result["isError"] is False
    texts = [p["message"] for p in result["progress"] if not p["message"].startswith("[tool ")]
    assert "".join(texts) == result["text"]
    assert [p["progress"] for p in result["progress"]] == sorted(p["progress"] for p in result["progress"])
    assert result["failed"]["isError"] is True and "failed" in result["failed"]["text"]


def test_typescript_sdk_over_stdio(sdk: Any) -> None:
    check_ask(node_client("stdio", json.dumps(sdk.command()), "ask"))


def test_typescript_sdk_over_http(http_server: Any) -> None:
    check_ask(node_client("http", http_server.url, "ask"))


def test_typescript_sdk_cancels_over_stdio(sdk: Any, outcomes: Any) -> None:
    result = node_client("stdio", json.dumps(sdk.command()), "cancel", env=outcomes.env)
    assert result["progressBeforeAbort"] >= 1 and "test cancels" in result["error"]
    assert result["after"] == "You said: after cancel (2 words, turn 1)"
    record = outcomes.wait_for(lambda r: r["message"].startswith("/slow /long 400"))
    assert record["stop_reason"] == "cancelled" and record["workers_alive"] == 0


def test_typescript_sdk_cancels_over_http(http_server: Any, outcomes: Any) -> None:
    result = node_client("http", http_server.url, "cancel")
    assert result["progressBeforeAbort"] >= 1 and result["error"]
    assert result["after"] == "You said: after cancel (2 words, turn 1)"
    record = outcomes.wait_for(lambda r: r["message"].startswith("/slow /long 400"))
    assert record["stop_reason"] == "cancelled" and record["workers_alive"] == 0


def test_typescript_sdk_with_a_token(start_http_server: Any) -> None:
    token = "node-token-0123456789-abcdefghijkl"
    server = start_http_server("--token", token)
    result = node_client("http", server.url, "ask", token)
    assert result["text"].startswith("You said: hello from node")


# -- the TypeScript SDK client answers the agent's questions (elicitation) ----------------------

ELICITED = [
    "Approved (allow_once): ran rm",
    "Not approved (reject_always): did not run rm",
    "Not approved (reject_once): did not run rm",
    "Not approved (reject_once): did not run rm",
    "Not approved (reject_once): did not run rm",  # "maybe" is not a choice: the kernel says no
    'You answered {"answer": "green"}',
    "No answer (decline)",
]
UNUSABLE = "The agent asked to run rm; the client's answer could not be used, so the server answered reject_once."
NO_CAPABILITY = "no one could be asked here (the client did not declare the elicitation capability)"


def check_elicit(result: dict[str, Any]) -> None:
    results = result["results"]
    assert [r["blocks"][0] for r in results] == ELICITED
    assert not any(r["isError"] for r in results)
    # Only the answer that could not be used is said to be so; a person gave the others.
    assert [r["blocks"][1:] for r in results] == [[], [], [], [], [UNUSABLE], [], []]
    hows = [[answer["how"] for answer in r["structured"]["answers"]] for r in results]
    assert hows == [["person"], ["person"], ["person"], ["person"], ["policy"], ["person"], ["person"]]
    assert results[5]["structured"]["answers"][0]["value"] == {"answer": "green"}
    first = result["asked"][0]
    assert "rm" in first["message"] and '"path": "/tmp/x"' in first["message"]
    decision = first["requestedSchema"]["properties"]["decision"]
    assert decision["enum"] == ["allow_once", "allow_always", "reject_once", "reject_always"]
    assert first["question"]["kind"] == "approval" and first["question"]["tool"]["name"] == "rm"
    question = result["asked"][5]
    assert question["message"] == "Which colour?" and question["question"]["kind"] == "input"
    assert question["requestedSchema"]["properties"] == {"answer": {"type": "string"}}


def test_typescript_sdk_answers_questions_over_stdio(sdk: Any) -> None:
    check_elicit(node_client("stdio", json.dumps(sdk.command("-o", "scripted.delay=0")), "elicit"))


def test_typescript_sdk_answers_questions_over_http(http_server: Any) -> None:
    check_elicit(node_client("http", http_server.url, "elicit"))


def test_typescript_sdk_without_elicitation_is_told_the_policy_answered(http_server: Any) -> None:
    result = node_client("http", http_server.url, "policy")
    approval, question = result["approval"], result["question"]
    assert approval["blocks"] == [
        "Not approved (reject_once): did not run rm",
        f"The agent asked to run rm; {NO_CAPABILITY}, so the server's ask_fallback policy (deny) answered reject_once.",
    ]
    assert [(a["tool"], a["outcome"], a["how"]) for a in approval["structured"]["answers"]] == [("rm", "reject_once", "policy")]
    assert question["blocks"][1] == (
        f'The agent asked "Which colour?"; {NO_CAPABILITY}, so the server\'s ask_fallback policy (deny) answered decline.'
    )
    assert [(a["kind"], a["outcome"], a["how"]) for a in question["structured"]["answers"]] == [("input", "decline", "policy")]


def test_typescript_sdk_giving_up_while_asked_over_http(http_server: Any, outcomes: Any) -> None:
    """The TS SDK gives up on a request after its timeout (60 s by default; 2 s here) and sends
    notifications/cancelled: the run ends cancelled, the next call works, no traceback."""
    result = node_client("http", http_server.url, "give-up", env={"TIMEOUT_MS": "2000"})
    assert result["asked"] == 1 and "timed out" in result["error"].lower(), result
    assert result["after"] == "You said: after giving up (3 words, turn 1)"
    record = outcomes.wait_for(lambda r: r["message"] == "/ask deploy {}")
    assert record["stop_reason"] == "cancelled" and record["workers_alive"] == 0, record
    assert "Traceback" not in http_server.log.read_text()


# -- the MCP Inspector CLI (exits 0 even when the tool result is an error) ----------------------


def inspector(target: list[str], *args: str) -> dict[str, Any]:
    out = subprocess.run([str(INSPECTOR), "--cli", *target, *args], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    return json.loads(out.stdout)


@pytest.fixture
def stdio_script(tmp_path: Path, sdk: Any) -> list[str]:
    """The inspector takes a command whose own flags it would parse: wrap it in a script."""
    script = tmp_path / "mcp-server.sh"
    script.write_text("#!/bin/sh\nexec " + shlex.join(sdk.command()) + "\n")
    script.chmod(0o755)
    return [str(script)]


@pytest.mark.parametrize("where", ["stdio", "http"])
def test_inspector_cli(where: str, stdio_script: list[str], http_server: Any) -> None:
    target = stdio_script if where == "stdio" else [http_server.url, "--transport", "http"]
    ok = inspector(target, "--method", "tools/call", "--tool-name", "ask", "--tool-arg", "message=hi inspector")
    assert ok["isError"] is False and ok["content"][0]["text"] == "You said: hi inspector (2 words, turn 1)"
    failed = inspector(target, "--method", "tools/call", "--tool-name", "ask", "--tool-arg", "message=/fail x")
    assert failed["isError"] is True and "ScriptedFailure" in failed["content"][0]["text"]
    image = inspector(target, "--method", "tools/call", "--tool-name", "ask", "--tool-arg", "message=/image x")
    assert [(b["type"], b.get("mimeType")) for b in image["content"]] == [("text", None), ("image", "image/png")]
    assert image["_meta"]["onedoor/usage"][0]["model"] == "scripted"
    templates = inspector(target, "--method", "resources/templates/list")  # the default store keeps state
    assert [t["uriTemplate"] for t in templates["resourceTemplates"]] == ["onedoor://threads/{thread_id}/state"]


# -- the official conformance suite, over HTTP --------------------------------------------------


def test_conformance_suite_with_baseline(http_server: Any, tmp_path: Path) -> None:
    # The bare prefix (/mcp) is served without a redirect, so the suite's DNS-rebinding
    # scenario gets the door's own 4xx there.
    out = subprocess.run(
        [str(CONFORMANCE), "server", "--url", http_server.url, "--expected-failures",
         str(JS / "conformance-baseline.yml"), "-o", str(tmp_path / "conformance")],
        capture_output=True, text=True, timeout=170, cwd=JS,
    )
    summary = out.stdout[out.stdout.find("=== SUMMARY ==="):]
    assert out.returncode == 0, summary[-4000:] + out.stderr[-2000:]
    for scenario in ("server-initialize", "logging-set-level", "ping", "tools-list", "resources-list",
                     "dns-rebinding-protection"):
        assert f"✓ {scenario}:" in summary, summary


def test_typescript_sdk_keeps_a_thread_over_http(start_http_server: Any, tmp_path: Path) -> None:
    """The TS SDK validates structuredContent against the declared outputSchema, so a
    result that did not fit would fail the call in the client."""
    token = "node-token-0123456789-abcdefghijkl"
    tokens = tmp_path / "tokens"
    tokens.write_text(f"node {token}\n")
    server = start_http_server("-o", f"tokens_file={tokens}", "-o", f"sqlite.path={tmp_path / 'threads.sqlite3'}")
    result = node_client("http", server.url, "thread", token)
    for shown in (result[k] for k in ("started", "continued", "unknown", "stateless")):  # usage: tested on its own
        usage = (shown["structured"] or {}).pop("usage", None)
        assert shown["isError"] or usage[0]["model"] == "scripted", shown
    thread_id = result["started"]["structured"]["thread"]
    on_thread = {"thread": thread_id, "state": {}, "state_version": 0}
    assert result["started"]["structured"] == {"reply": "You said: hello from node (3 words, turn 1)", **on_thread}
    assert result["continued"]["structured"] == {"reply": "You said: node again (2 words, turn 2)", **on_thread}
    assert result["unknown"]["isError"] is True and "no thread 't-unknown'" in result["unknown"]["text"]
    assert result["stateless"] == {
        "text": "You said: stateless (1 word, turn 1)", "isError": False,
        "structured": {"reply": "You said: stateless (1 word, turn 1)"},
    }


# -- content, state and usage with the TypeScript SDK (#25, #26, #27) ---------------------------


def check_content(result: dict[str, Any]) -> None:
    from onedoor.builtins.scripted_extras import DOT_PNG

    dot = base64.b64encode(DOT_PNG).decode()
    assert result["sent"]["isError"] is False
    assert result["sent"]["blocks"][0].startswith(f"Received: 1 image (image/png, {len(DOT_PNG)} bytes, dot.png).")
    made = result["made"]
    image = {"type": "image", "data": dot, "mimeType": "image/png", "_meta": {"onedoor/name": "dot.png"}}
    assert made["content"][1:] == [image, image]  # the draw tool's image, then the reply's
    assert made["meta"]["onedoor/usage"] == made["structured"]["usage"]
    assert made["structured"]["usage"][0]["model"] == "scripted"
    refused = result["refused"]
    assert refused["isError"] is True and refused["meta"] == {"onedoor/refused": "invalid"}
    assert "not valid base64" in refused["blocks"][0]


@pytest.mark.parametrize("where", ["stdio", "http"])
def test_typescript_sdk_sends_and_gets_content(where: str, sdk: Any, http_server: Any) -> None:
    from onedoor.builtins.scripted_extras import DOT_PNG

    env = {"DOT_PNG_B64": base64.b64encode(DOT_PNG).decode()}
    target = json.dumps(sdk.command("-o", "scripted.delay=0")) if where == "stdio" else http_server.url
    check_content(node_client(where, target, "content", env=env))


def test_typescript_sdk_reads_a_threads_state(start_http_server: Any, tmp_path: Path) -> None:
    server = start_http_server("-o", "scripted.delay=0", "-o", f"sqlite.path={tmp_path / 'threads.sqlite3'}")
    result = node_client("http", server.url, "state")
    started = result["started"]
    assert started["state"] == {"n": 1} and isinstance(started["state_version"], int)
    assert [t["uriTemplate"] for t in result["templates"]] == ["onedoor://threads/{thread_id}/state"]
    (contents,) = result["read"]
    assert contents["uri"] == f"onedoor://threads/{started['thread']}/state"
    assert (contents["mimeType"], json.loads(contents["text"])) == ("application/json", {"n": 1})
    assert contents["_meta"] == {"onedoor/state_version": started["state_version"]}
    assert result["unknown"] == -32002


def test_typescript_v2_client_answers_questions(sdk: Any, http_server: Any) -> None:
    """@modelcontextprotocol/client 2.x with versionNegotiation "auto": 2026-07-28 against an
    SDK 2.x server (the questions in the call's result, the client retrying the call), 2025-11-25
    against 1.x (elicitation requests); its elicitation handler answers either way."""
    if not (JS / "node_modules" / "@modelcontextprotocol" / "client").is_dir():
        pytest.skip("npm packages missing: run `npm ci --prefix tests/door_mcp/js`")
    out = subprocess.run(["node", str(JS / "client_v2.mjs"), http_server.url], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["version"] == ("2026-07-28" if sdk.major >= 2 else "2025-11-25")
    assert result["approval"]["blocks"] == ["Approved (allow_once): ran rm"]
    assert result["question"]["blocks"] == ['You answered {"answer": "green"}']
    for answered, outcome in ((result["approval"], "allow_once"), (result["question"], "accept")):
        assert [(a["outcome"], a["how"]) for a in answered["answers"]] == [(outcome, "person")]
    assert [a["message"] for a in result["asked"]] == ["Allow the agent to run rm?\n\nTool: rm\nArguments: {}", "Colour?"]
    assert result["asked"][0]["schema"]["properties"]["decision"]["enum"] == [
        "allow_once", "allow_always", "reject_once", "reject_always"]
