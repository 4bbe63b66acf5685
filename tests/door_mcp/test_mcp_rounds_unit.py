"""The keys that seal ``requestState`` and the state the door puts in it, in-process (both SDKs)."""

from __future__ import annotations

import logging

import pytest
from onedoor.plugins.options import redacted
from onedoor.testing import scripted_kernel
from onedoor_door_mcp import McpOptions, sdk
from onedoor_door_mcp.keys import LABEL, hkdf_sha256, sealing_keys
from onedoor_door_mcp.rounds import Asked, RoundState
from onedoor_door_mcp.server import build, principal_bound

SECRET = "s3cret-" + "x" * 40


def test_hkdf_is_rfc_5869() -> None:
    """RFC 5869 test case 3 (SHA-256, no salt, no info), its first 32 bytes."""
    okm = hkdf_sha256(b"\x0b" * 22, b"")
    assert okm.hex() == "8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d"


def test_where_the_keys_come_from() -> None:
    option, where = sealing_keys([SECRET, "old-" + "y" * 40])
    assert where == "option" and option == (SECRET.encode(), ("old-" + "y" * 40).encode())  # the first seals
    token_keys, where = sealing_keys([], "the-shared-token-0123456789")
    assert where == "token" and token_keys == (hkdf_sha256(b"the-shared-token-0123456789", LABEL),)
    assert sealing_keys([], "the-shared-token-0123456789")[0] == token_keys  # the same on every server
    assert sealing_keys([], "another-token-0123456789abc")[0] != token_keys
    assert sealing_keys([SECRET], "the-shared-token-0123456789")[0] == (SECRET.encode(),)  # the option wins
    first, where = sealing_keys([], "")
    assert where == "ephemeral" and len(first[0]) == 32 and sealing_keys([], "")[0] != first


def test_keys_are_checked_and_never_shown() -> None:
    with pytest.raises(ValueError) as caught:
        McpOptions(request_state_keys=[SECRET, "too-short-a-key"])
    assert "key 2" in str(caught.value) and "too-short-a-key" not in str(caught.value)
    options = McpOptions(request_state_keys=[f" {SECRET} ", ""])
    assert options.request_state_keys == [SECRET]
    assert redacted(options)["request_state_keys"] == "***"


def test_the_server_logs_where_its_keys_come_from_not_what_they_are(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="onedoor.door.mcp")
    build(scripted_kernel(), McpOptions(request_state_keys=[SECRET]))
    build(scripted_kernel(), McpOptions(), token="the-shared-token-0123456789")
    build(scripted_kernel(), McpOptions())
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert SECRET not in logged and "the-shared-token" not in logged
    if sdk.MAJOR >= 2:
        assert "a key of this process only" in logged


def test_only_sdk_2_seals_request_state() -> None:
    server, _tool = build(scripted_kernel(), McpOptions(request_state_keys=[SECRET]))
    if sdk.MAJOR < 2:  # 1.26 serves 2025-11-25 only: no input_required results, nothing to seal
        assert not hasattr(server, "middleware")
        return
    from mcp.server.request_state import RequestStateBoundary

    assert [m for m in server.middleware if isinstance(m, RequestStateBoundary)]


def test_the_state_is_bound_to_the_callers_principal() -> None:
    from onedoor.principals import PRINCIPAL_KEY

    class Request:
        scope = {"type": "http", PRINCIPAL_KEY: "alice"}

    class Ctx:
        request = Request()

    assert principal_bound(object()) == "local"  # stdio, SLIM: the one principal
    assert principal_bound(Ctx()) == "alice"  # the principal the HTTP transport put in the request's scope


def test_the_round_state_reads_back_what_it_wrote_and_nothing_else() -> None:
    state = RoundState("run-1", 7, (Asked("q-1", "approval", ("allow_once", "reject_once")), Asked("q-2", "input")),
                       "t-1")
    assert RoundState.decode(state.encode()) == state
    for text in ("", "null", "[]", '{"v": 2, "run": "r", "seq": 1, "q": [["q", "input", []]]}',
                 '{"v": 1, "run": "r", "seq": "1", "q": [["q", "input", []]]}', '{"v": 1, "run": "r", "seq": 1, "q": []}',
                 '{"v": 1, "run": 5, "seq": 1, "q": [["q", "input", []]]}', '{"v": 1, "run": "r", "seq": 1, "q": [5]}'):
        with pytest.raises(ValueError):
            RoundState.decode(text)


async def test_input_responses_on_a_2025_11_25_call_are_refused() -> None:
    """A 2025-11-25 session's call carrying ``inputResponses`` is no retry: -32602 on SDK 2.x
    (``not_a_retry``); SDK 1.x knows no such field and runs the call."""
    from onedoor.composition import ServeContext
    from onedoor.testing import serve_in_memory
    from onedoor_door_mcp import door

    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
    ctx = ServeContext(kernel=scripted_kernel(), options={"mcp": McpOptions()}, door_names=["mcp"])
    async with serve_in_memory(door(), ctx, line_framed=True) as client:
        await client.send_json(init)
        await client.reply_to(0)
        await client.send_json({"jsonrpc": "2.0", "method": "notifications/initialized"})
        await client.send_json({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "ask", "arguments": {"message": "hi"}, "inputResponses": {"q": {"action": "decline"}}}})
        reply = await client.reply_to(1)
        await client.send_json({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                                "params": {"name": "ask", "arguments": {"message": "hi"}}})
        after = await client.reply_to(2)
    if sdk.MAJOR >= 2:
        assert reply["error"]["code"] == -32602 and reply["error"]["data"] == {"reason": "not_a_retry"}, reply
    else:
        assert reply["result"]["content"][0]["text"].startswith("You said: hi"), reply
    assert after["result"]["content"][0]["text"] == "You said: hi (1 word, turn 1)"
