"""The MCP door in-process: the channel bridge on fake channels, the Host checks, the tool."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from onedoor.composition import ServeContext
from onedoor.questions import Question, QuestionError, check_answer
from onedoor.testing import channel_pair, scripted_kernel, serve_in_memory
from onedoor_door_mcp import McpOptions, door
from onedoor_door_mcp.asgi import _matches, allowed_hosts, allowed_origins
from onedoor_door_mcp.channel import decode
from onedoor_door_mcp.elicit import answer_for, request_for
from onedoor_door_mcp.tool import AskRequest, AskTool
from onedoor_test_support import await_for

pytestmark = pytest.mark.timeout(60)

INIT = {
    "jsonrpc": "2.0", "id": 0, "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}


def _ctx(kernel: Any, **options: Any) -> ServeContext:
    return ServeContext(kernel=kernel, options={"mcp": McpOptions(**options)}, door_names=["mcp"])


async def test_channel_session_answers_and_ends_when_the_peer_closes() -> None:
    kernel = scripted_kernel()
    async with serve_in_memory(door(), _ctx(kernel), line_framed=True) as client:
        await client.send_json(INIT)
        assert (await client.reply_to(0))["result"]["serverInfo"]["name"] == "onedoor"
        await client.send_json({"jsonrpc": "2.0", "method": "notifications/initialized"})
        await client.send_json({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                "params": {"name": "ask", "arguments": {"message": "hi"}}})
        assert (await client.reply_to(1))["result"]["content"][0]["text"] == "You said: hi (1 word, turn 1)"
    assert kernel.active_runs == 0  # serve_in_memory waited for the door to end


async def test_oversized_message_is_answered_and_the_session_goes_on() -> None:
    async with serve_in_memory(door(), _ctx(scripted_kernel()), max_message_bytes=65536) as client:
        await client.send_json(INIT)
        await client.reply_to(0)
        await client.send("x" * 100_000)  # reaches the door as MessageTooLarge
        seen: list[Any] = []
        await client.send_json({"jsonrpc": "2.0", "id": 2, "method": "ping"})
        assert (await client.reply_to(2, seen=seen))["result"] == {}
    too_large = [m for m in seen if m.get("id") is None and "error" in m]
    assert too_large and too_large[0]["error"]["code"] == -32600 and "65536" in too_large[0]["error"]["message"]


async def test_a_peer_that_goes_away_mid_run_cancels_it() -> None:
    kernel = scripted_kernel()
    door_end, client = channel_pair()
    task = asyncio.ensure_future(door().serve_channel(door_end, _ctx(kernel)))
    await client.send_json(INIT)
    await client.reply_to(0)
    await client.send_json({"jsonrpc": "2.0", "method": "notifications/initialized"})
    await client.send_json({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                            "params": {"name": "ask", "arguments": {"message": "/hang"}, "_meta": {"progressToken": 3}}})
    await await_for(lambda: kernel.active_runs == 1, "the /hang run to start")
    await client.close()  # the door's next write fails and its reads end
    await asyncio.wait_for(task, 20)
    assert kernel.active_runs == 0
    await await_for(lambda: not [t for t in kernel.worker_threads() if t.is_alive()], "the run's worker thread to end")


async def test_two_channels_share_one_kernel() -> None:
    """A channel transport such as SLIM serves many sessions at once."""
    kernel = scripted_kernel()
    pairs = [channel_pair(f"peer{i}") for i in range(2)]
    tasks = [asyncio.ensure_future(door().serve_channel(door_end, _ctx(kernel))) for door_end, _ in pairs]
    clients = [client for _, client in pairs]
    for index, client in enumerate(clients):
        await client.send_json(INIT)
        await client.send_json({"jsonrpc": "2.0", "method": "notifications/initialized"})
        await client.send_json({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                "params": {"name": "ask", "arguments": {"message": f"session{index}"}}})
    answers = [await c.reply_to(1) for c in clients]
    texts = [a["result"]["content"][0]["text"] for a in answers]
    assert texts == [f"You said: session{i} (1 word, turn 1)" for i in range(2)]
    for client in clients:
        await client.close()
    await asyncio.wait_for(asyncio.gather(*tasks), 15)


@pytest.mark.parametrize(
    "text, code, rid",
    [
        ("nope", -32700, None),
        ("[]", -32600, None),
        ("null", -32600, None),
        ('{"jsonrpc": "2.0", "id": true, "method": "ping"}', -32600, None),
        ('{"jsonrpc": "2.0", "id": 4, "method": 5}', -32600, 4),
        ('{"jsonrpc": "2.0", "id": 4, "method": "ping", "params": [1]}', -32600, 4),
        ('{"jsonrpc": "2.0", "id": 4}', -32600, 4),
    ],
)
def test_decode_answers_bad_messages(text: str, code: int, rid: Any) -> None:
    answer, problem = decode(text)
    assert answer["error"]["code"] == code and answer["id"] == rid and problem


def test_decode_passes_good_messages_and_drops_bad_notifications() -> None:
    item, problem = decode(json.dumps({"jsonrpc": "2.0", "id": "a", "method": "ping"}))
    assert not isinstance(item, dict) and problem is None
    item, problem = decode(json.dumps({"jsonrpc": "1.0", "method": "notifications/x"}))
    assert item is None and "jsonrpc" in problem


def test_host_patterns() -> None:
    hosts = allowed_hosts(McpOptions(allowed_hosts=["agent.example"]), bind_host="10.1.2.3")
    for ok in ("127.0.0.1", "127.0.0.1:8000", "localhost:1", "[::1]:9", "10.1.2.3:8000", "agent.example"):
        assert _matches(ok, hosts), ok
    for bad in ("", "evil.example", "127.0.0.1.evil.example", "127.0.0.1:80.evil", "localhost:", "agent.example:80"):
        assert not _matches(bad, hosts), bad
    assert "0.0.0.0" not in allowed_hosts(McpOptions(), bind_host="0.0.0.0")
    origins = allowed_origins(McpOptions(allowed_origins=["https://app.example"]))
    assert _matches("http://localhost:5173", origins) and _matches("https://app.example", origins)
    assert not _matches("http://evil.example", origins)


def test_argument_checks() -> None:
    check = AskTool.check_arguments
    assert check({"message": "hi"}) == AskRequest("hi", [])
    assert check({"message": "hi", "history": [{"role": "user", "content": "x"}]}).history == [{"role": "user", "content": "x"}]
    assert check({"message": "hi", "thread": "t-1"}) == AskRequest("hi", [], "t-1")
    assert check({"message": "hi", "new_thread": True, "history": []}) == AskRequest("hi", [], None, True)
    assert check({"message": "hi", "new_thread": False}) == AskRequest("hi", [])
    embedded = {"type": "resource", "resource": {"uri": "file:///a", "mimeType": "text/plain", "text": "t"}, "lines": [1, 2]}
    assert check({"message": "hi", "attachments": [{"type": "image", "data": "eA==", "mimeType": "image/png"}, embedded]}
                 ).attachments == [{"type": "image", "data": "eA==", "media_type": "image/png"},
                                   {"type": "resource", "uri": "file:///a", "media_type": "text/plain", "text": "t",
                                    "lines": [1, 2]}]
    for bad in (None, [], {"message": "  "}, {"message": "x", "history": {}}, {"message": "x", "history": ["x"]},
                {"message": "x", "extra": 1}, {"message": "x", "history": [{"role": "user"}]},
                {"message": "x", "thread": "no spaces"}, {"message": "x", "thread": None, "new_thread": 1},
                {"message": "x", "thread": "t-1", "new_thread": True},
                {"message": "x", "thread": "t-1", "history": [{"role": "user", "content": "x"}]},
                {"message": "x", "attachments": {}}, {"message": "x", "attachments": [{"data": "eA=="}]},
                {"message": "x", "attachments": [{"type": "resource", "resource": "file:///a"}]},
                {"message": "x", "attachments": [{"type": "resource", "resource": {"uri": "a", "blob": 1}}]}):
        with pytest.raises(ValueError):
            check(bad)


def test_door_declares_both_shapes() -> None:
    obj = door()
    assert obj.shapes == frozenset({"asgi", "channel"}) and obj.framing == "ndjson"
    mount = obj.asgi_mount(ServeContext(kernel=scripted_kernel()))
    assert mount.prefix == "/mcp" and callable(mount.lifespan)


def test_any_host_when_served_to_the_network_behind_a_token() -> None:
    from onedoor.composition import Endpoint
    from onedoor_door_mcp.asgi import make_app

    def app_for(host: str, token: str) -> Any:  # the transport publishes its bind in ctx.endpoint
        ctx = ServeContext(kernel=scripted_kernel(), endpoint=Endpoint(host=host, token_required=bool(token)))
        return make_app(ctx)

    assert app_for("0.0.0.0", "t" * 32).hosts == ["*"]
    assert "evil.example" not in app_for("0.0.0.0", "").hosts and app_for("0.0.0.0", "").hosts != ["*"]
    loopback = app_for("127.0.0.1", "t" * 32)
    assert loopback.hosts != ["*"] and not _matches("evil.example", loopback.hosts)
    assert not _matches("http://evil.example", app_for("0.0.0.0", "t" * 32).origins)


async def test_tool_name_and_server_name_options() -> None:
    async with serve_in_memory(door(), _ctx(scripted_kernel(), tool_name="consult", server_name="helper")) as client:
        await client.send_json(INIT)
        assert (await client.reply_to(0))["result"]["serverInfo"]["name"] == "helper"
        await client.send_json({"jsonrpc": "2.0", "method": "notifications/initialized"})
        await client.send_json({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        assert [t["name"] for t in (await client.reply_to(1))["result"]["tools"]] == ["consult"]
        await client.send_json({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                                "params": {"name": "ask", "arguments": {"message": "x"}}})
        assert (await client.reply_to(2))["error"]["code"] == -32602
        await client.send_json({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                                "params": {"name": "consult", "arguments": {"message": "x"}}})
        assert (await client.reply_to(3))["result"]["content"][0]["text"].startswith("You said: x")


async def test_the_mcp_sdk_client_over_an_in_memory_channel() -> None:
    """The door's own client codec (what SLIM's client uses) against the door, no transport."""
    from mcp import ClientSession
    from onedoor_door_mcp.client import mcp_streams, read_timeout

    async with serve_in_memory(door(), _ctx(scripted_kernel())) as channel, mcp_streams(channel) as (read, write):
        async with ClientSession(read, write, read_timeout_seconds=read_timeout(15)) as session:
            await session.initialize()
            result = await session.call_tool("ask", {"message": "no transport at all"})
    assert result.content[0].text.startswith("You said: no transport at all")


async def test_responses_to_requests_never_sent_are_dropped() -> None:
    async with serve_in_memory(door(), _ctx(scripted_kernel())) as client:
        await client.send_json(INIT)
        await client.reply_to(0)
        await client.send_json({"jsonrpc": "2.0", "id": "never-sent", "result": {}})
        await client.send_json({"jsonrpc": "2.0", "id": 99, "error": {"code": 1, "message": "x"}})
        seen: list[Any] = []
        await client.send_json({"jsonrpc": "2.0", "id": 5, "method": "ping"})
        assert (await client.reply_to(5, seen=seen))["result"] == {}
    assert seen == []  # nothing answered them, not even a log notification


async def test_an_unexpected_failure_in_the_tool_is_an_internal_error_in_one_log_line(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    async def broken(self: Any, name: str, arguments: Any, progress: Any, peer: Any = None) -> Any:
        raise RuntimeError("a bug, not the client's fault")

    monkeypatch.setattr(AskTool, "call", broken)
    async with serve_in_memory(door(), _ctx(scripted_kernel())) as client:
        await client.send_json(INIT)
        await client.reply_to(0)
        await client.send_json({"jsonrpc": "2.0", "method": "notifications/initialized"})
        await client.send_json({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                "params": {"name": "ask", "arguments": {"message": "x"}}})
        error = (await client.reply_to(1))["error"]
        await client.send_json({"jsonrpc": "2.0", "id": 2, "method": "ping"})
        assert (await client.reply_to(2))["result"] == {}
    assert error["code"] == -32603 and "RuntimeError" in error["message"]
    assert not [r for r in caplog.records if r.exc_info]
    assert [r for r in caplog.records if "tools/call 'ask' failed" in r.getMessage()]


# -- the agent's questions as elicitation (onedoor_door_mcp.elicit) ------------------------------

APPROVAL = Question.approval("call-1", "rm", {"path": "/tmp/x"}).stamped("run-1", None)
INPUT = Question.input("Colour?").stamped("run-1", None)


@pytest.mark.parametrize(
    ("question", "action", "content", "outcome", "value"),
    [
        (APPROVAL, "accept", {"decision": "allow_once"}, "allow_once", None),
        (APPROVAL, "accept", {"decision": "allow_always"}, "allow_always", None),
        (APPROVAL, "accept", {"decision": "reject_always"}, "reject_always", None),
        (APPROVAL, "decline", None, "reject_once", None),
        (APPROVAL, "cancel", None, "reject_once", None),
        (INPUT, "accept", {"answer": "blue"}, "accept", {"answer": "blue"}),
        (INPUT, "decline", None, "decline", None),
        (INPUT, "cancel", None, "cancel", None),
    ],
)
def test_elicitation_actions_become_answers(question: Any, action: str, content: Any, outcome: str, value: Any) -> None:
    answer = answer_for(question, action, content, "mcp:test")
    assert (answer.question_id, answer.outcome, answer.value, answer.by) == (question.id, outcome, value, "mcp:test")
    assert check_answer(question, answer) is answer


@pytest.mark.parametrize(
    ("action", "content"),
    [("maybe", None), (5, None), ("accept", None), ("accept", {}), ("accept", {"decision": "sure"}),
     ("accept", {"decision": 1}), ("accept", "allow_once"), ("accept", {"decision": "x" * 100_000})],
)
def test_an_approval_accepted_without_a_choice_is_refused_briefly(action: Any, content: Any) -> None:
    with pytest.raises(ValueError) as info:
        answer_for(APPROVAL, action, content)
    assert len(str(info.value)) < 400  # the kernel logs it: hostile content stays out of the log


def test_an_input_answer_that_does_not_fit_is_left_to_the_kernel() -> None:
    answer = answer_for(INPUT, "accept", {"answer": 5})
    with pytest.raises(QuestionError):
        check_answer(INPUT, answer)


def test_elicitation_requests_carry_the_question() -> None:
    message, schema, meta = request_for(APPROVAL)
    assert message.startswith("Allow the agent to run rm?") and 'Arguments: {"path": "/tmp/x"}' in message
    assert schema["required"] == ["decision"]
    assert schema["properties"]["decision"]["enum"] == list(APPROVAL.choices)
    assert meta == {"onedoor/question": {"id": APPROVAL.id, "kind": "approval", "run_id": "run-1",
                                         "tool": {"id": "call-1", "name": "rm", "arguments": {"path": "/tmp/x"}}}}
    big = Question.approval("call-2", "write", {"text": "x" * 100_000}).stamped("run-1", None)
    message, _, meta = request_for(big)
    assert len(message) < 5000 and "arguments" not in meta["onedoor/question"]["tool"]
    message, schema, meta = request_for(INPUT)
    assert (message, schema, meta["onedoor/question"]["kind"]) == ("Colour?", INPUT.schema, "input")
