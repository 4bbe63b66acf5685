"""Property-based fuzzing of the REST door's JSON layer (hypothesis), in process.

The whole door behind the transport's guard (the app the server runs): any body to
``/chat`` and ``/chat/stream`` gets a 4xx JSON error, a JSON reply, or a stream that
ends with exactly one terminal event; never a 5xx, never an exception out of the app.
The same holds for the resume calls (``/runs/{run_id}/answers`` and ``.../stream``),
fuzzed against real open questions: a refused body answers nothing.
(``test_rest_fuzz.py`` fuzzes the live OpenAPI document with schemathesis.)
"""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from onedoor.composition import ServeContext
from onedoor.kernel import Limits
from onedoor.testing import scripted_kernel
from onedoor_door_rest import RestDoor
from onedoor_test_support import await_for, parse_sse
from onedoor_transport_http import HttpOptions
from onedoor_transport_http.app import build_app

TEXT = st.text(st.characters(codec=None, exclude_categories=()), max_size=12)
SCALARS = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | TEXT
JSON_VALUES = st.recursive(
    SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3), max_leaves=12
)
HISTORY = st.lists(
    st.fixed_dictionaries(
        {"role": st.sampled_from(["system", "user", "assistant", "tool", "wizard"]) | JSON_VALUES},
        optional={
            "content": TEXT | JSON_VALUES,
            "tool_calls": st.lists(st.fixed_dictionaries({"id": TEXT, "name": TEXT}, optional={"arguments": JSON_VALUES}),
                                   max_size=2) | JSON_VALUES,
            "tool_call_id": TEXT | JSON_VALUES,
        },
    ),
    max_size=4,
)
NEAR_VALID = st.fixed_dictionaries(
    {"message": TEXT | JSON_VALUES},
    optional={"history": HISTORY | JSON_VALUES, "extra": JSON_VALUES},
)
VALID_ISH = st.builds(lambda m, h: {"message": m, "history": h}, TEXT.filter(lambda t: t.strip()), HISTORY)
FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)


@pytest.fixture(scope="module")
def door_app():
    kernel = scripted_kernel(Limits(max_concurrent_runs=64, max_message_chars=5000))
    ctx = ServeContext(kernel=kernel, door_names=["rest"], transport_name="http")
    door = RestDoor()
    door.name = "rest"
    app, _ = build_app([door], ctx, HttpOptions(port=0))
    loop = asyncio.new_event_loop()
    yield app, loop, kernel
    loop.close()


def post(door_app, path: str, body: bytes) -> httpx.Response:
    app, loop, _ = door_app

    async def go() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)  # exceptions out of the app are raised here
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8000") as client:
            return await client.post(path, content=body, headers={"content-type": "application/json"})

    return loop.run_until_complete(go())


def check(response: httpx.Response, path: str) -> None:
    assert response.status_code < 500, response.text
    if response.status_code >= 400:
        assert set(response.json()) == {"error", "detail"}, response.text
    elif path.endswith("/stream"):
        names = [frame.event for frame in parse_sse(response.text)]
        assert names[0] == "run_started" and names[-1] in ("run_finished", "run_failed"), names
        assert sum(n in ("run_finished", "run_failed") for n in names) == 1
    else:
        assert isinstance(response.json()["reply"], str)


@FUZZ
@given(JSON_VALUES | NEAR_VALID | VALID_ISH, st.sampled_from(["/rest/chat", "/rest/chat/stream"]))
def test_the_door_behind_the_guard_never_answers_5xx(door_app, data, path):
    response = post(door_app, path, json.dumps(data).encode())
    event(f"status {response.status_code}")
    check(response, path)


@FUZZ
@given(st.binary(max_size=64) | st.text(max_size=40).map(str.encode))
def test_arbitrary_bytes_are_refused_cleanly(door_app, raw):
    response = post(door_app, "/rest/chat", raw)
    assert response.status_code < 500
    if response.status_code != 200:
        assert set(response.json()) == {"error", "detail"}
    _, loop, kernel = door_app  # the app runs only while a request is served: run the loop until every run ended
    loop.run_until_complete(await_for(lambda: kernel.active_runs == 0, "every run to end"))
