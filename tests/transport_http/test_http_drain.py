"""Health, readiness and drain, against real `onedoor serve` processes on 127.0.0.1.

/healthz and /readyz are open to a load balancer (no token) and tell it no more than
"ok" / "not ready"; the server's own token shows the details. On SIGTERM with
``drain_grace`` a run going on finishes with its real ending; past the grace it is
cancelled; without a grace it is cancelled at once (as before)."""

from __future__ import annotations

import json
import signal
import threading

import httpx
import pytest
from onedoor.errors import RunRefused
from onedoor.questions import SuspendAsker
from onedoor.testing import scripted_kernel
from onedoor_transport_http.errors import refusal
from onedoor_transport_http.testing import start_server

pytest.importorskip("onedoor_door_rest", reason="the drain tests stream a run through the REST door")

TOKEN = "drain-test-token-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def test_health_and_readiness_tell_a_caller_without_the_token_nothing_more():
    with start_server(["--door", "rest", "--token", TOKEN]) as server:
        base = server.base_url
        assert httpx.get(base + "/healthz").json() == {"status": "ok"}
        wrong = httpx.get(base + "/healthz", headers={"Authorization": "Bearer wrong-token-0123456789"})
        assert wrong.status_code == 200 and wrong.json() == {"status": "ok"}, "a wrong token is not told more, nor 401"
        details = httpx.get(base + "/healthz", headers=AUTH).json()
        assert details == {"status": "ok", "doors": ["rest"], "backend": "scripted", "active_runs": 0,
                           "parked_runs": 0, "draining": False}
        ready = httpx.get(base + "/readyz")
        assert ready.status_code == 200 and ready.json() == {"status": "ready"}
        assert httpx.post(base + "/readyz").status_code == 405
        assert httpx.get(base + "/rest/threads").status_code == 401, "the rest still needs the token"


def test_a_server_without_a_token_shows_details_to_its_own_host():
    with start_server(["--door", "rest"]) as server:
        assert httpx.get(server.base_url + "/healthz").json()["backend"] == "scripted"
        assert httpx.get(server.base_url + "/readyz").json() == {"status": "ready"}


def stream_in_background(base: str, message: str) -> tuple[threading.Thread, list[dict], threading.Event]:
    events: list[dict] = []
    first = threading.Event()

    def read() -> None:
        body = {"message": message}
        with httpx.stream("POST", base + "/rest/chat/stream", json=body, headers=AUTH, timeout=60) as response:
            for line in response.iter_lines():
                if line.startswith("data:"):
                    events.append(json.loads(line[5:]))
                    if events[-1].get("type") == "text_delta":
                        first.set()

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    return thread, events, first


@pytest.mark.parametrize("drain, message, ending", [
    ("20", "/long 30", "end_turn"),  # finishes within the grace: its real ending
    ("0.5", "/long 2000", "cancelled"),  # still going when the grace ends: cancelled, with its ending
    ("0", "/long 2000", "cancelled"),  # no grace (the default): cancelled at once
])
def test_sigterm_drains_the_runs_going_on(drain, message, ending):
    args = ["--door", "rest", "--token", TOKEN, "-o", "scripted.delay=0.02", "-o", f"http.drain_grace={drain}",
            "-o", "http.shutdown_grace=3"]
    with start_server(args) as server:
        thread, events, first = stream_in_background(server.base_url, message)
        assert first.wait(30), "the run started streaming"
        server.proc.send_signal(signal.SIGTERM)
        thread.join(60)
        assert not thread.is_alive()
        last = events[-1]
        assert last["type"] == "run_finished" and last["stop_reason"] == ending, last
        if ending == "end_turn":
            deltas = [e for e in events if e["type"] == "text_delta"]
            assert len(deltas) == 30 and last["text"] == "".join(e["text"] for e in deltas)
        assert server.proc.wait(30) == 0


async def test_a_draining_kernel_starts_no_run_but_its_parked_runs_go_on():
    kernel = scripted_kernel()
    async with kernel.run("/question Which branch?", asker=SuspendAsker()) as run:
        [event async for event in run]
    question = kernel.open_questions(run.run_id)[0]
    kernel.drain()
    assert kernel.draining
    with pytest.raises(RunRefused) as caught:
        kernel.run("hello")
    assert caught.value.reason == "draining" and caught.value.retry_after == 1
    answer = {"question_id": question.id, "outcome": "accept", "value": {"answer": "main"}}
    async with kernel.resume([answer]) as rest:
        events = [event async for event in rest]
    assert 'You answered {"answer": "main"}' in events[-1].text
    assert await kernel.drained(5)
    shown = refusal(caught.value)
    assert (shown.status, shown.code) == (503, "draining") and ("retry-after", "1") in [
        (k.decode() if isinstance(k, bytes) else k, v.decode() if isinstance(v, bytes) else v) for k, v in shown.headers
    ]
