"""Fuzz the live OpenAPI document with schemathesis: no 5xx, every response as documented.

Runs the `schemathesis run` CLI against a real `onedoor serve --door rest --token …`
process on 127.0.0.1, over every operation (the resume calls included, following the
OpenAPI links from a reply's run_id), with every check on (server errors, status codes, content types,
response schemas including each SSE event, negative data rejection, ignored auth…).
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
    with start_server(["--door", "rest", "--token", TOKEN, "-o", "limits.max_message_chars=4000"]) as server:
        result = subprocess.run(
            [
                *command, "run", f"{server.base_url}/rest/openapi.json",
                "--header", f"Authorization: Bearer {TOKEN}",
                "--checks", "all",
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
    # /runs/{run_id}/events, and the threads: create, list, get, delete, chat, chat/stream
    assert "Selected: 13/13" in output and "Tested: 13" in output
