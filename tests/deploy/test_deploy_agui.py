"""The AG-UI door on three `onedoor serve` processes on one PostgreSQL behind a round-robin
nginx (docs/deploy/): a reader that reattaches lands on whichever server, and gets the same
frames and ids each time; a resume lands on another server than the run's and goes on."""

from __future__ import annotations

import json
import uuid
from collections import Counter
from typing import Any

import httpx
import pytest
from deploy_harness import AUTH, Cluster, client
from onedoor_test_support import wait_for

pytest.importorskip("onedoor_door_agui", reason="the AG-UI door (onedoor-door-agui) is not installed")
OPTIONS = ("scripted.delay=0.01", "agui.keepalive=0")


def frames(response: httpx.Response) -> list[tuple[str | None, dict[str, Any]]]:
    """(id, event) of each SSE frame."""
    assert response.status_code == 200, response.text
    out: list[tuple[str | None, dict[str, Any]]] = []
    for block in response.text.split("\n\n"):
        lines = block.splitlines()
        data = [line[6:] for line in lines if line.startswith("data: ")]
        if data:
            ids = [line[4:] for line in lines if line.startswith("id: ")]
            out.append((ids[-1] if ids else None, json.loads("\n".join(data))))
    return out


def leave_after(response: httpx.Response, deltas: int = 3) -> str:
    """Read until ``deltas`` text deltas came, then go away: the last cursor seen."""
    cursor, seen = "", 0
    for line in response.iter_lines():
        cursor = line[4:] if line.startswith("id: ") else cursor
        seen += line.startswith("data: ") and '"TEXT_MESSAGE_CONTENT"' in line
        if seen >= deltas:
            break
    return cursor


def spread(cluster: Cluster, path: str) -> Counter:
    return Counter(line.split()[-1] for line in cluster.upstreams() if f" {path}" in line)


def test_a_reader_coming_back_through_any_server_gets_the_same_frames(tmp_path, postgres, balancer):
    with Cluster(tmp_path, postgres.dsn, balancer=balancer, doors=("agui",), options=OPTIONS) as cluster, \
            client(cluster) as http:
        tid, run_id = f"deploy-{uuid.uuid4().hex[:8]}", uuid.uuid4().hex
        body = {"threadId": tid, "runId": run_id, "messages": [{"id": "u1", "role": "user", "content": "/long 150 go"}],
                "forwardedProps": {"onDisconnect": "finish"}}
        with httpx.stream("POST", cluster.url + "/agui/", json=body, headers=AUTH, timeout=60) as started:
            leave_after(started)
        assert http.get(f"/agui/threads/{tid}").json()["running"] == {"runId": run_id}
        with httpx.stream("GET", f"{cluster.url}/agui/runs/{run_id}/events", headers=AUTH, timeout=60) as first:
            cursor = leave_after(first)
        assert cursor.startswith(run_id + ":")
        again = [frames(http.get(f"/agui/runs/{run_id}/events", headers={"Last-Event-ID": cursor})) for _ in range(3)]
        assert again[0] == again[1] == again[2] and again[0][-1][1]["outcome"] == {"type": "success"}
        whole = [frames(http.get(f"/agui/runs/{run_id}/events")) for _ in range(3)]
        assert whole[0] == whole[1] == whole[2]
        cut = next(k for k, (i, _) in enumerate(whole[0]) if i == cursor)
        assert whole[0][cut + 1:] == again[0], "after the cursor: exactly what followed it"
        wait_for(lambda: sum(spread(cluster, f"/agui/runs/{run_id}/events").values()) == 7, "nginx to log the readers")
        assert len(spread(cluster, f"/agui/runs/{run_id}/events")) == 3, cluster.upstreams()


def test_a_resume_goes_on_through_another_server(tmp_path, postgres, balancer):
    with Cluster(tmp_path, postgres.dsn, balancer=balancer, doors=("agui",), options=OPTIONS) as cluster, \
            client(cluster) as http:
        tid, first = f"deploy-ask-{uuid.uuid4().hex[:8]}", uuid.uuid4().hex
        ask = {"threadId": tid, "runId": first,
               "messages": [{"id": "u1", "role": "user", "content": '/ask deploy {"env": "prod"}'}]}
        asked = frames(http.post("/agui/", json=ask))
        interrupt = asked[-1][1]["outcome"]["interrupts"][0]
        second = {"threadId": tid, "runId": uuid.uuid4().hex, "messages": [],
                  "resume": [{"interruptId": interrupt["id"], "status": "resolved", "payload": {"approved": True}}]}
        resumed = frames(http.post("/agui/", json=second))
        def posts() -> list[str]:
            return [line.split()[-1] for line in cluster.upstreams() if line.startswith("POST /agui/")]

        wait_for(lambda: len(posts()) == 2, "nginx to log both requests")
        assert posts()[0] != posts()[1], "the resume landed on another server than the run"
        assert resumed[0][1]["parentRunId"] == first and resumed[-1][1]["outcome"] == {"type": "success"}
        assert "".join(e["delta"] for _, e in resumed if e["type"] == "TEXT_MESSAGE_CONTENT") == \
            "Approved (allow_once): ran deploy"
        readers = [frames(http.get(f"/agui/runs/{second['runId']}/events")) for _ in range(3)]
        assert readers[0] == readers[1] == readers[2]
        live = [e for _, e in resumed if e["type"] != "RUN_FINISHED"]
        assert [e for _, e in readers[0] if e["type"] not in ("MESSAGES_SNAPSHOT", "RUN_FINISHED")] == live
        stored = http.get(f"/agui/threads/{tid}").json()
        assert stored["messages"][-1]["content"] == "Approved (allow_once): ran deploy" and stored["running"] is None
