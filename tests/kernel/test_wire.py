"""The one JSON policy (onedoor.wire) and the JSON-RPC layer (onedoor.wire.jsonrpc), against
the shared hostile corpus and property-based inputs."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onedoor.testing import hostile
from onedoor.wire import (
    WireError,
    decode_json,
    decode_json_object,
    encode_json,
    encode_json_text,
    jsonrpc,
    nesting_depth,
)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**60), 2**60) | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)


@pytest.mark.parametrize("case", hostile.all_raw(jsonrpc=True), ids=str)
def test_every_hostile_message_decodes_or_is_refused_with_a_reason(case):
    try:
        value = decode_json(case.payload)
    except WireError as exc:
        assert exc.reason in {"not_utf8", "surrogate", "not_json", "too_deep", "number"}
        assert str(exc) and "\n" not in str(exc)
        return
    # What is accepted re-encodes and decodes to the same value.
    assert decode_json(encode_json(value)) == value


@pytest.mark.parametrize(
    "payload, reason",
    [
        (b"\xff", "not_utf8"),
        (b'"\\ud800"', "surrogate"),
        ('"\ud800"', "surrogate"),
        (b"[" * 100 + b"]" * 100, "too_deep"),
        (b"1" * 200, "number"),
        (b"1e999", "number"),
        (b"NaN", "not_json"),
        (b"{", "not_json"),
    ],
)
def test_reasons(payload, reason):
    with pytest.raises(WireError) as info:
        decode_json(payload)
    assert info.value.reason == reason


def test_surrogate_pairs_are_fine_and_brackets_in_strings_do_not_count():
    assert decode_json(b'"\\ud83d\\ude00"') == "\U0001f600"
    assert decode_json(json.dumps({"t": "[" * 500}).encode()) == {"t": "[" * 500}
    assert nesting_depth('{"a":[[1]],"b":"[[[["}') == 3


def test_object_required():
    assert decode_json_object(b'{"a":1}') == {"a": 1}
    with pytest.raises(WireError) as info:
        decode_json_object(b"null")
    assert info.value.reason == "not_object" and "null" in str(info.value)


@given(json_values)
@settings(max_examples=300, deadline=None)
def test_encoding_round_trips_and_never_fails(value):
    data = encode_json(value)
    text = encode_json_text(value)
    text.encode("utf-8")  # always writable
    assert json.loads(data) == json.loads(text)


@given(st.text())
@settings(max_examples=300, deadline=None)
def test_split_emoji_halves_survive_as_escapes(text):
    halves = [part for ch in text for part in (ch.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass"),)]
    joined = "".join(json.loads(encode_json(part)) for part in halves)
    assert joined == text


def test_lone_surrogate_half_deltas_reassemble():
    emoji = "\U0001f600".encode("utf-16-be")
    high = emoji[:2].decode("utf-16-be", "surrogatepass")
    low = emoji[2:].decode("utf-16-be", "surrogatepass")
    parts = [json.loads(encode_json(high)), json.loads(encode_json(low))]
    assert "".join(parts).encode("utf-16", "surrogatepass").decode("utf-16") == "\U0001f600"


@given(st.binary(max_size=200))
@settings(max_examples=500, deadline=None)
def test_arbitrary_bytes_never_escape_the_policy(data):
    try:
        decode_json(data)
    except WireError:
        pass


@pytest.mark.parametrize("case", hostile.all_raw(jsonrpc=True), ids=str)
def test_jsonrpc_parse_always_answers_with_a_writable_error_or_a_message(case):
    incoming = jsonrpc.parse_message(case.payload)
    if incoming.reply is not None:
        error = incoming.reply["error"]
        assert error["code"] in (jsonrpc.PARSE_ERROR, jsonrpc.INVALID_REQUEST)
        assert incoming.reply["id"] is None or isinstance(incoming.reply["id"], (str, int))
        jsonrpc.dumps(incoming.reply).encode("utf-8")
    elif incoming.message is not None:
        assert jsonrpc.shape_problem(incoming.message) is None
    else:
        assert incoming.problem


def test_jsonrpc_shapes():
    assert jsonrpc.parse_message(b'{"jsonrpc":"2.0","id":1,"method":"ping"}').message["method"] == "ping"
    bad = jsonrpc.parse_message(b'{"jsonrpc":"2.0","id":1,"method":7}')
    assert bad.reply == {"jsonrpc": "2.0", "id": 1, "error": {"code": -32600, "message": bad.reply["error"]["message"]}}
    # The spec's own example: a non-string method is an Invalid Request answered with id null.
    assert jsonrpc.parse_message(b'{"jsonrpc":"2.0","method":1,"params":"bar"}').reply["id"] is None
    # A notification with bad params is dropped: JSON-RPC never answers a notification.
    assert jsonrpc.parse_message(b'{"jsonrpc":"2.0","method":"x","params":"bar"}').dropped
    assert jsonrpc.parse_message(b'{"jsonrpc":"2.0","id":null,"method":"x"}').reply is not None
    assert jsonrpc.parse_message(b'{"jsonrpc":"2.0","id":null,"method":"x"}', null_id=True).message is not None
    assert jsonrpc.parse_message(b'{"jsonrpc":"2.0","id":1,"method":"x","params":[1]}', array_params=True).message


def test_mutations_cover_every_field():
    template = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "ask", "arguments": {"m": "hi"}}}
    names = {case.name for case in hostile.mutations(template, keep=("jsonrpc",))}
    assert "params.arguments.m=lone-surrogate" in names and "id=missing" in names
    assert not any(name.startswith("jsonrpc") for name in names)
    for case in hostile.mutations(template):
        case.payload.decode("ascii")  # escaped: travels on any transport
