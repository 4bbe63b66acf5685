"""The shared hostile corpus against the MCP door: in memory (no transport) and over stdio in
a real `onedoor serve --door mcp --transport stdio` process, plus property-based fuzzing
of the door's JSON-RPC layer.

Each case gets a protocol-correct error (or silence, for a notification or a response),
a normal request afterwards still succeeds, nothing logged looks like a traceback, and on
stdio every stdout line is a JSON-RPC message (see tests/hostile_jsonrpc_support.py).
"""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import Any

import pytest
from hostile_jsonrpc_support import (
    MCP_TOOL_CALL,
    ChannelDriver,
    StdioDriver,
    fuzz_door,
    mcp_handshake,
    mcp_rules,
    run_cases,
)
from onedoor.composition import ServeContext
from onedoor.testing import channel_pair, hostile, scripted_kernel, serve_in_memory
from onedoor_door_mcp import McpOptions, door

pytestmark = pytest.mark.timeout(300)

CASES = hostile.all_raw(jsonrpc=True) + list(hostile.mutations(MCP_TOOL_CALL))
LINE_CASES = hostile.all_raw(jsonrpc=True, line_framed=True) + list(hostile.mutations(MCP_TOOL_CALL))


DOT = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
ASK_WITH_ATTACHMENTS = {  # every field of an attachment, and the trace context, mutated one at a time
    "jsonrpc": "2.0", "id": 1, "method": "tools/call",
    "params": {"name": "ask", "_meta": {"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},
               "arguments": {"message": "look", "attachments": [
                   {"type": "image", "data": DOT, "mimeType": "image/png", "name": "dot.png"},
                   {"type": "resource", "resource": {"uri": "file:///a.py", "mimeType": "text/x-python", "text": "x"},
                    "lines": [1, 2]},
                   {"type": "resource_link", "uri": "https://example.com/b", "name": "b", "size": 3},
               ]}},
}
STATE_READ = {"jsonrpc": "2.0", "id": 1, "method": "resources/read",
              "params": {"uri": "onedoor://threads/t-000000000000000000000000/state"}}


def _ctx() -> ServeContext:
    return ServeContext(kernel=scripted_kernel(delay=0), options={"mcp": McpOptions()}, door_names=["mcp"])


def _no_tracebacks(caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]) -> None:
    shown = [r for r in caplog.records if r.exc_info or hostile.traceback_in(r.getMessage())]
    assert not shown, [f"{r.name}: {r.getMessage()[:200]}" for r in shown]
    assert hostile.traceback_in(capsys.readouterr().err) is None


async def test_hostile_corpus_in_memory(caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]) -> None:
    caplog.set_level(logging.INFO)
    async with serve_in_memory(door(), _ctx()) as client:
        driver = ChannelDriver(client)
        await mcp_handshake(driver)
        tally = await run_cases(driver, CASES, mcp_rules())
    tally.assert_clean(len(CASES))
    _no_tracebacks(caplog, capsys)


