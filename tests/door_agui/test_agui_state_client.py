"""The official @ag-ui/client applies every STATE_DELTA the door sends and ends with exactly the
state the kernel kept with the thread: 1,000 random patch sequences (hypothesis builds them
against the document as it goes, so each applies), run through one long-lived Node process
against `onedoor serve` (real uvicorn, SQLite threads)."""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from typing import Any, Iterator

import pytest
from agui_helpers import JS, TOKEN, node_or_skip
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from onedoor_transport_http.testing import start_server
from state_patches import patch_sequence

pytestmark = pytest.mark.timeout(900)
SEQUENCES = int(os.environ.get("ONEDOOR_STATE_SEQUENCES", "1000"))
BATCH = 10  # sequences per hypothesis example (run at once by the Node client)


class NodeClient:
    """One Node process running state_sequences.mjs: a JSON line of sequences in, one of results out."""

    def __init__(self, node: str, base_url: str) -> None:
        self.proc = subprocess.Popen(
            [node, "state_sequences.mjs", base_url, TOKEN], cwd=JS, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True,
        )  # fmt: skip

    def run(self, sequences: list[dict[str, Any]]) -> list[dict[str, Any]]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(sequences) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        assert line, f"the Node client died: {self.proc.stderr.read() if self.proc.stderr else ''}"
        return json.loads(line)

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait(timeout=30)


@pytest.fixture(scope="module")
def client(tmp_path_factory) -> Iterator[NodeClient]:
    node = node_or_skip()
    db = tmp_path_factory.mktemp("agui-state") / "threads.sqlite3"
    args = ["--door", "agui", "-b", "scripted", "-o", f"sqlite.path={db}", "-o", "agui.keepalive=0",
            "-o", "scripted.reasoning=false", "-o", "scripted.tool=false"]
    with start_server(args, env={"ONEDOOR_HTTP_TOKEN": TOKEN}) as server:
        node_client = NodeClient(node, server.base_url)
        try:
            yield node_client
        finally:
            node_client.close()
        assert server.proc.poll() is None, "the server died"


def as_js(value: Any) -> Any:
    """``value`` as JavaScript holds it: every number a double (the client writes 4.4e16 as
    44000000000000000, which Python reads as an int)."""
    if isinstance(value, dict):
        return {k: as_js(v) for k, v in value.items()}
    if isinstance(value, list):
        return [as_js(v) for v in value]
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return value


# no shrinking: a failing batch is reported as it was found (each example is a round of real runs)
@settings(max_examples=SEQUENCES // BATCH, deadline=None, database=None, suppress_health_check=list(HealthCheck),
          phases=(Phase.explicit, Phase.generate))
@given(batch=st.lists(patch_sequence(), min_size=BATCH, max_size=BATCH))
def test_the_client_ends_with_the_stored_state(client, batch):
    sequences = [{**sequence, "threadId": "st-" + uuid.uuid4().hex} for sequence in batch]
    for sequence, result in zip(sequences, client.run(sequences), strict=True):
        assert result["runError"] is None, result
        assert result["warnings"] == [], result["warnings"]  # every delta applied in the client
        assert result["kinds"].count("STATE_DELTA") == len(sequence["deltas"])
        assert as_js(result["stored"]) == as_js(sequence["final"])  # the kernel kept what jsonpatch makes (read by Node)
        assert as_js(result["client"]) == as_js(result["stored"])  # and the client holds exactly that
        assert result["version"] == result["storedVersion"] >= 1
