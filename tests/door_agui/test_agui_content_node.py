"""The official @ag-ui/client against `onedoor serve` (SQLite threads): content parts in and out,
usage on the terminal events, the capabilities document (checked with @ag-ui/core's schema),
and a client that joins a thread it does not hold."""

from __future__ import annotations

import base64
import json
import subprocess

import pytest
from agui_helpers import JS, TOKEN, node_or_skip
from onedoor.builtins.scripted_extras import DOT_PNG
from onedoor_transport_http.testing import start_server

PNG = base64.b64encode(DOT_PNG).decode()
pytestmark = pytest.mark.timeout(240)


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    node = node_or_skip()
    db = tmp_path_factory.mktemp("agui-content-node") / "threads.sqlite3"
    args = ["--door", "agui", "-b", "scripted", "-o", f"sqlite.path={db}", "-o", "agui.keepalive=0"]
    with start_server(args, env={"ONEDOOR_HTTP_TOKEN": TOKEN}) as server:
        proc = subprocess.run([node, "content.mjs", server.base_url, TOKEN, PNG], cwd=JS, capture_output=True, text=True,
                              timeout=180)
        assert proc.returncode == 0, proc.stderr[-3000:]
        out = json.loads(proc.stdout.strip().splitlines()[-1])
        assert server.proc.poll() is None, "the server died"
    return out


def last_reply(run):
    return [m for m in run["messages"] if m["role"] == "assistant" and m.get("content")][-1]["content"]


def test_text_and_image_from_the_official_client(results):
    r = results["image"]
    assert r["error"] is None and r["runError"] is None
    assert last_reply(r).startswith("Received: 1 image (image/png, 70 bytes, cat.png). You said: what is this?")
    # the snapshot gives the client's message back as it sent it
    assert r["messages"][0]["content"] == r["sent"][0]["content"]
    assert r["messages"][0]["content"][1]["source"] == {"type": "data", "value": PNG, "mimeType": "image/png"}


def test_the_legacy_binary_part_the_client_converts(results):
    r = results["legacy"]
    assert r["sent"][0]["content"][0]["type"] == "binary"
    # the client's own compatibility layer rewrote it on the way out
    assert r["posted"][0]["content"] == [{"type": "image", "source": {"type": "data", "value": PNG, "mimeType": "image/png"},
                                          "metadata": {"filename": "old.png"}}]
    assert last_reply(r).startswith("Received: 1 image (image/png, 70 bytes, old.png).")


def test_a_tool_image_and_a_reply_image_reach_the_client(results):
    r = results["draw"]
    assert r["error"] is None and not [w for w in results["warnings"] if "Removed unrecognised" in w]
    tool = next(m for m in r["messages"] if m["role"] == "tool" and m["toolCallId"].endswith("_draw"))
    assert tool["content"][0] == {"type": "text", "text": "drew dot.png"}
    assert tool["content"][1]["type"] == "image" and tool["content"][1]["source"]["value"] == PNG
    activity = next(m for m in r["messages"] if m["role"] == "activity")
    assert activity["activityType"] == "onedoor.part" and activity["content"]["part"]["source"]["value"] == PNG
    assert last_reply(r).startswith("[image dot.png: image/png, 70 bytes]\nYou said: a dot")


def test_usage_on_run_finished_and_run_error(results):
    (usage,) = results["image"]["usage"]
    words = len("what is this? [image cat.png: image/png, 70 bytes]".split())  # the scripted backend counts words in
    deltas = len(last_reply(results["image"]).split(" "))  # and text deltas out (one per word)
    assert usage == {"provider": "onedoor", "model": "scripted", "inputTokens": words, "outputTokens": deltas,
                     "totalTokens": words + deltas}
    r = results["error"]
    assert "reports an error" in r["runError"] and r["usage"] is None
    (failed,) = r["errorUsage"]
    assert failed["model"] == "scripted" and failed["inputTokens"] == 4 and failed["outputTokens"] > 0


def test_capabilities_in_the_sdk_shape(results):
    c = results["capabilities"]
    assert c["status"] == 200 and c["ok"], c["issues"]
    body = c["body"]
    assert body["multimodal"]["input"] == {"image": True, "audio": True, "video": True, "pdf": True, "file": True}
    assert body["state"] == {"snapshots": True, "deltas": True, "persistentState": True}
    assert body["transport"]["streaming"] is True and body["humanInTheLoop"]["interrupts"] is True
    assert body["tools"] == {"supported": True, "clientProvided": True}
    assert body["custom"]["onedoor"]["threads"] is True


def test_a_client_that_joins_a_thread_gets_its_history(results):
    r = results["join"]
    assert r["events"][:2] == ["RUN_STARTED", "MESSAGES_SNAPSHOT"]
    users = [m["content"] for m in r["messages"] if m["role"] == "user"]
    assert users == ["first turn", "second turn", "I just arrived"]
    assert last_reply(r).startswith("You said: I just arrived") and "turn 3" in last_reply(r)
    again = results["joinedAgain"]
    assert "MESSAGES_SNAPSHOT" not in again["events"]
    assert [m["content"] for m in again["messages"] if m["role"] == "user"][-1] == "and again"
