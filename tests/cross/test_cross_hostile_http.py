"""The shared hostile-input corpus against every HTTP door, on one real server.

For each door: every :data:`onedoor.testing.hostile.RAW` message (plus the line-breaking
ones, and for MCP the JSON-RPC ones) as the body of each endpoint that starts or changes
something, and :func:`~onedoor.testing.hostile.mutations` of the door's valid request.
Each case must get a 4xx JSON error or a normal answer (never a 5xx, never a cut stream);
a well-behaved request right after it still works; and the server's logs hold no
traceback. The counts go to ``hostile-http-<door>.json`` in the test artifacts folder.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import pytest
from cross_helpers import ENDPOINTS, INIT, MCP_HEADERS, doors_server, installed_asgi_doors
from onedoor.testing.hostile import Case, all_raw, mutations, traceback_in
from onedoor_test_support import wait_for

JSON_TYPE = {"content-type": "application/json"}
TOOLS_CALL = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "ask", "arguments": {"message": "hi"}}}


def artifacts() -> Path:
    folder = Path(os.environ.get("ONEDOOR_TEST_ARTIFACTS") or Path(tempfile.gettempdir()) / "onedoor-test-artifacts")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


class Tally:
    """What the corpus did to one door."""

    def __init__(self, door: str) -> None:
        self.door = door
        self.statuses: Counter[int] = Counter()
        self.cases: set[str] = set()
        self.combinations = 0
        self.failures: list[str] = []

    def check(self, where: str, response: httpx.Response) -> None:
        self.combinations += 1
        self.statuses[response.status_code] += 1
        status = response.status_code
        if status >= 500:
            self.failures.append(f"{where}: {status} {response.text[:200]}")
            return
        kind = response.headers.get("content-type", "")
        if status >= 400:
            try:
                body = json.loads(response.content)
            except ValueError:
                self.failures.append(f"{where}: {status} with a body that is not JSON: {response.text[:120]!r}")
                return
            if self.door == "mcp":  # the transport's shape, or the SDK's JSON-RPC error
                ok = isinstance(body, dict) and ("detail" in body or "jsonrpc" in body) and "error" in body
            else:
                ok = isinstance(body, dict) and set(body) == {"error", "detail"}
            if not ok:
                self.failures.append(f"{where}: {status} with an unexpected error body {response.text[:160]!r}")
        elif kind.startswith("text/event-stream") and self.door != "mcp":
            tail = response.text.rstrip("\n").rsplit("\n\n", 1)[-1]
            if not any(end in tail for end in ("run_finished", "run_failed", "RUN_FINISHED", "RUN_ERROR")):
                self.failures.append(f"{where}: a stream that ends without its terminal event: {tail[:160]!r}")

    def summary(self, logs: str) -> dict[str, Any]:
        return {
            "door": self.door,
            "cases": len(self.cases),
            "combinations": self.combinations,
            "statuses": dict(sorted(self.statuses.items())),
            "5xx": sum(n for s, n in self.statuses.items() if s >= 500),
            "tracebacks": sum(1 for line in logs.splitlines() if traceback_in(line)),
            "failures": self.failures,
        }


def post(client: httpx.Client, path: str, case: Case, headers: dict[str, str]) -> httpx.Response:
    return client.post(path, content=case.payload, headers={**JSON_TYPE, **headers})


def mcp_session(client: httpx.Client) -> dict[str, str]:
    init = client.post("/mcp/", json=INIT, headers=MCP_HEADERS)
    assert init.status_code == 200, init.text
    headers = {**MCP_HEADERS, "mcp-session-id": init.headers["mcp-session-id"]}
    note = client.post("/mcp/", json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers)
    assert note.status_code == 202, note.text
    return headers


def mcp_ping(client: httpx.Client, headers: dict[str, str]) -> bool:
    r = client.post("/mcp/", json={"jsonrpc": "2.0", "id": "ping-1", "method": "ping"}, headers=headers)
    return r.status_code == 200 and '"result"' in r.text


@pytest.mark.timeout(600)
@pytest.mark.parametrize("door", installed_asgi_doors())
def test_hostile_corpus_against_the_door(door):
    if door not in {e.door for e in ENDPOINTS}:
        pytest.skip(f"no probe for door {door!r}")
    with doors_server() as server, httpx.Client(base_url=server.base_url, timeout=60) as client:
        tally = Tally(door)
        raw = all_raw(jsonrpc=door == "mcp", line_framed=False)
        for endpoint in [e for e in ENDPOINTS if e.door == door]:
            cases = raw + list(mutations(endpoint.valid()))
            for case in cases:
                tally.cases.add(f"{endpoint.path} {case.name}")
                tally.check(f"{endpoint.path} {case.name}", post(client, endpoint.path, case, endpoint.headers))
                server.normal_request(door)
        if door == "mcp":  # inside a live session too: the JSON-RPC corpus and tools/call mutations
            headers = mcp_session(client)
            for case in raw + list(mutations(TOOLS_CALL)):
                where = f"/mcp/ (in a session) {case.name}"
                tally.cases.add(where)
                tally.check(where, post(client, "/mcp/", case, headers))
                if not mcp_ping(client, headers):
                    tally.failures.append(f"{where}: the session stopped answering")
                    headers = mcp_session(client)
        result = tally.summary(server.logs.text)
        (artifacts() / f"hostile-http-{door}.json").write_text(json.dumps(result, indent=1))
        print(f"\nhostile corpus, {door}: {result['cases']} cases, {result['combinations']} requests, "
              f"statuses {result['statuses']}, 5xx {result['5xx']}, tracebacks {result['tracebacks']}")
        assert tally.failures == [], "\n".join(tally.failures[:30])
        assert traceback_in(server.logs.text) is None, server.logs.text[-4000:]
        wait_for(lambda: server.kernel.active_runs == 0, "every run to end")
