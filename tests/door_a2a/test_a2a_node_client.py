"""The A2A door with the official JS client, @a2a-js/sdk 1.3.0 (tests/door_a2a/js, pinned in
package-lock.json), against a real `onedoor serve` process: the card, a reply, a stream that
grows (applied as the protocol says, it is the reply once; the stored task holds it as one
part), a cancel that stops the backend (the observer hook sees it), an unknown task, and a
wrong token; and content (js/content.mjs): raw, url and data parts in, a type the agent
does not take refused with the SDK's ContentTypeNotSupportedError, the reply's image out,
the shared state and the usage, and the same parts through the SDK's A2A 0.3 transport."""

from __future__ import annotations

import base64
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from a2a_helpers import TOKEN
from onedoor.builtins.scripted_extras import DOT_PNG
from onedoor_test_support import node_or_skip

pytestmark = pytest.mark.timeout(120)

JS = Path(__file__).parent / "js"


def run_client(node: str, base: str, token: str, script: str = "client.mjs") -> dict[str, Any]:
    done = subprocess.run([node, str(JS / script), base], capture_output=True, text=True, timeout=90,
                          env={**os.environ, "TOKEN": token, "PNG": base64.b64encode(DOT_PNG).decode()})
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_js_client_sends_streams_and_cancels(served: Any) -> None:
    node = node_or_skip(JS, "@a2a-js/sdk")
    out = run_client(node, served.a2a_url, TOKEN)
    assert "error" not in out, out
    assert out["card"] == {"name": "onedoor (scripted)", "streaming": True, "schemes": ["bearer"]}
    assert out["send"] == {"state": "TASK_STATE_COMPLETED", "text": "You said: hello node (2 words, turn 1)", "parts": 1}
    stream = out["stream"]
    reply = "You said: node stream please (3 words, turn 1)"
    assert len(stream["pieces"]) > 2 and stream["last"] == "TASK_STATE_COMPLETED"
    assert "".join(stream["pieces"]) == reply  # the deltas, as they came
    assert stream["text"] == reply  # the artifact the updates make (the last one replaces it: the whole text)
    assert stream["final"] == {"append": False, "lastChunk": True, "parts": 1}
    assert stream["stored"] == [reply]
    assert out["cancel"]["state"] == "TASK_STATE_CANCELED" and out["cancel"]["get"] == "TASK_STATE_CANCELED"
    assert out["cancel"]["seen"] < 50
    assert "Task not found" in out["unknown"], out["unknown"]
    outcome = served.outcome_of("node-cancel-me")
    assert outcome["stop_reason"] == "cancelled" and outcome["workers_alive"] == 0, outcome


def test_the_js_client_reports_a_wrong_token(served: Any) -> None:
    node = node_or_skip(JS, "@a2a-js/sdk")
    out = run_client(node, served.a2a_url, "wrong-token-0123456789abcdef")
    assert "401" in out.get("error", ""), out


def test_the_js_client_sends_and_gets_content_state_and_usage(served: Any) -> None:
    node = node_or_skip(JS, "@a2a-js/sdk")
    out = run_client(node, served.a2a_url, TOKEN, "content.mjs")
    assert "error" not in out, out
    assert out["modes"]["input"] == out["modes"]["output"] and "image/*" in out["modes"]["input"]
    received = (f"Received: 1 image (image/png, {len(DOT_PNG):,} bytes, dot.png); 1 document (application/pdf, "
                "https://example.com/report.pdf); 1 data (application/json). You said: ")
    assert out["parts"]["state"] == "TASK_STATE_COMPLETED" and out["parts"]["reply"].startswith(received + "from node")
    assert out["alone"]["state"] == "TASK_STATE_COMPLETED"
    assert out["alone"]["reply"].startswith(f"Received: 1 image (image/png, {len(DOT_PNG):,} bytes, dot.png). ")
    refused = out["refused"]
    assert refused["name"] == "ContentTypeNotSupportedError" and refused["typed"], refused
    assert "font/woff" in refused["message"]
    image = out["image"]
    assert image["final"][0] == {"kind": "raw", "mediaType": "image/png", "size": len(DOT_PNG)}, image
    assert [p["kind"] for p in image["final"]] == ["raw", "text"]
    kernel = served.outcome_of(image["message"])["usage"]
    assert image["statusUsage"] == kernel and image["taskUsage"] == kernel
    assert out["state"]["value"] == {"todo": ["milk", "bread"]} and out["state"]["flag"] == {"onedoor": "state"}
    assert out["state"]["version"] >= 1
    assert out["legacy"]["state"] == "TASK_STATE_COMPLETED"
    assert out["legacy"]["reply"].startswith(received + "from an old client"), out["legacy"]
    old = [r for r in served.requests() if r["method"] == "message/send"]
    assert old, "the 0.3 transport sent message/send"
