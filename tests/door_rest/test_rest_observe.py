"""What an observer sees of the REST door (#27): each request inside
``onedoor_request_started`` / ``_finished`` with the caller's W3C trace context and principal,
and the runs it starts carrying that trace context (``RunInfo.meta``).

The door on uvicorn in a thread on 127.0.0.1, an observer object as the kernel's hooks.
"""

from __future__ import annotations

import threading
from typing import Any

import httpx
from onedoor.testing import scripted_kernel
from onedoor.threads.sqlite import SQLiteThreadStore
from onedoor_test_support import wait_for
from rest_helpers import parse_sse, rest_server

TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


class Observer:
    """Notes requests and runs as an OpenTelemetry plugin would see them."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.requests: list[tuple[str, Any, str | None]] = []  # (event, RequestInfo, error)
        self.runs: list[Any] = []

    def onedoor_request_started(self, request: Any) -> None:
        with self.lock:
            self.requests.append(("started", request, None))

    def onedoor_request_finished(self, request: Any, error: str | None) -> None:
        with self.lock:
            self.requests.append(("finished", request, error))

    def onedoor_run_started(self, run: Any) -> None:
        with self.lock:
            self.runs.append(run)


def test_trace_context_goes_from_the_request_to_the_run_and_the_request_is_observed():
    observer = Observer()
    kernel = scripted_kernel(hooks=observer, store=SQLiteThreadStore(":memory:"))
    headers = {"traceparent": TRACEPARENT, "tracestate": "vendor=1", "x-other": "not passed on"}
    with rest_server(kernel) as server, httpx.Client(base_url=server.base_url, timeout=30) as client:
        assert client.post("/rest/chat", json={"message": "traced"}, headers=headers).status_code == 200
        events, _ = parse_sse(client.post("/rest/chat/stream", json={"message": "streamed"}, headers=headers).text)
        assert events[-1][0] == "run_finished"
        thread = client.post("/rest/threads", json={}).json()["id"]
        assert client.get(f"/rest/threads/{thread}/state").status_code == 200
        wait_for(lambda: len(observer.requests) == 8, "every request to be finished")
    assert [run.meta for run in observer.runs] == [{"traceparent": TRACEPARENT, "tracestate": "vendor=1"}] * 2
    started = [info for what, info, _ in observer.requests if what == "started"]
    assert [info.method for info in started] == [
        "POST /chat", "POST /chat/stream", "POST /threads", "GET /threads/{thread_id}/state"]  # templates, never ids
    assert all(info.door == "rest" and info.transport == "http" and info.principal == "local" for info in started)
    assert started[0].meta == {"traceparent": TRACEPARENT, "tracestate": "vendor=1"} and started[2].meta == {}
    assert all(error is None for what, _, error in observer.requests if what == "finished")


class RunsOnly:
    """An observer of runs only: requests go unobserved (the door does not wrap them)."""

    def __init__(self) -> None:
        self.metas: list[dict[str, str]] = []

    def onedoor_run_started(self, run: Any) -> None:
        self.metas.append(dict(run.meta))


def test_runs_get_the_trace_context_whoever_observes_requests():
    observer = RunsOnly()
    kernel = scripted_kernel(hooks=observer)
    with rest_server(kernel) as server, httpx.Client(base_url=server.base_url, timeout=30) as client:
        assert client.post("/rest/chat", json={"message": "plain"}).status_code == 200
        assert client.post("/rest/chat", json={"message": "traced"}, headers={"TraceParent": TRACEPARENT}).status_code == 200
    assert observer.metas == [{}, {"traceparent": TRACEPARENT}]


def test_fastapi_leaves_out_only_the_requests_onedoor_observes():
    """FastAPI 0.16x traces every request itself once a global provider is set; a request the
    door observes would get two SERVER spans. Its ``exclude`` skips those, and only those."""
    import inspect
    from types import SimpleNamespace

    from fastapi import FastAPI
    from onedoor_door_rest.observing import fastapi_telemetry

    observed = fastapi_telemetry(SimpleNamespace(kernel=scripted_kernel(hooks=Observer())))
    unobserved = fastapi_telemetry(SimpleNamespace(kernel=scripted_kernel()))
    if "telemetry" not in inspect.signature(FastAPI.__init__).parameters:
        assert observed == unobserved == {}  # an older FastAPI: nothing of its own to leave out
        return
    scope = {"type": "http", "method": "POST", "path": "/chat"}
    assert observed["telemetry"]["exclude"](scope) is True
    assert unobserved["telemetry"]["exclude"](scope) is False
    FastAPI(**observed)  # an argument FastAPI takes
