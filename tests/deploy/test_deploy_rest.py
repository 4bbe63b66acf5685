"""Three `onedoor serve` processes on one PostgreSQL behind a round-robin balancer, as
docs/deploy.md sets them up: a REST client works as if there were one server."""

from __future__ import annotations

import json
import re
import signal
import threading
import time
from collections import Counter

import httpx
import pytest
from deploy_harness import AUTH, Cluster, client
from onedoor_test_support import wait_for

SSE_ID = re.compile(r"^id: (.+)$", re.M)


def upstream_counts(cluster: Cluster, path: str) -> Counter:
    return Counter(line.split()[-1] for line in cluster.upstreams() if f" {path} " in line)


def test_requests_go_round_robin_and_a_thread_continues_on_any_server(tmp_path, postgres, balancer):
    with Cluster(tmp_path, postgres.dsn, balancer=balancer) as cluster, client(cluster) as http:
        made = http.post("/rest/threads", json={"title": "shared"})
        assert made.status_code == 201, made.text
        thread_id = made.json()["id"]
        for turn in range(6):
            reply = http.post(f"/rest/threads/{thread_id}/chat", json={"message": f"turn {turn}"})
            assert reply.status_code == 200, reply.text
            assert f"turn {turn + 1})" in reply.json()["reply"], "each server sees every turn before it"
        thread = http.get(f"/rest/threads/{thread_id}").json()
        users = [m["content"] for m in thread["messages"] if m["role"] == "user"]
        assert users == [f"turn {n}" for n in range(6)]
        spread = upstream_counts(cluster, f"/rest/threads/{thread_id}/chat")
        assert len(spread) == 3 and set(spread.values()) == {2}, spread


def test_a_stream_dropped_on_one_server_is_read_again_through_another(tmp_path, postgres, balancer):
    options = ("scripted.delay=0.01", "rest.on_disconnect=finish")
    with Cluster(tmp_path, postgres.dsn, balancer=balancer, options=options) as cluster:
        seen_ids: list[str] = []
        with httpx.stream("POST", cluster.url + "/rest/chat/stream", headers=AUTH, json={"message": "/long 60 go"},
                          timeout=60) as response:
            for chunk in response.iter_text():
                seen_ids += SSE_ID.findall(chunk)
                if len(seen_ids) >= 5:
                    break  # the client goes away mid-run
        run_id = seen_ids[-1].split(":")[0]
        events = []
        with client(cluster) as http:  # the next requests land on the other servers
            for _ in range(3):
                again = http.get(f"/rest/runs/{run_id}/events", headers={"last-event-id": seen_ids[-1]},
                                 timeout=60)
                assert again.status_code == 200, again.text
                events = [json.loads(line[5:]) for line in again.text.splitlines() if line.startswith("data:")]
                assert events[-1]["type"] == "run_finished" and events[-1]["stop_reason"] == "end_turn", events[-1]
        deltas = [e for e in events if e["type"] == "text_delta"]
        assert deltas, "the events after the last one seen"
        assert len(set(upstream_counts(cluster, f"/rest/runs/{run_id}/events"))) >= 2


def test_a_rest_answer_arrives_at_a_server_other_than_the_one_that_asked(tmp_path, postgres, balancer):
    with Cluster(tmp_path, postgres.dsn, balancer=balancer) as cluster, client(cluster) as http:
        replies = []
        for n in range(3):  # round robin: each answer goes to the server after the one that asked
            asked = http.post("/rest/chat", json={"message": f"/question Name {n}?"})
            assert asked.status_code == 200 and asked.json()["status"] == "needs_input", asked.text
            question = asked.json()["questions"][0]
            answer = {"question_id": question["id"], "outcome": "accept", "value": {"answer": f"Ada {n}"}}
            replies.append(http.post(asked.json()["resume_url"], json={"answers": [answer]}))
        for n, reply in enumerate(replies):
            assert reply.status_code == 200, reply.text
            assert reply.json()["status"] == "completed" and f"Ada {n}" in reply.json()["reply"]
        # nginx writes a request's log line as it finishes it, a moment after the client has the reply
        wait_for(lambda: sum("/answers " in line for line in cluster.upstreams()) == 3, "nginx to log the answers")
        asking = [line.split()[-1] for line in cluster.upstreams() if " /rest/chat " in line]
        answering = [line.split()[-1] for line in cluster.upstreams() if "/answers " in line]
        assert len(asking) == len(answering) == 3
        assert all(a != b for a, b in zip(asking, answering)), (asking, answering)


