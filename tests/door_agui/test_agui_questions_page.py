"""The chat page answers interrupts in headless Chromium: an approval card, a form, hostile
text shown as text, and a question that expires."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from agui_helpers import JS, agui_server, artifacts_dir, node_or_skip
from onedoor.kernel import Limits
from onedoor_test_support import wait_for

CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
pytestmark = pytest.mark.timeout(300)  # a real browser / node / hundreds of runs on a loaded machine


@pytest.fixture(scope="module")
def seen():
    node = node_or_skip()
    if not Path(CHROMIUM).exists():
        pytest.skip("chromium not installed (apt-get install chromium)")
    if not (JS / "node_modules" / "playwright-core").is_dir():
        pytest.skip("tests/door_agui/js/node_modules is missing: run `npm ci --prefix tests/door_agui/js`")
    shot = artifacts_dir() / "agui-chat-page-approval.png"
    with agui_server(mode="async") as (server, kernel, recorder), agui_server(limits=Limits(question_ttl=2)) as (short, k2, _):
        proc = subprocess.run(
            [node, "browser_questions.mjs", f"{server.base_url}/agui/", f"{short.base_url}/agui/", str(shot)],
            cwd=JS, capture_output=True, text=True, timeout=240,
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        out = json.loads(proc.stdout.strip().splitlines()[-1])
        wait_for(lambda: kernel.active_runs == 0 and kernel.parked_runs == 0, "the page's runs to end")
        wait_for(lambda: k2.active_runs == 0 and k2.parked_runs == 0, "the expired run to end")
        out["outcomes"] = [getattr(o, "stop_reason", "failed") for o in recorder.finished.values()]
    assert shot.exists() and shot.stat().st_size > 5_000
    return out


def test_approval_card_shows_the_tool_and_blocks_the_composer(seen):
    c = seen["approvalCard"]
    assert c["title"] == "Approval needed" and c["prompt"] == "Allow the agent to run deploy?"
    assert c["tool"] == "deploy" and json.loads(c["args"]) == {"env": "prod"}
    assert c["buttons"] == ["Approve", "Always approve", "Reject"] and c["expiry"].startswith("Answer before")
    assert seen["toolWaiting"] == "waiting for approval"
    assert seen["sendDisabled"] is True and seen["userBubbles"] == 1


def test_approve_resumes_the_stream_into_the_same_conversation(seen):
    a = seen["approved"]
    assert a["reply"] == "Approved (allow_once): ran deploy" and a["status"] == "ready"
    assert a["card"]["outcome"] == "Approved." and a["card"]["buttons"] == []
    assert a["toolCards"] == 1  # the reopened call updates its card, no second one
    assert a["tool"]["state"] == "done" and '"ran": "deploy"' in a["tool"]["result"]


def test_reject(seen):
    assert seen["rejected"]["reply"] == "Not approved (reject_once): did not run rm"
    assert seen["rejected"]["toolState"] == "failed"


def test_form_question_answered_in_the_page(seen):
    fields = seen["formCard"]["fields"]
    assert [f["label"] for f in fields] == ["Colour *", "count *", "ok", "note"]
    assert [f["tag"] for f in fields] == ["select", "input", "input", "input"]
    assert [f["type"] for f in fields] == [None, "number", "checkbox", "text"]
    assert seen["formCard"]["buttons"] == ["Send answer", "Decline", "Cancel"]
    assert seen["formReply"] == 'You answered {"colour": "green", "count": 3, "ok": true}'


def test_server_text_is_never_markup(seen):
    card = seen["hostileCard"]
    assert card["tool"] == "<img/src=x/onerror=window.pwned=1>"
    assert json.loads(card["args"]) == {"<b>bold</b>": "<script>window.pwned=2</script>"}
    assert seen["hostilePrompt"] == '<img src=x onerror="window.pwned=3"> <script>window.pwned=4</script>'
    assert seen["injected"] == {"pwned": None, "elements": 0} and seen["dialogs"] == []


def test_expired_question_is_abandoned_and_the_conversation_goes_on(seen):
    e = seen["expired"]
    assert e["card"]["outcome"] == "Expired before it was answered."
    assert e["note"] == "The question expired; the run ended."
    assert e["next"].startswith("You said: still there?")


def test_no_console_errors_and_every_run_ended(seen):
    assert seen["consoleErrors"] == []
    assert "cancelled" not in seen["outcomes"] and len(seen["outcomes"]) == 5