async def test_hostile_attachments_and_resource_reads_in_memory(
    caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Each field of an ask with attachments, and of a state resource read, replaced by each
    hostile value: a protocol-correct answer (an isError result or a JSON-RPC error), no traceback."""
    from onedoor.threads.sqlite import SQLiteThreadStore

    caplog.set_level(logging.INFO)
    cases = list(hostile.mutations(ASK_WITH_ATTACHMENTS, keep=("jsonrpc",))) + list(
        hostile.mutations(STATE_READ, keep=("jsonrpc",)))
    store = SQLiteThreadStore(tmp_path / "threads.sqlite3")
    ctx = ServeContext(kernel=scripted_kernel(delay=0, store=store), options={"mcp": McpOptions()}, door_names=["mcp"])
    try:
        async with serve_in_memory(door(), ctx) as client:
            driver = ChannelDriver(client)
            await mcp_handshake(driver)
            tally = await run_cases(driver, cases, mcp_rules())
    finally:
        await store.close()
    tally.assert_clean(len(cases))
    _no_tracebacks(caplog, capsys)


async def test_hostile_corpus_over_stdio(sdk: Any, tmp_path: Path) -> None:
    driver = await StdioDriver.start(sdk.command("-o", "scripted.delay=0"), tmp_path / "stderr.txt")
    try:
        await mcp_handshake(driver)
        tally = await run_cases(driver, LINE_CASES, mcp_rules(line_framed=True))
        code = await driver.finish()
    finally:
        await driver.kill()
    tally.assert_clean(len(LINE_CASES))
    assert code == 0
    assert "refused a message" in driver.clean_stderr()  # each refusal is logged, in one line


async def test_the_lines_that_used_to_kill_the_stdio_server(sdk: Any, tmp_path: Path) -> None:
    """Issue 12: a 2 KB line of nested arrays, a lone surrogate in an id, bytes that are not UTF-8."""
    driver = await StdioDriver.start(sdk.command(), tmp_path / "stderr.txt")
    try:
        await mcp_handshake(driver)
        for line in (b"[" * 1000 + b"]" * 1000, b'{"jsonrpc":"2.0","id":"\\ud800","method":"ping"}', b"\xff\xfe{}"):
            await driver.send_bytes(line)
            reply = await driver.recv(30)
            assert reply["id"] is None and reply["error"]["code"] == -32700, reply
        await driver.send_bytes(json.dumps({"jsonrpc": "2.0", "id": 7, "method": "ping"}).encode())
        assert (await driver.recv(30)) == {"jsonrpc": "2.0", "id": 7, "result": {}}
        assert await driver.finish() == 0
    finally:
        await driver.kill()
    driver.clean_stderr()


async def test_a_door_reply_holding_a_lone_surrogate_is_written_as_an_escape() -> None:
    """A backend's half emoji (split across deltas) reaches the client as a JSON escape."""
    from onedoor.testing import kernel_for_agent

    class HalfEmoji:
        def run(self, message: str, *, history: Any = None, context: Any = None) -> Any:
            from onedoor.events import RunFinished, RunStarted, TextDelta

            yield RunStarted(context.run_id)
            yield TextDelta("a\ud83d")
            yield TextDelta("\ude00b")
            yield RunFinished(context.run_id, "a\ud83d\ude00b")

    ctx = ServeContext(kernel=kernel_for_agent(HalfEmoji), options={"mcp": McpOptions()})
    door_end, client = channel_pair()
    task = asyncio.ensure_future(door().serve_channel(door_end, ctx))
    try:
        await mcp_handshake(ChannelDriver(client))
        await client.send_json({**MCP_TOOL_CALL, "id": 2})
        seen: list[Any] = []
        reply = await client.reply_to(2, seen=seen)
    finally:
        await client.close()
        await asyncio.wait_for(task, 15)
    assert reply["result"]["content"][0]["text"] == "a\U0001f600b"
    joined = "".join(m["params"]["message"] for m in seen)  # as a UTF-16 client (JavaScript) joins them
    assert joined.encode("utf-16-le", "surrogatepass").decode("utf-16-le") == "a\U0001f600b"


def test_fuzzed_json_rpc_layer(caplog: pytest.LogCaptureFixture) -> None:
    """Any bytes, any JSON value, anything JSON-RPC-shaped: a correct answer (or none), and
    the session goes on. One session serves every example (it has to stay healthy)."""
    caplog.set_level(logging.INFO)
    methods = ["ping", "tools/list", "tools/call", "initialize", "logging/setLevel", "resources/list",
               "notifications/cancelled", "notifications/progress", "notifications/initialized", "x/y"]
    fuzz_door(door(), _ctx(), mcp_rules(), start=mcp_handshake, methods=methods)
    assert not [r for r in caplog.records if r.exc_info]


# -- MCP 2026-07-28: a retried call (inputResponses, requestState) over streamable HTTP ---------------

MODERN_HEADERS = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "ask",
                  "Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def _modern_retry(key: str, state: str) -> dict[str, Any]:
    """A good retry of ``/ask rm {}`` answering question ``key``, as a raw 2026-07-28 request."""
    return {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "ask", "arguments": {"message": "/ask rm {}"},
        "inputResponses": {key: {"action": "accept", "content": {"decision": "allow_once"}}},
        "requestState": state,
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientInfo": {"name": "hostile", "version": "1"},
                  "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}}}}}


def _answers_of(body: str) -> list[dict[str, Any]]:
    """The JSON-RPC messages of a response body (JSON, or SSE ``data:`` lines)."""
    if body.lstrip().startswith("{"):
        return [json.loads(body)]
    return [json.loads(line[5:]) for line in body.splitlines() if line.startswith("data:") and line[5:].strip()]


@pytest.mark.skipif(int(__import__("importlib.metadata").metadata.version("mcp").split(".")[0]) < 2,
                    reason="the 2026-07-28 revision needs the MCP SDK 2.x")
async def test_hostile_retries_over_http(start_http_server: Any) -> None:
    """Each field of a retried call replaced by each hostile value (then removed): an HTTP
    error below 500 or a JSON-RPC answer (a result or an error), never a traceback; the
    server answers a good call afterwards."""
    import httpx2
    import mcp.types as types
    from mcp.client import Client

    server = start_http_server("-o", "scripted.delay=0")

    async def person(context: Any, params: Any) -> Any:
        return types.ElicitResult(action="decline")

    async with Client(server.url, elicitation_callback=person) as client:
        asking = await client.session.call_tool("ask", {"message": "/ask rm {}"}, allow_input_required=True)
        [key] = asking.input_requests
        cases = list(hostile.mutations(_modern_retry(key, asking.request_state), keep=("jsonrpc",)))
        bad: list[str] = []
        reasons: set[str] = set()  # the door's own refusals seen (data.reason)
        async with httpx2.AsyncClient(timeout=60) as http:
            for case in cases:
                response = await http.post(server.url, content=case.payload, headers=MODERN_HEADERS)
                if response.status_code >= 500:
                    bad.append(f"{case}: HTTP {response.status_code}")
                    continue
                for message in _answers_of(response.text) if response.text.strip() else []:
                    if response.status_code == 400 and set(message) == {"error", "detail"}:
                        continue  # the HTTP transport's guard refused the body (e.g. a lone surrogate)
                    error = message.get("error")
                    if "result" in message:
                        continue
                    if not (isinstance(error, dict) and isinstance(error.get("code"), int) and error.get("message")):
                        bad.append(f"{case}: {str(message)[:200]}")
                    elif isinstance(error.get("data"), dict):
                        reasons.add(str(error["data"].get("reason")))
        assert not bad, bad[:20]
        assert {"invalid_request_state", "missing_input_response", "invalid_answer"} <= reasons, reasons
        after = await client.call_tool("ask", {"message": "still serving"})
    assert after.content[0].text.startswith("You said: still serving")
    log = server.log.read_text()
    assert hostile.traceback_in(log) is None, log[-3000:]
