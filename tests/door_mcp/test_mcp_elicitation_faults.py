"""Faults around MCP elicitation, with raw JSON-RPC clients: hostile answers to
``elicitation/create`` (in memory and over stdio) and a client that disconnects while it
is being asked (in memory, stdio and streamable HTTP). Whatever the client does, the call
completes (the answer is no) or the run is cancelled, and nothing is left running."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import Any, Callable

import pytest
from hostile_jsonrpc_support import ChannelDriver, StdioDriver
from onedoor.composition import ServeContext
from onedoor.testing import channel_pair, hostile, scripted_kernel
from onedoor.wire import jsonrpc
from onedoor_door_mcp import McpOptions, door
from onedoor_test_support import Recorder, await_for

pytestmark = pytest.mark.timeout(300)

INIT = {
    "jsonrpc": "2.0", "id": "init", "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {"elicitation": {"form": {}}},
               "clientInfo": {"name": "raw", "version": "1"}},
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
NOT_APPROVED = "Not approved (reject_once): did not run rm"
BIG = 2_000_000  # characters: well over what anyone types, under the transports' 16 MiB limit


def call(number: int, message: str) -> dict[str, Any]:
    """tools/call with the id ``call-NUMBER`` (a string: the server numbers its own requests)."""
    return {"jsonrpc": "2.0", "id": f"call-{number}", "method": "tools/call",
            "params": {"name": "ask", "arguments": {"message": message}, "_meta": {"progressToken": number}}}


def answer(result: Any) -> Callable[[Any], bytes]:
    return lambda asked_id: jsonrpc.dumps({"jsonrpc": "2.0", "id": asked_id, "result": result}).encode()


def error(value: Any) -> Callable[[Any], bytes]:
    return lambda asked_id: jsonrpc.dumps({"jsonrpc": "2.0", "id": asked_id, "error": value}).encode()


def raw(text: str) -> Callable[[Any], bytes]:
    return lambda asked_id: text.replace("ID", json.dumps(asked_id)).encode()


# Answers to an approval's elicitation/create; each must leave the tool not run.
HOSTILE: dict[str, Callable[[Any], bytes]] = {
    "action is a number": answer({"action": 5}),
    "unknown action": answer({"action": "maybe"}),
    "no action": answer({}),
    "content is a string": answer({"action": "accept", "content": "allow_once"}),
    "content is a list": answer({"action": "accept", "content": ["allow_once"]}),
    "decision is an object": answer({"action": "accept", "content": {"decision": {"allow_once": True}}}),
    "decision is a number": answer({"action": "accept", "content": {"decision": 42}}),
    "decision is not a choice": answer({"action": "accept", "content": {"decision": "sure"}}),
    "huge decision": answer({"action": "accept", "content": {"decision": "allow_once" * (BIG // 10)}}),
    "many fields": answer({"action": "accept", "content": {f"field{i}": "x" for i in range(50_000)}}),
    "result is a list": answer([1, 2, 3]),
    "result is a string": answer("allow_once"),
    "result is null": answer(None),
    "error reply": error({"code": -32000, "message": "the user closed the dialog"}),
    "malformed error": error("no"),
    "neither result nor error": raw('{"jsonrpc": "2.0", "id": ID}'),
    "deeper than the wire allows": answer({"action": "accept", "content": {"decision": json.loads("[" * 200 + "]" * 200)}}),
    "not JSON": raw('{"jsonrpc": "2.0", "id": ID, "result": {"action": "accept"'),
}
# Answers to a free-form question's elicitation/create; each must be declined.
HOSTILE_INPUT: dict[str, Callable[[Any], bytes]] = {
    "answer is a number": answer({"action": "accept", "content": {"answer": 5}}),
    "unknown field": answer({"action": "accept", "content": {"answer": "a", "other": "b"}}),
    "accept without content": answer({"action": "accept"}),
}


async def next_request(driver: Any, method: str, timeout: float = 60.0) -> dict[str, Any]:
    """Read until the server sends a request ``method`` (progress and the like are skipped)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        message = await driver.recv(max(0.1, deadline - loop.time()))
        if message.get("method") == method and "id" in message:
            return message
        assert message.get("id") is None or "method" in message, f"a response before {method}: {message}"


