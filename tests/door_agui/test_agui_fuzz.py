"""Property-based fuzzing of the AG-UI door's JSON layer (hypothesis).

1. ``build_request`` (RunAgentInput -> the kernel's inputs) on any JSON value and on
   near-valid inputs raises only :class:`InputError`.
2. The whole door behind the transport's guard (in process, the app the server runs):
   any body gets a 4xx JSON error or a stream with exactly one terminal event; never a
   5xx, never an exception out of the app.
"""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest
from agui_helpers import parse_sse
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from onedoor.composition import ServeContext
from onedoor.kernel import Limits
from onedoor.testing import scripted_kernel
from onedoor_door_agui import AguiDoor, AguiOptions
from onedoor_door_agui.convert import KNOWN_ROLES, InputError, RunRequest, build_request
from onedoor_test_support import await_for
from onedoor_transport_http import HttpOptions
from onedoor_transport_http.app import build_app

# Text with everything JSON can carry, lone surrogates included (they travel as \u escapes).
TEXT = st.text(st.characters(codec=None, exclude_categories=()), max_size=12)
SCALARS = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | TEXT
JSON_VALUES = st.recursive(
    SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3), max_leaves=12
)
IDS = TEXT | JSON_VALUES
PARTS = st.lists(
    st.fixed_dictionaries({"type": st.sampled_from(["text", "image", "binary", "nope"])}, optional={"text": IDS}),
    max_size=3,
)
CALL = st.fixed_dictionaries(
    {
        "id": IDS,
        "type": st.sampled_from(["function", "other"]),
        "function": st.fixed_dictionaries({"name": IDS, "arguments": TEXT | st.just("[" * 200) | JSON_VALUES}),
    }
)
TOOL_CALLS = st.lists(CALL, max_size=2)
MESSAGES = st.fixed_dictionaries(
    {"id": IDS, "role": st.sampled_from([*KNOWN_ROLES, "robot"]) | JSON_VALUES},
    optional={"content": TEXT | PARTS | JSON_VALUES, "toolCalls": TOOL_CALLS, "toolCallId": IDS, "error": IDS,
              "name": IDS},
)
TOOLS = st.lists(
    st.fixed_dictionaries({"name": IDS, "description": IDS}, optional={"parameters": JSON_VALUES}), max_size=3
)
NEAR_VALID = st.fixed_dictionaries(
    {"threadId": IDS, "runId": IDS, "messages": st.lists(MESSAGES, max_size=4) | JSON_VALUES},
    optional={"tools": TOOLS | JSON_VALUES, "state": JSON_VALUES, "context": JSON_VALUES,
              "forwardedProps": JSON_VALUES, "resume": JSON_VALUES, "parentRunId": IDS},
)
# Mostly valid: one user message with text, so runs really start.
VALID_ISH = st.builds(
    lambda text, extra: {"threadId": "t", "runId": "r-" + json.dumps(text)[:20], **extra,
                         "messages": [{"id": "u", "role": "user", "content": text}]},
    TEXT.filter(lambda t: t.strip()),
    st.dictionaries(st.sampled_from(["tools", "state", "forwardedProps", "context"]), JSON_VALUES, max_size=2),
)
FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)


@FUZZ
@given(JSON_VALUES | NEAR_VALID)
def test_build_request_raises_only_input_error(data):
    try:
        request = build_request(data)
    except InputError as exc:
        assert str(exc) and "\n" not in str(exc)
    else:
        assert isinstance(request, RunRequest) and isinstance(request.prompt, str)


@pytest.fixture(scope="module")
def door_app():
    kernel = scripted_kernel(Limits(max_concurrent_runs=64, max_message_chars=5000))
    ctx = ServeContext(kernel=kernel, options={"agui": AguiOptions(keepalive=0)}, door_names=["agui"], transport_name="http")
    app, _ = build_app([AguiDoor()], ctx, HttpOptions(port=0))
    loop = asyncio.new_event_loop()
    yield app, loop, kernel
    loop.close()


def post(door_app, body: bytes) -> httpx.Response:
    app, loop, _ = door_app

    async def go() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)  # exceptions out of the app are raised here
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8000") as client:
            return await client.post("/agui/", content=body, headers={"content-type": "application/json"})

    return loop.run_until_complete(go())


def check(response: httpx.Response) -> None:
    assert response.status_code < 500, response.text
    if response.status_code >= 400:
        assert set(response.json()) == {"error", "detail"}
        return
    events = parse_sse(response.text)
    kinds = [e["type"] for e in events]
    assert kinds[0] == "RUN_STARTED" and kinds[-1] in ("RUN_FINISHED", "RUN_ERROR"), kinds
    assert sum(k in ("RUN_FINISHED", "RUN_ERROR") for k in kinds) == 1


@FUZZ
@given(JSON_VALUES | NEAR_VALID | VALID_ISH)
def test_the_door_behind_the_guard_never_answers_5xx(door_app, data):
    response = post(door_app, json.dumps(data).encode())
    event(f"status {response.status_code}")
    check(response)


@FUZZ
@given(st.binary(max_size=64) | st.text(max_size=40).map(str.encode))
def test_arbitrary_bytes_are_refused_cleanly(door_app, raw):
    response = post(door_app, raw)
    assert response.status_code < 500
    if response.status_code != 200:
        assert set(response.json()) == {"error", "detail"}
    _, loop, kernel = door_app  # the app runs only while a request is served: run the loop until every run ended
    loop.run_until_complete(await_for(lambda: kernel.active_runs == 0, "every run to end"))