def test_a_rolling_restart_under_load_fails_no_request(tmp_path, postgres, balancer):
    """50 clients chat without pause while each server in turn drains and restarts: every
    request gets its full reply (runs are far shorter than drain_grace)."""
    options = ("scripted.delay=0.005", "http.drain_grace=20", "http.shutdown_grace=3")
    with Cluster(tmp_path, postgres.dsn, balancer=balancer, options=options) as cluster:
        stop = threading.Event()
        failures: list[str] = []
        done = Counter()
        gaps: list[float] = []

        def chat(n: int) -> None:
            with client(cluster) as http:
                last = time.monotonic()
                while not stop.is_set():
                    try:
                        reply = http.post("/rest/chat", json={"message": f"/long 20 client {n}"})
                        ok = reply.status_code == 200 and reply.json().get("stop_reason") == "end_turn"
                        if not ok:
                            failures.append(f"{reply.status_code} {reply.text[:200]}")
                    except httpx.HTTPError as exc:
                        failures.append(f"{type(exc).__name__}: {exc}")
                    now = time.monotonic()
                    gaps.append(now - last)
                    last = now
                    done[n] += 1

        threads = [threading.Thread(target=chat, args=(n,), daemon=True) for n in range(50)]
        for thread in threads:
            thread.start()
        try:
            deadline = time.monotonic() + 60
            while sum(done.values()) < 50 and time.monotonic() < deadline:
                time.sleep(0.1)
            for index in range(3):
                cluster.restart(index, signal.SIGTERM)
                before = sum(done.values())
                while sum(done.values()) < before + 50 and time.monotonic() < deadline + 120:
                    time.sleep(0.1)
        finally:
            stop.set()
            for thread in threads:
                thread.join(60)
        assert not failures, (len(failures), failures[:3], cluster.balancer_log())
        assert sum(done.values()) >= 200 and all(done[n] > 0 for n in range(50))
        print(f"rolling restart: {sum(done.values())} requests, longest gap a client saw {max(gaps):.2f} s")


def test_kill_9_of_one_server_the_balancer_takes_it_out(tmp_path, postgres, haproxy):
    """HAProxy checks /readyz: after kill -9 of one server its runs read as failed (not
    running) through the others within the lease time, and new requests all succeed."""
    options = ("scripted.delay=0.02",)
    with Cluster(tmp_path, postgres.dsn, balancer=haproxy, options=options) as cluster:
        victim = cluster.servers[0]
        assert victim is not None
        direct = httpx.Client(base_url=victim.base_url, headers=AUTH, timeout=60)
        ids: list[str] = []
        with direct.stream("POST", "/rest/chat/stream", json={"message": "/long 2000 doomed"}) as response:
            for chunk in response.iter_text():
                ids += SSE_ID.findall(chunk)
                if ids:
                    break
            cluster.kill(0)
        run_id = ids[0].split(":")[0]
        with client(cluster) as http:
            def ended_elsewhere() -> dict | None:
                reply = http.get(f"/rest/runs/{run_id}/events", timeout=60)
                if reply.status_code != 200:
                    return None
                events = [json.loads(line[5:]) for line in reply.text.splitlines() if line.startswith("data:")]
                return events[-1] if events and events[-1]["type"] in ("run_failed", "run_finished") else None



            ending = wait_for(ended_elsewhere, "the killed server's run to read as ended", timeout=60)
            assert ending["type"] == "run_failed", ending
            for n in range(12):
                reply = http.post("/rest/chat", json={"message": f"after the kill {n}"})
                assert reply.status_code == 200, reply.text


@pytest.mark.parametrize("path", ["/healthz", "/readyz"])
def test_the_balancers_probe_paths_need_no_token(tmp_path, postgres, balancer, path):
    with Cluster(tmp_path, postgres.dsn, servers=1, balancer=balancer) as cluster:
        reply = httpx.get(cluster.url + path, timeout=10)
        assert reply.status_code == 200 and set(reply.json()) == {"status"}
