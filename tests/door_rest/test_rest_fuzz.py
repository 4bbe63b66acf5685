"""Fuzz the live OpenAPI document with schemathesis: no 5xx, every response as documented.

Runs the `schemathesis run` CLI against a real `onedoor serve --door rest --token …`
process on 127.0.0.1, over every operation (the resume calls included, following the
OpenAPI links from a reply's run_id), with every check on (server errors, status codes, content types,
response schemas including each SSE event, negative data rejection, ignored auth…; CONFIG says
where a check needs to know more than the schema says).
The seed is fixed so CI is repeatable; set ONEDOOR_FUZZ_SEED / ONEDOOR_FUZZ_EXAMPLES to
explore further.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from onedoor_transport_http.testing import start_server
from rest_helpers import TOKEN


def _warnings_but_missing_test_data() -> list[str]:
    """Every schemathesis warning except ``missing_test_data``: the resume calls need the
    ids of a suspended run's questions, which fuzzed chat messages never produce, so they
    answer 404 here (test_rest_json_fuzz.py fuzzes them against real open questions)."""
    try:
        from schemathesis.core.warnings import SchemathesisWarning
    except ImportError:
        return []
    kept = [w.value for w in SchemathesisWarning if w.value != "missing_test_data"]
    return ["--warnings", ",".join(kept)] if kept else []


# Statuses a request that fits the schema may get besides schemathesis' defaults (2xx, 3xx, 401, 403,
# 404, 409, 429), where the schema cannot say more: a part that fits it but not the kernel's checks
# of content (bytes that are not its media type, bad base64, data and a URL at once: 422; a kind the
# backend does not take: 415; the text that names the files, or their bytes, past a limit: 413), a
# JSON Patch that does not apply to the thread's state (422), an If-Match of another version (412).
# The chat calls' uploads are not checked for refusing "negative" data: every form field is text, so
# the integer schemathesis puts in a text field arrives as that text, a message the agent answers.
CHAT = ["2xx", "3xx", "401", "403", "404", "409", "413", "415", "422", "429"]
CONFIG = "[checks]\nenabled = true  # every check (an operation below may turn one off)\n\n" + "".join(
    f'[[operations]]\ninclude-name = "POST {path}"\n'
    f"checks.positive_data_acceptance.expected-statuses = {CHAT!r}\n"
    "checks.negative_data_rejection.enabled = false\n\n".replace("'", '"')
    for path in ("/chat", "/chat/stream", "/threads/{thread_id}/chat", "/threads/{thread_id}/chat/stream")
) + """[[operations]]
include-name = "PATCH /threads/{thread_id}/state"
checks.positive_data_acceptance.expected-statuses = ["2xx", "3xx", "401", "403", "404", "409", "412", "422", "429"]

[[operations]]
include-name = "PUT /threads/{thread_id}/state"
checks.positive_data_acceptance.expected-statuses = ["2xx", "3xx", "401", "403", "404", "409", "412", "429"]
"""


def _schemathesis() -> list[str] | None:
    script = Path(sys.executable).parent / "schemathesis"
    if script.exists():
        return [str(script)]
    found = shutil.which("schemathesis")
    return [found] if found else None


@pytest.mark.fuzz
@pytest.mark.timeout(240)
def test_schemathesis_finds_no_server_errors(tmp_path):
    command = _schemathesis()
    if command is None:
        pytest.skip("schemathesis is not installed (the rest combo installs it)")
    seed = os.environ.get("ONEDOOR_FUZZ_SEED", "20261130")
    examples = os.environ.get("ONEDOOR_FUZZ_EXAMPLES", "60")
    config = tmp_path / "schemathesis.toml"
    config.write_text(CONFIG)
    with start_server(["--door", "rest", "--token", TOKEN, "-o", "limits.max_message_chars=4000"]) as server:
        result = subprocess.run(
            [
                *command, "--config-file", str(config), "run", f"{server.base_url}/rest/openapi.json",
                "--header", f"Authorization: Bearer {TOKEN}",
                "--max-examples", examples,
                "--seed", seed,
                "--workers", "1",
                "--generation-database", "none",
                "--request-timeout", "30",
                "--no-color",
                *_warnings_but_missing_test_data(),
            ],
            capture_output=True, text=True, cwd=tmp_path, timeout=220,
            env={**os.environ, "SCHEMATHESIS_HOOKS": ""},
        )
    output = result.stdout + result.stderr
    artifacts = os.environ.get("ONEDOOR_TEST_ARTIFACTS")
    if artifacts:
        Path(artifacts, "schemathesis-rest.txt").write_text(output)
    assert result.returncode == 0, output[-6000:]
    assert "No issues found" in output, output[-3000:]
    # /, /chat, /chat/stream, /runs/{run_id}/answers, .../answers/stream, /runs/{run_id}/questions,
    # /runs/{run_id}/events, the threads: create, list, get, delete, chat, chat/stream, and a thread's
    # state: get, patch, put
    assert "Selected: 16/16" in output and "Tested: 16" in output
