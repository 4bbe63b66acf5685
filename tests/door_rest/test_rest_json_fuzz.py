"""Property-based fuzzing of the REST door's JSON layer (hypothesis), in process.

The whole door behind the transport's guard (the app the server runs): any body to
``/chat`` and ``/chat/stream`` gets a 4xx JSON error, a JSON reply, or a stream that
ends with exactly one terminal event; never a 5xx, never an exception out of the app.
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
from onedoor_test_support import parse_sse
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
    assert door_app[2].active_runs == 0
