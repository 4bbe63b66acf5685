"""Usage and trace context through the AG-UI door (real uvicorn, in-process): RUN_FINISHED and
RUN_ERROR carry the kernel's usage as AG-UI TokenUsage, and the W3C trace context of the
request reaches observers (the request's and the run's ``meta``)."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
from ag_ui.core import RunErrorEvent, RunFinishedEvent
from agui_helpers import agui_server, parse_sse, run_input
from onedoor import Backend, ModelUsage, RunFinished, RunStarted, TextDelta, UsageReported
from onedoor_test_support import Recorder

TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


class Observer(Recorder):
    """Runs, and the requests the door serves."""

    def __init__(self) -> None:
        super().__init__()
        self.requests: list[Any] = []

    def onedoor_request_started(self, request: Any) -> None:
        self.requests.append(request)


def test_run_finished_carries_the_kernels_usage():
    with agui_server() as (server, _, recorder):
        body = run_input("count these four words")
        evs = parse_sse(httpx.post(f"{server.base_url}/agui/", json=body, timeout=30).text)
        outcome = recorder.wait_finished(body["runId"])
    finished = evs[-1]
    RunFinishedEvent.model_validate(finished)  # the Python SDK's own model takes it
    (entry,) = outcome.usage
    assert finished["usage"] == [{"provider": entry.provider, "model": entry.model, "inputTokens": entry.input_tokens,
                                  "outputTokens": entry.output_tokens, "totalTokens": entry.input_tokens + entry.output_tokens}]
    assert entry.input_tokens == 4 and entry.output_tokens == sum(1 for e in evs if e["type"] == "TEXT_MESSAGE_CONTENT")


def test_run_error_carries_usage_too():
    with agui_server() as (server, _, _):
        evs = parse_sse(httpx.post(f"{server.base_url}/agui/", json=run_input("/error now"), timeout=30).text)
    error = evs[-1]
    RunErrorEvent.model_validate(error)
    assert error["type"] == "RUN_ERROR" and error["usage"][0]["model"] == "scripted" and error["usage"][0]["inputTokens"] == 2


def test_cached_and_reasoning_tokens_are_parts_of_the_totals():
    class Counting:
        async def run(self, message: str, *, history: Any = None, context: Any = None) -> Any:
            yield RunStarted(context.run_id)
            yield UsageReported((ModelUsage("m1", "p", 100, 20, cache_read_tokens=60, reasoning_tokens=5, requests=1),))
            yield TextDelta("ok")
            yield RunFinished(context.run_id, "ok", usage=(ModelUsage("m1", "p", 10, 2, cache_write_tokens=3, requests=1),
                                                           ModelUsage("m2", "q", 1, 1)))

    with agui_server(backend=Backend("counting", Counting)) as (server, _, _):
        evs = parse_sse(httpx.post(f"{server.base_url}/agui/", json=run_input("hi"), timeout=30).text)
    assert evs[-1]["usage"] == [
        {"provider": "p", "model": "m1", "inputTokens": 110, "outputTokens": 22, "totalTokens": 132, "reasoningTokens": 5,
         "cachedInputTokens": 60, "cacheWriteInputTokens": 3},
        {"provider": "q", "model": "m2", "inputTokens": 1, "outputTokens": 1, "totalTokens": 2},
    ]


def test_trace_context_reaches_the_request_and_the_run():
    observer = Observer()
    with agui_server(hooks=observer) as (server, _, _):
        headers = {"traceparent": TRACEPARENT, "tracestate": "vendor=1", "x-other": "no"}
        body = run_input("traced")
        response = httpx.post(f"{server.base_url}/agui/", json=body, headers=headers, timeout=30)
        assert response.status_code == 200
        observer.wait_finished(body["runId"])
        httpx.get(f"{server.base_url}/agui/capabilities", timeout=30)
    (run,) = observer.started
    assert run.meta == {"traceparent": TRACEPARENT, "tracestate": "vendor=1"} and run.door == "agui"
    served = [r for r in observer.requests if r.method == "POST /"]
    assert len(served) == 1 and served[0].meta == run.meta and served[0].door == "agui" and served[0].transport == "http"
    assert any(r.method == "GET /capabilities" and r.meta == {} for r in observer.requests)


def test_a_request_without_trace_context_gives_runs_empty_meta():
    with agui_server() as (server, _, recorder):
        body = run_input("plain", runId=uuid.uuid4().hex)
        assert parse_sse(httpx.post(f"{server.base_url}/agui/", json=body, timeout=30).text)[-1]["type"] == "RUN_FINISHED"
        assert recorder.started[0].meta == {}
