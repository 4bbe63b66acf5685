"""Hostile resume inputs (the shared corpus, onedoor.testing.hostile) against a parked run.

Each case parks a fresh run, sends a resuming RunAgentInput with one field replaced by a
hostile value (or removed), and expects a 4xx JSON error or a valid stream with one
ending: never a 5xx, an exception out of the app, or a run left behind. The app is the
one the server runs (guard included), driven in process.
"""

from __future__ import annotations

import json
import logging

import httpx
import pytest
from ag_ui.core import Event as AguiEvent
from agui_helpers import parse_sse, run_input
from onedoor.composition import ServeContext
from onedoor.kernel import Limits
from onedoor.testing import scripted_kernel
from onedoor.testing.hostile import mutations
from onedoor_door_agui import AguiDoor, AguiOptions
from onedoor_test_support import await_for
from onedoor_transport_http import HttpOptions
from onedoor_transport_http.app import build_app
from pydantic import TypeAdapter

EVENT = TypeAdapter(AguiEvent)
pytestmark = pytest.mark.timeout(300)  # a real browser / node / hundreds of runs on a loaded machine
PLACEHOLDER = "QID-PLACEHOLDER-0123456789"
RUN_PLACEHOLDER = "RUN-PLACEHOLDER-0123456789"  # a fresh runId per case: a runId names one AG-UI run only


def template(payload) -> dict:
    return {
        "threadId": "thread-1",
        "runId": RUN_PLACEHOLDER,
        "messages": [{"id": "u1", "role": "user", "content": "hi"}],
        "resume": [{"interruptId": PLACEHOLDER, "status": "resolved", "payload": payload}],
    }


CASES = [("approval", '/ask deploy {"env": "prod"}', case) for case in mutations(template({"approved": True}))]
CASES += [
    ("input", "/question Colour?", case)
    for case in mutations(template({"answer": "blue"}), keep=("threadId", "runId", "messages"))
]


@pytest.fixture
async def client():
    kernel = scripted_kernel(Limits(max_message_chars=5000), mode="async")
    ctx = ServeContext(kernel=kernel, options={"agui": AguiOptions(keepalive=0)}, door_names=["agui"], transport_name="http")
    app, _ = build_app([AguiDoor()], ctx, HttpOptions(port=0))
    transport = httpx.ASGITransport(app=app)  # an exception out of the app is raised here
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8000") as http:
        yield http, kernel
    kernel.cancel_all()


async def test_hostile_resume_inputs(client, caplog):
    http, kernel = client
    caplog.set_level(logging.ERROR)
    seen: dict[str, int] = {}
    for index, (kind, message, case) in enumerate(CASES):
        parked = await http.post("/agui/", json=run_input(message))
        interrupt_id = parse_sse(parked.text)[-1]["outcome"]["interrupts"][0]["id"]
        body = case.payload.replace(PLACEHOLDER.encode(), interrupt_id.encode())
        body = body.replace(RUN_PLACEHOLDER.encode(), f"resume-{index}".encode())
        response = await http.post("/agui/", content=body, headers={"content-type": "application/json"})
        where = f"{kind} {case.name}"
        assert response.status_code < 500, f"{where}: {response.text[:300]}"
        if response.status_code >= 400:
            assert set(response.json()) == {"error", "detail"}, where
            seen[f"{response.status_code} {response.json()['error']}"] = seen.get(f"{response.status_code} {response.json()['error']}", 0) + 1
        else:
            events = parse_sse(response.text)
            for event in events:
                EVENT.validate_python(event)
            kinds = [e["type"] for e in events]
            assert kinds[0] == "RUN_STARTED" and kinds[-1] in ("RUN_FINISHED", "RUN_ERROR"), f"{where}: {kinds}"
            assert sum(k in ("RUN_FINISHED", "RUN_ERROR") for k in kinds) == 1, where
            seen["200"] = seen.get("200", 0) + 1
        kernel.cancel_all()  # the run is parked still (refused), or done: either way, gone before the next case
        await await_for(lambda: kernel.active_runs == 0 and kernel.parked_runs == 0, f"no run left after {where}")
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []
    # every kind of answer happened: refusals of each sort, and resumes that went through
    assert {"200", "422 invalid_answer", "404 unknown_question", "400 bad_json", "422 invalid_request"} <= set(seen), seen
    print(json.dumps(seen, sort_keys=True))