async def reply_to(driver: Any, request_id: Any, timeout: float = 60.0) -> dict[str, Any]:
    """Read until the response to ``request_id`` (what the server sends meanwhile is skipped)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        message = await driver.recv(max(0.1, deadline - loop.time()))
        if message.get("id") == request_id and "method" not in message:
            return message


async def handshake(driver: Any) -> None:
    await driver.send_bytes(jsonrpc.dumps(INIT).encode())
    assert "result" in await reply_to(driver, "init")
    await driver.send_bytes(jsonrpc.dumps(INITIALIZED).encode())


def blocks_of(reply: dict[str, Any]) -> list[str]:
    """The text blocks of a tool result that is not an error."""
    assert "result" in reply, reply
    assert not reply["result"].get("isError"), reply
    return [block.get("text", "") for block in reply["result"]["content"]]


def text_of(reply: dict[str, Any]) -> str:
    """The agent's reply: the result's first text block."""
    return blocks_of(reply)[0]


UNUSABLE = "the client's answer could not be used, so the server answered"


async def answer_hostile(driver: Any, first_id: int) -> list[tuple[str, list[str]]]:
    """Each hostile answer to one call's question; (case, the result's text blocks) for those
    that went wrong. Each must be answered no, and the result must say the answer was unusable."""
    wrong: list[tuple[str, list[str]]] = []
    cases = [(name, make, "/ask rm {}", [NOT_APPROVED, f"The agent asked to run rm; {UNUSABLE} reject_once."])
             for name, make in HOSTILE.items()]
    cases += [(name, make, "/question Colour?", ["No answer (decline)", f'The agent asked "Colour?"; {UNUSABLE} decline.'])
              for name, make in HOSTILE_INPUT.items()]
    for offset, (name, make, message, expected) in enumerate(cases):
        number = first_id + offset
        await driver.send_bytes(jsonrpc.dumps(call(number, message)).encode())
        asked = await next_request(driver, "elicitation/create")
        await driver.send_bytes(make(asked["id"]))
        got = blocks_of(await reply_to(driver, f"call-{number}"))
        if got != expected:
            wrong.append((name, got))
    return wrong


def _ctx(kernel: Any) -> ServeContext:
    return ServeContext(kernel=kernel, options={"mcp": McpOptions()}, door_names=["mcp"])


# -- in memory: the door itself, with the kernel in reach ------------------------------------------


async def test_hostile_answers_in_memory(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    kernel = scripted_kernel(delay=0)
    door_end, client = channel_pair()
    serving = asyncio.ensure_future(door().serve_channel(door_end, _ctx(kernel)))
    driver = ChannelDriver(client)
    try:
        await handshake(driver)
        assert await answer_hostile(driver, 1) == []
        # The session goes on: a question answered properly still works.
        await driver.send_bytes(jsonrpc.dumps(call(100, "/ask rm {}")).encode())
        asked = await next_request(driver, "elicitation/create")
        await driver.send_bytes(answer({"action": "accept", "content": {"decision": "allow_once"}})(asked["id"]))
        assert text_of(await reply_to(driver, "call-100")) == "Approved (allow_once): ran rm"
    finally:
        await client.close()
        await asyncio.wait_for(serving, 30)
    assert kernel.active_runs == 0
    shown = [r for r in caplog.records if r.exc_info or hostile.traceback_in(r.getMessage())]
    assert not shown, [r.getMessage()[:200] for r in shown]


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_a_peer_gone_while_asked_cancels_the_run_in_memory(mode: str) -> None:
    recorder = Recorder()
    kernel = scripted_kernel(delay=0, mode=mode)
    kernel.hooks = recorder
    door_end, client = channel_pair()
    serving = asyncio.ensure_future(door().serve_channel(door_end, _ctx(kernel)))
    driver = ChannelDriver(client)
    await handshake(driver)
    await driver.send_bytes(jsonrpc.dumps(call(1, "/ask deploy {}")).encode())
    await next_request(driver, "elicitation/create")
    assert kernel.active_runs == 1
    await client.close()  # the peer goes away without answering
    await await_for(lambda: kernel.active_runs == 0, "the asking run to end and free its slot", timeout=30)
    await asyncio.wait_for(serving, 30)
    [run] = recorder.started
    outcome = recorder.wait_finished(run.run_id)
    assert getattr(outcome, "stop_reason", None) == "cancelled", outcome


# -- over stdio: a real server process ---------------------------------------------------------------


async def test_hostile_answers_over_stdio(sdk: Any, tmp_path: Path) -> None:
    driver = await StdioDriver.start(sdk.command("-o", "scripted.delay=0"), tmp_path / "stderr.txt")
    try:
        await handshake(driver)
        assert await answer_hostile(driver, 1) == []
        await driver.send_bytes(jsonrpc.dumps(call(100, "hello")).encode())
        assert text_of(await reply_to(driver, "call-100")).startswith("You said: hello")
        assert await driver.finish() == 0
    finally:
        await driver.kill()
    driver.clean_stderr()


async def test_closing_stdin_while_asked_cancels_the_run(sdk: Any, tmp_path: Path, outcomes: Any) -> None:
    driver = await StdioDriver.start(sdk.command("-o", "scripted.delay=0"), tmp_path / "stderr.txt", env=outcomes.env)
    try:
        await handshake(driver)
        await driver.send_bytes(jsonrpc.dumps(call(1, "/ask deploy {}")).encode())
        await next_request(driver, "elicitation/create")
        assert await driver.finish() == 0  # stdin closed: the MCP stdio shutdown
    finally:
        await driver.kill()
    record = outcomes.wait_for(lambda r: r["message"] == "/ask deploy {}")
    assert record["stop_reason"] == "cancelled" and record["workers_alive"] == 0, record
    driver.clean_stderr()


# -- over streamable HTTP: a client that drops its connection -----------------------------------------


async def test_dropping_the_http_connection_while_asked_cancels_the_run(start_http_server: Any, outcomes: Any) -> None:
    """No DELETE, no notifications/cancelled: the client just closes the call's stream."""
    import httpx

    server = start_http_server("-o", "scripted.delay=0", "-o", "max_concurrent_runs=1")
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    async with httpx.AsyncClient(timeout=60) as client:
        init = await client.post(server.url, json=INIT, headers=headers)
        assert init.status_code == 200, init.text
        session_headers = {**headers, "mcp-session-id": init.headers["mcp-session-id"],
                           "mcp-protocol-version": "2025-11-25"}
        await client.post(server.url, json=INITIALIZED, headers=session_headers)

        async def asked(request_id: int, message: str) -> dict[str, Any]:
            """Start a call and read its SSE stream until the elicitation; the stream is then closed."""
            async with client.stream("POST", server.url, json=call(request_id, message), headers=session_headers) as response:
                assert response.status_code == 200
                async for line in response.aiter_lines():
                    if line.startswith("data:"):
                        message_ = json.loads(line[5:])
                        if message_.get("method") == "elicitation/create":
                            return message_
            raise AssertionError("the call's stream ended without an elicitation")

        await asked(1, "/ask deploy {}")  # leaving the block drops the connection
        record = outcomes.wait_for(lambda r: r["message"] == "/ask deploy {}", timeout=60)
        assert record["stop_reason"] == "cancelled" and record["workers_alive"] == 0, record
        # The only run slot is free again; this time the client answers over a POST of its own.
        question = None
        async with client.stream("POST", server.url, json=call(2, "/ask deploy {}"), headers=session_headers) as response:
            async for line in response.aiter_lines():
                if not line.startswith("data:"):
                    continue
                message = json.loads(line[5:])
                if message.get("method") == "elicitation/create":
                    question = message
                    reply = {"jsonrpc": "2.0", "id": message["id"],
                             "result": {"action": "accept", "content": {"decision": "allow_once"}}}
                    posted = await client.post(server.url, json=reply, headers=session_headers)
                    assert posted.status_code == 202, posted.text
                elif message.get("id") == "call-2":
                    assert message["result"]["content"][0]["text"] == "Approved (allow_once): ran deploy"
                    break
        assert question is not None