# -- the resume calls, against real open questions ------------------------------------------
OUTCOMES = ["allow_once", "allow_always", "reject_once", "reject_always", "accept", "decline", "cancel"]
ASKING = {"approval": '/ask delete_file {"path": "/tmp/x"}', "input": "/question What is your name?"}
ANSWER = st.fixed_dictionaries(
    {
        "question_id": st.sampled_from(["<open>", "<open>", "<open>", "<other>"]) | TEXT | JSON_VALUES,
        "outcome": st.sampled_from(OUTCOMES) | JSON_VALUES,
    },
    optional={
        "value": st.none() | st.dictionaries(st.sampled_from(["answer", "other"]) | TEXT, SCALARS, max_size=2) | JSON_VALUES,
        "by": TEXT,
    },
)
ANSWER_NEAR_VALID = st.builds(
    lambda outcome, value: {"question_id": "<open>", "outcome": outcome, **({} if value is None else {"value": value})},
    st.sampled_from(OUTCOMES),
    st.none() | st.fixed_dictionaries({"answer": TEXT | SCALARS}),
)
ANSWERS = (
    st.builds(lambda answer: {"answers": [answer]}, ANSWER_NEAR_VALID)
    | st.fixed_dictionaries({"answers": st.lists(ANSWER, max_size=3) | JSON_VALUES}, optional={"extra": JSON_VALUES})
    | JSON_VALUES
)


@pytest.fixture(scope="module")
def asking_app():
    """The door (async scripted backend: no worker threads) and its parked runs by kind."""
    kernel = scripted_kernel(Limits(max_concurrent_runs=16, max_message_chars=5000), mode="async")
    ctx = ServeContext(kernel=kernel, door_names=["rest"], transport_name="http")
    door = RestDoor()
    door.name = "rest"
    app, _ = build_app([door], ctx, HttpOptions(port=0))
    loop = asyncio.new_event_loop()
    parked: dict[str, tuple[str, str]] = {}  # kind -> (run_id, open question id)
    yield (app, loop, kernel), parked
    loop.run_until_complete(kernel.shutdown(5))  # ends the runs still parked
    assert kernel.active_runs == 0
    loop.close()


def _fill(value, open_id: str, other_id: str):
    if value == "<open>":
        return open_id
    if value == "<other>":
        return other_id
    if isinstance(value, list):
        return [_fill(v, open_id, other_id) for v in value]
    if isinstance(value, dict):
        return {k: _fill(v, open_id, other_id) for k, v in value.items()}
    return value


def _parked(door_app, parked: dict, kind: str) -> tuple[str, str]:
    if kind not in parked:
        response = post(door_app, "/rest/chat", json.dumps({"message": ASKING[kind]}).encode())
        body = response.json()
        assert body["status"] == "needs_input", body
        parked[kind] = (body["run_id"], body["questions"][0]["id"])
    return parked[kind]


@FUZZ
@given(ANSWERS, st.sampled_from(["approval", "input"]), st.sampled_from(["", "/stream"]), st.booleans())
def test_resume_calls_never_answer_5xx_and_refusals_answer_nothing(asking_app, data, kind, suffix, right_run):
    door_app, parked = asking_app
    kernel = door_app[2]
    run_id, open_id = _parked(door_app, parked, kind)
    other_kind = "input" if kind == "approval" else "approval"
    other_run, other_id = _parked(door_app, parked, other_kind)
    path = f"/rest/runs/{run_id if right_run else 'no-such-run'}/answers{suffix}"
    response = post(door_app, path, json.dumps(_fill(data, open_id, other_id)).encode())
    event(f"status {response.status_code}")
    check(response, path)
    if response.status_code == 200:  # the answers were taken: the run went on (and ended)
        del parked[kind]
        assert not kernel.open_questions(run_id)
    else:  # a refusal answered nothing
        assert [q.id for q in kernel.open_questions(run_id)] == [open_id]
    assert [q.id for q in kernel.open_questions(other_run)] == [other_id]
