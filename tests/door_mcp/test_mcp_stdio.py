"""The MCP door over stdio, against real subprocesses: the Python SDK client and raw pipes."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from typing import Any

import pytest
from onedoor.wire.jsonrpc import INVALID_REQUEST, METHOD_NOT_FOUND, PARSE_ERROR

pytestmark = pytest.mark.timeout(90)

INIT = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}},
}


# -- the SDK client -----------------------------------------------------------------------------


async def test_sdk_session_over_stdio(sdk: Any) -> None:
    """One session: initialize, tools/list, replies, history, errors, setLevel; it goes on."""
    import warnings

    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    argv = sdk.command()
    async with stdio_client(StdioServerParameters(command=argv[0], args=argv[1:], env=dict(os.environ))) as (r, w):
        async with ClientSession(r, w) as session:
            init = await session.initialize()
            tools = (await session.list_tools()).tools
            reply = await session.call_tool("ask", {"message": "hello there"})
            history = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "You said: hi"}]
            second = await session.call_tool("ask", {"message": "again", "history": history})
            failed = await session.call_tool("ask", {"message": "/fail please"})
            errored = await session.call_tool("ask", {"message": "/error please"})
            bad = [
                await session.call_tool("ask", {}),
                await session.call_tool("ask", {"message": 42}),
                await session.call_tool("ask", {"message": "x", "history": [{"role": "robot", "content": "x"}]}),
                await session.call_tool("ask", {"message": "x", "colour": "red"}),
            ]
            try:
                unknown: Any = await session.call_tool("nope", {"message": "x"})
            except Exception as exc:  # noqa: BLE001 - McpError / MCPError, depending on the SDK
                unknown = exc
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                await session.set_logging_level("debug")
            last = await session.call_tool("ask", {"message": "still there?"})

    info = init.serverInfo if hasattr(init, "serverInfo") else init.server_info
    assert (info.name, info.version) == ("onedoor", "0.1.0")
    assert "'ask'" in (init.instructions or "")
    assert [t.name for t in tools] == ["ask"]
    schema = tools[0].inputSchema if hasattr(tools[0], "inputSchema") else tools[0].input_schema
    assert schema["required"] == ["message"]
    assert set(schema["properties"]) == {"message", "attachments", "history", "thread", "new_thread"}
    assert "scripted" in tools[0].description
    assert not sdk.error(reply) and sdk.text(reply) == "You said: hello there (2 words, turn 1)"
    assert sdk.text(second) == "You said: again (1 word, turn 2)"
    assert sdk.error(failed) and "ScriptedFailure" in sdk.text(failed)
    assert sdk.error(errored) and "reports an error" in sdk.text(errored)
    for result, needle in zip(bad, ("'message'", "'message'", "history[0]", "colour")):
        assert sdk.error(result) and needle in sdk.text(result), sdk.text(result)
    if isinstance(unknown, Exception):
        assert "Unknown tool" in str(unknown)
    else:  # some SDK versions turn a JSON-RPC error into an error result
        assert sdk.error(unknown) and "Unknown tool" in sdk.text(unknown)
    assert not sdk.error(last) and sdk.text(last).startswith("You said: still there?")


async def test_progress_carries_the_deltas_in_order(sdk: Any) -> None:
    seen: list[tuple[float, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, message))

    async with sdk.stdio(sdk.command("-o", "scripted.deltas=0")) as session:
        result = await session.call_tool("ask", {"message": "one two three four"}, progress_callback=on_progress)
    final = sdk.text(result)
    texts = [m for _, m in seen if m and not m.startswith("[tool ")]
    tools = [m for _, m in seen if m and m.startswith("[tool ")]
    assert "".join(texts) == final
    assert len(texts) == len(final.split(" "))  # one notification per word, in order
    assert tools[0].startswith("[tool word_count") and "->" in tools[1]
    assert [p for p, _ in seen] == sorted(p for p, _ in seen)  # progress only grows


async def test_no_progress_without_a_token(sdk: Any) -> None:
    messages: list[Any] = []

    async def on_message(message: Any) -> None:
        messages.append(message)

    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    argv = sdk.command()
    async with stdio_client(StdioServerParameters(command=argv[0], args=argv[1:], env=dict(os.environ))) as (r, w):
        async with ClientSession(r, w, message_handler=on_message) as session:
            await session.initialize()
            result = await session.call_tool("ask", {"message": "quiet please"})
    assert sdk.text(result).startswith("You said: quiet please")
    assert not [m for m in messages if "progress" in type(getattr(m, "root", m)).__name__.lower()]


async def test_refused_run_is_an_error_result(sdk: Any) -> None:
    async with sdk.stdio(sdk.command("-o", "limits.max_message_chars=20")) as session:
        result = await session.call_tool("ask", {"message": "x" * 50})
    assert sdk.error(result)
    assert "too_large" in sdk.text(result)


def test_stdout_carries_only_json_rpc_whatever_the_backend_prints(sdk: Any) -> None:
    proc = RawServer(sdk.command(backend="noisy"))
    try:
        proc.initialize()
        proc.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "ask", "arguments": {"message": "noise"}}})
        assert proc.until_id(1)["result"]["isError"] is False
    finally:
        stderr = proc.close()
    assert all(isinstance(json.loads(line), dict) for line in proc.lines)
    assert "noise from print()" in stderr and "noise written to fd 1" in stderr and "noise from a child" in stderr


# -- raw pipes: bad input ---------------------------------------------------------------------


class RawServer:
    """An MCP stdio server driven line by line."""

    def __init__(self, argv: list[str], env: dict[str, str] | None = None) -> None:
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env={**os.environ, **(env or {})}, bufsize=0,
        )
        self.lines: list[str] = []
        self._queue: queue.Queue[bytes] = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._queue.put(line)
        self._queue.put(b"")

    def send_raw(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send(self, message: Any) -> None:
        self.send_raw(json.dumps(message).encode() + b"\n")

    def recv(self, timeout: float = 20.0) -> dict[str, Any]:
        try:
            line = self._queue.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"no message from the server within {timeout} s") from None
        assert line, "the server closed stdout"
        text = line.decode()
        self.lines.append(text)
        return json.loads(text)

    def until_id(self, rid: Any, limit: int = 2000) -> dict[str, Any]:
        for _ in range(limit):
            message = self.recv()
            if message.get("id") == rid and ("result" in message or "error" in message):
                return message
        raise AssertionError(f"no answer to {rid!r}")

    def initialize(self) -> dict[str, Any]:
        self.send(INIT)
        answer = self.until_id(0)
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return answer

    def close(self, timeout: float = 20.0) -> str:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)
            raise AssertionError("the server did not exit after stdin closed")
        while True:
            try:
                line = self._queue.get(timeout=5)
            except queue.Empty:
                break
            if not line:
                break
            self.lines.append(line.decode())
        return self.proc.stderr.read().decode() if self.proc.stderr else ""


@pytest.fixture
def raw(sdk: Any) -> Any:
    server = RawServer(sdk.command("-o", "max_message_bytes=65536"))
    yield server
    if server.proc.poll() is None:
        server.close()


def _error(message: dict[str, Any]) -> int:
    assert "error" in message, message
    return message["error"]["code"]


def _ping_ok(raw: RawServer, rid: int) -> None:
    raw.send({"jsonrpc": "2.0", "id": rid, "method": "ping"})
    assert raw.until_id(rid)["result"] == {}


def test_garbage_lines_get_parse_errors_and_the_server_goes_on(raw: RawServer) -> None:
    raw.initialize()
    for garbage in (b"this is not json\n", b"{\"jsonrpc\": \"2.0\", \"id\": 1, \n", b"\xff\xfe\x00garbage\n"):
        raw.send_raw(garbage)
        answer = raw.recv()
        assert answer["id"] is None and _error(answer) == PARSE_ERROR
    _ping_ok(raw, 100)


def test_invalid_json_rpc_gets_invalid_request(raw: RawServer) -> None:
    raw.initialize()
    for bad, rid in (([1, 2], None), ("just a string", None), ({"id": 7}, 7), ({"jsonrpc": "1.0", "id": 8, "method": "ping"}, 8),
                     ({"jsonrpc": "2.0", "id": {"x": 1}, "method": "ping"}, None)):
        raw.send(bad)
        answer = raw.recv()
        assert _error(answer) == INVALID_REQUEST, (bad, answer)
        assert answer["id"] == rid
    _ping_ok(raw, 101)


def test_unknown_method_gets_method_not_found(raw: RawServer) -> None:
    raw.initialize()
    raw.send({"jsonrpc": "2.0", "id": 9, "method": "agents/teleport", "params": {}})
    assert _error(raw.until_id(9)) == METHOD_NOT_FOUND
    raw.send({"jsonrpc": "2.0", "id": 10, "method": "prompts/list"})
    assert _error(raw.until_id(10)) == METHOD_NOT_FOUND
    raw.send({"jsonrpc": "2.0", "method": "notifications/unheard-of"})  # ignored, never answered
    _ping_ok(raw, 102)


def test_wrong_tool_call_params_get_errors(raw: RawServer) -> None:
    raw.initialize()
    raw.send({"jsonrpc": "2.0", "id": 11, "method": "tools/call", "params": {"arguments": {"message": "no name"}}})
    assert _error(raw.until_id(11)) == -32602
    raw.send({"jsonrpc": "2.0", "id": 12, "method": "tools/call", "params": {"name": "ask", "arguments": "not an object"}})
    assert _error(raw.until_id(12)) == -32602
    raw.send({"jsonrpc": "2.0", "id": 13, "method": "tools/call", "params": {"name": "ask", "arguments": {"message": ""}}})
    assert raw.until_id(13)["result"]["isError"] is True
    _ping_ok(raw, 103)


def test_a_huge_message_is_refused_and_the_server_goes_on(raw: RawServer) -> None:
    raw.initialize()
    huge = {"jsonrpc": "2.0", "id": 14, "method": "tools/call", "params": {"name": "ask", "arguments": {"message": "x" * 200_000}}}
    raw.send(huge)
    answer = raw.recv()
    assert _error(answer) == INVALID_REQUEST and "limit" in answer["error"]["message"]
    raw.send({"jsonrpc": "2.0", "id": 15, "method": "tools/call", "params": {"name": "ask", "arguments": {"message": "small"}}})
    assert raw.until_id(15)["result"]["content"][0]["text"].startswith("You said: small")


def test_closing_stdin_ends_the_server_and_answers_what_was_read(sdk: Any) -> None:
    proc = subprocess.run(
        sdk.command(),
        input=(json.dumps(INIT) + "\n" + json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}) + "\n").encode(),
        capture_output=True, timeout=30,
    )
    assert proc.returncode == 0
    answers = [json.loads(line) for line in proc.stdout.decode().splitlines()]
    assert [a["id"] for a in answers] == [0, 1]


# -- cancellation -----------------------------------------------------------------------------


def test_notifications_cancelled_stops_the_backend(sdk: Any, outcomes: Any) -> None:
    raw = RawServer(sdk.command(), env=outcomes.env)
    try:
        raw.initialize()
        raw.send({"jsonrpc": "2.0", "id": 20, "method": "tools/call",
                  "params": {"name": "ask", "arguments": {"message": "/slow /long 500 go"}, "_meta": {"progressToken": "p"}}})
        first = raw.recv()  # the run is streaming
        assert first["method"] == "notifications/progress"
        raw.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 20, "reason": "test"}})
        record = outcomes.wait_for(lambda r: r["message"].startswith("/slow /long 500"))
        assert record["stop_reason"] == "cancelled"
        assert record["workers_alive"] == 0
        # a cancelled request gets no result (1.x sends an error, 2.x nothing); the session goes on
        _ping_ok(raw, 21)
        answers = [json.loads(line) for line in raw.lines if json.loads(line).get("id") == 20]
        assert all("error" in a for a in answers), answers
    finally:
        raw.close()


def test_closing_stdin_mid_run_cancels_it(sdk: Any, outcomes: Any) -> None:
    raw = RawServer(sdk.command(), env=outcomes.env)
    raw.initialize()
    raw.send({"jsonrpc": "2.0", "id": 30, "method": "tools/call",
              "params": {"name": "ask", "arguments": {"message": "/slow /long 100000 go"}, "_meta": {"progressToken": 1}}})
    assert raw.recv()["method"] == "notifications/progress"  # the run is streaming
    raw.close(timeout=20)  # raises if the server does not exit
    record = outcomes.wait_for(lambda r: r["message"] == "/slow /long 100000 go")
    assert record["stop_reason"] == "cancelled" and record["workers_alive"] == 0
    assert raw.proc.returncode == 0


def test_entry_point_module_imports_nothing_heavy() -> None:
    code = (
        "import sys, onedoor_door_mcp.door as d; "
        "heavy = [m for m in ('mcp', 'starlette', 'uvicorn', 'pydantic', 'anyio') if m in sys.modules]; "
        "print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr
