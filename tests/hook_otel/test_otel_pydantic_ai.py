"""The pydantic-ai backend at the fake model server: pydantic-ai's own spans (its agent
run, the model requests, its tool call) nest under onedoor's ``invoke_agent`` span, and
onedoor's usage is the model server's."""

from __future__ import annotations

import httpx
import pytest
from otel_support import TRACE_ID, TRACEPARENT, Served, ancestors, one, otel_env

pytest.importorskip("onedoor_door_rest", reason="the REST door is not installed")
pytest.importorskip("onedoor_backend_pydantic_ai", reason="the pydantic-ai backend is not installed")
fake = pytest.importorskip("onedoor_fake_model_server")


def model_spans(spans: list) -> list:
    """pydantic-ai's spans of model requests: they carry the usage the model server sent."""
    return [s for s in spans if s.scope.startswith("pydantic-ai") and "gen_ai.usage.input_tokens" in s.attributes
            and s.attributes.get("gen_ai.operation.name") == "chat"]


@pytest.fixture(scope="module")
def traced(tmp_path_factory):
    """One served run of the instrumented agent calling its tool: (spans, model requests)."""
    from otlp_receiver import Receiver

    receiver = Receiver().start()
    try:
        with fake.fake_model_server() as model:
            env = otel_env(receiver.url, ONEDOOR_TEST_MODEL_URL=model.base_url)
            args = ["--door", "rest", "-b", "pydantic-ai", "-o", "agent=traced_agent:agent"]
            with Served(args, env) as served, httpx.Client(base_url=served.base_url, timeout=60) as client:
                reply = client.post("/rest/chat", json={"message": '/tool word_count {"text": "one two three"}'},
                                    headers={"traceparent": TRACEPARENT})
                assert reply.status_code == 200, reply.text
                assert served.stop() == 0  # the exporter sends what it holds
            requests = model.chat_requests()
        return receiver.spans(), requests
    finally:
        receiver.stop()


def test_pydantic_ais_spans_nest_under_the_run(traced):
    spans, requests = traced
    run = one(spans, "invoke_agent pydantic-ai")
    assert run.trace_id == TRACE_ID
    chats = model_spans(spans)
    assert len(chats) == len(requests) == 2, [s.name for s in spans]  # the tool call, then the reply
    for chat in chats:
        assert run in ancestors(chat, spans), f"{chat.name} is not inside the run"
    ours = one([s for s in spans if s.scope == "onedoor"], "execute_tool word_count")  # from the tool events
    assert ours.parent_id == run.span_id
    theirs = [s for s in spans if s.scope.startswith("pydantic-ai") and "word_count" in s.name]
    assert theirs and all(run in ancestors(s, spans) for s in theirs)
    assert run in ancestors(one(spans, "invoke_agent agent"), spans)  # pydantic-ai's agent run


def test_the_runs_usage_is_the_model_servers(traced):
    spans, requests = traced
    run = one(spans, "invoke_agent pydantic-ai")
    sent = [r.usage for r in requests]  # what the fake model server answered each request with
    assert len(sent) == 2 and all(sent)
    assert run.attributes["gen_ai.usage.input_tokens"] == sum(u["prompt_tokens"] for u in sent)
    assert run.attributes["gen_ai.usage.output_tokens"] == sum(u["completion_tokens"] for u in sent)
    chats = model_spans(spans)  # and pydantic-ai's own spans agree
    assert run.attributes["gen_ai.usage.input_tokens"] == sum(c.attributes["gen_ai.usage.input_tokens"] for c in chats)
    assert run.attributes["gen_ai.request.model"] == "fake-model"
