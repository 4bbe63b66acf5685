"""Metrics: over OTLP to the local receiver, and scraped from ``/metrics`` (behind the
server's token) and parsed with prometheus_client's own parser."""

from __future__ import annotations

import httpx
import pytest
from onedoor_test_support import wait_for
from otel_support import TOKEN, Served, clean_env, otel_env

pytest.importorskip("onedoor_door_rest", reason="the REST door is not installed")
parser = pytest.importorskip("prometheus_client.parser")

AUTH = {"authorization": f"Bearer {TOKEN}"}


def scrape(client: httpx.Client) -> dict[str, list]:
    """``{family name: [samples]}`` of one scrape."""
    reply = client.get("/metrics", headers=AUTH)
    assert reply.status_code == 200, reply.text
    assert reply.headers["content-type"].startswith("text/plain")
    return {family.name: family.samples for family in parser.text_string_to_metric_families(reply.text)}


def value(families: dict[str, list], sample: str, **labels: str) -> float:
    """The sum of the samples named ``sample`` whose labels include ``labels`` (0 if none)."""
    family = sample.removesuffix("_total").removesuffix("_count").removesuffix("_sum").removesuffix("_bucket")
    return sum(s.value for s in families.get(family, []) if s.name == sample
               and all(s.labels.get(k) == v for k, v in labels.items()))


def test_prometheus_counters_move_by_exactly_the_runs_made():
    env = clean_env(OTEL_METRICS_EXPORTER="prometheus")
    args = ["--door", "rest", "-o", f"token={TOKEN}", "-o", "max_concurrent_runs=1"]
    with Served(args, env) as served, httpx.Client(base_url=served.base_url, timeout=30) as client:
        refused = client.get("/metrics")
        assert refused.status_code == 401 and refused.json()["error"] == "unauthorized"
        assert client.get("/metrics", headers={"authorization": "Bearer not-the-token-at-all"}).status_code == 401
        before = scrape(client)
        runs = 3
        for index in range(runs):
            assert client.post("/rest/chat", json={"message": f"run {index}"}, headers=AUTH).status_code == 200
        assert client.post("/rest/chat", json={"message": "/fail now"}, headers=AUTH).status_code == 502
        with client.stream("POST", "/rest/chat/stream", json={"message": "/hang"}, headers=AUTH) as hanging:
            assert hanging.status_code == 200
            busy = client.post("/rest/chat", json={"message": "one too many"}, headers=AUTH)
            assert busy.status_code == 429, busy.text
        wait_for(lambda: value(scrape(client), "onedoor_runs_total", onedoor_run_outcome="cancelled") == 1,
                 "the hanging run to end cancelled once its client left")
        after = scrape(client)
    ended = {"onedoor_door": "rest", "gen_ai_agent_name": "scripted"}
    moved = value(after, "onedoor_runs_total", **ended, onedoor_run_outcome="end_turn") - value(
        before, "onedoor_runs_total", **ended, onedoor_run_outcome="end_turn")
    assert moved == runs
    assert value(after, "onedoor_runs_total", onedoor_run_outcome="failed") == 1
    assert value(after, "onedoor_runs_refused_total", onedoor_door="rest", onedoor_refusal_reason="busy") == 1
    tokens = "gen_ai_client_token_usage_count"
    # the failed and the cancelled run reported no usage (the scripted backend counts on RunFinished)
    assert value(after, tokens, gen_ai_token_type="input") - value(before, tokens, gen_ai_token_type="input") == runs
    # each "run N" message is two words: the scripted backend's input tokens
    summed = value(after, "gen_ai_client_token_usage_sum", gen_ai_token_type="input") - value(
        before, "gen_ai_client_token_usage_sum", gen_ai_token_type="input")
    assert summed == 2 * runs
    duration = value(after, "gen_ai_client_operation_duration_seconds_count", gen_ai_operation_name="invoke_agent")
    assert duration == runs + 2 and value(after, "gen_ai_client_operation_time_to_first_chunk_seconds_count") >= runs
    buckets = [s for s in after["gen_ai_client_token_usage"] if s.name.endswith("_bucket")]
    assert {s.labels["le"] for s in buckets} >= {"1.0", "4.0", "16.0", "+Inf"}


def test_active_and_parked_runs_are_gauges():
    env = clean_env(OTEL_METRICS_EXPORTER="prometheus")
    with Served(["--door", "rest", "-o", f"token={TOKEN}"], env) as served:
        with httpx.Client(base_url=served.base_url, timeout=30) as client:
            idle = scrape(client)
            assert value(idle, "onedoor_runs_active") == 0 and value(idle, "onedoor_runs_parked") == 0
            parked = client.post("/rest/chat", json={"message": "/ask deploy {}"}, headers=AUTH).json()
            assert parked["status"] == "needs_input"
            wait_for(lambda: value(scrape(client), "onedoor_runs_parked") == 1, "the parked run in the gauge")
            with client.stream("POST", "/rest/chat/stream", json={"message": "/hang"}, headers=AUTH) as response:
                assert response.status_code == 200
                wait_for(lambda: value(scrape(client), "onedoor_runs_active") >= 1, "the hanging run in the gauge")
            wait_for(lambda: value(scrape(client), "onedoor_runs_active") == value(scrape(client), "onedoor_runs_parked"),
                     "the hanging run to end once its client left")


def test_otlp_metrics_reach_the_receiver(receiver):
    with Served(["--door", "rest"], otel_env(receiver.url)) as served, httpx.Client(base_url=served.base_url) as client:
        for index in range(2):
            assert client.post("/rest/chat", json={"message": f"hello {index} there"}).status_code == 200

        def counted(metrics: dict) -> bool:
            return sum(v for labels, v in metrics.get("onedoor.runs", []) if labels.get("onedoor.run.outcome") == "end_turn") == 2

        metrics = receiver.wait_for_metrics(counted, "two runs in onedoor.runs")
    tokens = {labels["gen_ai.token.type"]: point for labels, point in metrics["gen_ai.client.token.usage"]}
    assert tokens["input"] == (2, 6.0)  # two runs of three words
    [(labels, _)] = metrics["gen_ai.client.operation.duration"]
    assert labels["gen_ai.request.model"] == "scripted" and labels["gen_ai.provider.name"] == "onedoor"
    assert "onedoor.runs.active" in metrics and "onedoor.runs.parked" in metrics