# -- over streamable HTTP: a real client that gives up while it is asked ------------------------------

GIVE_UPS = 8  # sessions: the end of each races the client's last messages (see below)
GIVE_UP_AFTER = 2.0  # seconds: the client's read timeout (hosts often use 60, the TypeScript SDK's default)


class NeverAnswers:
    """An elicitation callback that never answers; ``asked`` is set once it was asked."""

    def __init__(self) -> None:
        self.asked = asyncio.Event()

    async def __call__(self, context: Any, params: Any) -> Any:
        self.asked.set()
        await asyncio.Event().wait()


async def test_a_client_that_gives_up_while_asked_leaves_no_traceback(sdk: Any, start_http_server: Any, outcomes: Any) -> None:
    """The SDK client declares elicitation, is asked, never answers, and gives up on the call
    when its read timeout expires (SDK 2.x then sends notifications/cancelled), then leaves:
    its last messages (the cancel, its error answer to the open elicitation) race its DELETE.
    Every run ends cancelled, the server keeps serving, and its output has no traceback."""
    from onedoor_door_mcp.sdk import read_timeout

    server = start_http_server("-o", "scripted.delay=0")
    for number in range(GIVE_UPS):
        person = NeverAnswers()
        async with sdk.http(server.url, elicitation_callback=person) as session:
            with pytest.raises(Exception) as gave_up:
                await session.call_tool("ask", {"message": f"/ask deploy{number} {{}}"},
                                        read_timeout_seconds=read_timeout(GIVE_UP_AFTER))
            assert "timed out" in str(gave_up.value).lower(), gave_up.value
            assert person.asked.is_set(), "the client gave up before the door asked it"
    for number in range(GIVE_UPS):
        record = outcomes.wait_for(lambda r, n=number: r["message"] == f"/ask deploy{n} {{}}")
        assert record["stop_reason"] == "cancelled" and record["workers_alive"] == 0, record
    async with sdk.http(server.url) as session:
        after = await session.call_tool("ask", {"message": "still serving"})
    assert sdk.text(after).startswith("You said: still serving") and not sdk.error(after)
    output = server.log.read_text()
    assert "Traceback" not in output and "Unexpected ASGI message" not in output, output[-4000:]
