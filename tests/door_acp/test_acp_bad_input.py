"""Bad input gets a clear JSON-RPC error and the door keeps serving."""

from __future__ import annotations

import asyncio
import base64
import json
from pathlib import Path
from typing import Any

import pytest
from onedoor.builtins.scripted_extras import DOT_PNG
from onedoor.composition import ServeContext
from onedoor.testing import channel_pair, scripted_kernel

pytestmark = pytest.mark.timeout(60)
PNG = base64.b64encode(DOT_PNG).decode("ascii")


class RawDoor:
    """The door over an in-memory channel pair (no transport), driven with raw lines."""

    def __init__(self, data_dir: Path, kernel_options: dict[str, Any] | None = None, **pair_options: Any) -> None:
        from onedoor_door_acp.door import AcpOptions

        self.kernel_options = kernel_options or {}
        self.door_end, self.client = channel_pair(line_framed=True, **pair_options)
        self.options = AcpOptions(data_dir=str(data_dir))
        self.task: asyncio.Task | None = None

    async def __aenter__(self) -> "RawDoor":
        from onedoor_door_acp.server import serve_acp

        kernel = scripted_kernel(reasoning=False, tool=False, **self.kernel_options)
        ctx = ServeContext(kernel=kernel, options={"acp": self.options})
        self.task = asyncio.create_task(serve_acp(self.door_end, ctx, self.options))
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.client.close()
        assert self.task is not None
        await asyncio.wait_for(self.task, 10)

    async def send(self, line: Any) -> None:
        await self.client.send(line if isinstance(line, str) else json.dumps(line))

    async def reply(self) -> dict[str, Any]:
        """The next response (notifications are skipped)."""
        for _ in range(1000):
            msg = await self.client.recv_json(10)
            if "method" not in msg:
                return msg
        raise AssertionError("no response")

    async def call(self, method: str, params: Any, request_id: Any) -> dict[str, Any]:
        await self.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        return await self.client.reply_to(request_id, 10)  # replies to earlier (bad) messages are skipped


@pytest.mark.parametrize(
    "line, code",
    [
        ("this is not json", -32700),
        ('{"jsonrpc": "2.0", "id": 1, "method": "initialize"', -32700),
        ("[]", -32600),
        ('[{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}]', -32600),
        ("42", -32600),
        ('"text"', -32600),
        ('{"id": 5, "method": "initialize", "params": {"protocolVersion": 1}}', -32600),
        ('{"jsonrpc": "1.0", "id": 5, "method": "initialize"}', -32600),
        ('{"jsonrpc": "2.0", "id": 5, "method": 12}', -32600),
        ('{"jsonrpc": "2.0", "id": {"a": 1}, "method": "initialize"}', -32600),
        ('{"jsonrpc": "2.0", "id": 5}', -32600),
        ('{"jsonrpc": "2.0", "id": 5, "method": "initialize", "params": 3}', -32600),
        ('{"jsonrpc": "2.0", "id": 5, "method": "initialize", "params": [1]}', -32602),
        ('{"jsonrpc": "2.0", "id": 5, "method": "initialize", "params": {}}', -32602),
        ('{"jsonrpc": "2.0", "id": 5, "method": "session/new", "params": {"cwd": 7}}', -32602),
        ('{"jsonrpc": "2.0", "id": 5, "method": "session/new", "params": {"cwd": "relative/dir", "mcpServers": []}}', -32602),
        ('{"jsonrpc": "2.0", "id": 5, "method": "no/such/method", "params": {}}', -32601),
        ('{"jsonrpc": "2.0", "id": 5, "method": "_vendor/thing", "params": {}}', -32601),
        ('{"jsonrpc": "2.0", "id": 5, "method": "session/set_mode", "params": {"sessionId": "x", "modeId": "y"}}', -32601),
        ('{"jsonrpc": "2.0", "id": 5, "method": "authenticate", "params": {"methodId": "x"}}', -32601),
    ],
)
async def test_bad_lines_get_errors_and_the_door_keeps_serving(data_dir: Path, line: str, code: int) -> None:
    async with RawDoor(data_dir) as door:
        await door.send(line)
        error = await door.reply()
        assert error["jsonrpc"] == "2.0"
        assert error["error"]["code"] == code, error
        assert error["error"]["message"]
        ok = await door.call("initialize", {"protocolVersion": 1}, 99)
        assert ok["result"]["protocolVersion"] == 1


async def test_unknown_notifications_are_ignored_and_responses_without_requests_too(data_dir: Path) -> None:
    async with RawDoor(data_dir) as door:
        await door.send({"jsonrpc": "2.0", "method": "no/such/notification", "params": {}})
        await door.send({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "nope"}})
        await door.send({"jsonrpc": "2.0", "id": 12345, "result": {}})
        ok = await door.call("initialize", {"protocolVersion": 1}, 1)
        assert ok["result"]["protocolVersion"] == 1


async def test_session_errors(data_dir: Path) -> None:
    async with RawDoor(data_dir, {"accepts": ""}) as door:  # a backend of text only
        for request_id, (method, params) in enumerate([
            ("session/prompt", {"sessionId": "sess_missing", "prompt": [{"type": "text", "text": "hi"}]}),
            ("session/load", {"sessionId": "sess_missing", "cwd": "/tmp", "mcpServers": []}),
            ("session/set_config_option", {"sessionId": "sess_missing", "configId": "backend", "value": "scripted"}),
        ], start=1):
            error = await door.call(method, params, request_id)
            assert error["error"]["code"] == -32002
            assert "sess_missing" in error["error"]["message"]
        sid = (await door.call("session/new", {"cwd": "/tmp", "mcpServers": []}, 10))["result"]["sessionId"]
        for request_id, (blocks, code, words) in enumerate([
            ([{"type": "image", "data": PNG, "mimeType": "image/png"}], -32602, "does not take image parts"),
            ([{"type": "audio", "data": "AAAA", "mimeType": "audio/ogg"}], -32602, "does not take audio parts"),
            ([{"type": "resource", "resource": {"uri": "file:///x.bin", "blob": "AAAA"}}], -32602, "does not take resource"),
            ([{"type": "video", "url": "x"}], -32602, ""),
            ([{"type": "text"}], -32602, ""),
            ("hello", -32602, ""),
            ([{"type": "text", "text": "   "}], -32602, "empty"),
        ], start=20):
            error = await door.call("session/prompt", {"sessionId": sid, "prompt": blocks}, request_id)
            assert error["error"]["code"] == code, error
            assert words in json.dumps(error["error"])
        error = await door.call("session/set_config_option", {"sessionId": sid, "configId": "colour", "value": "red"}, 40)
        assert error["error"]["code"] == -32602
        for request_id, params in enumerate([{"sessionId": sid}, {"sessionId": sid, "modelId": None}, {}], start=60):
            error = await door.call("session/set_model", params, request_id)
            assert error["error"]["code"] == -32602 and "sessionId and modelId" in error["error"]["message"]
        error = await door.call("session/set_model", {"sessionId": sid, "modelId": "x"}, 63)
        assert error["error"]["code"] == -32602 and "offers no model choice" in error["error"]["message"]
        error = await door.call("session/list", {"cursor": "not-a-number"}, 41)
        assert error["error"]["code"] == -32602
        await door.call("session/close", {"sessionId": sid}, 42)
        error = await door.call("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "hi"}]}, 43)
        assert error["error"]["code"] == -32002 and "closed" in error["error"]["message"]
        # still serving: a new session answers
        sid2 = (await door.call("session/new", {"cwd": "/tmp", "mcpServers": []}, 50))["result"]["sessionId"]
        ok = await door.call("session/prompt", {"sessionId": sid2, "prompt": [{"type": "text", "text": "hi"}]}, 51)
        assert ok["result"]["stopReason"] == "end_turn"


async def test_a_failing_backend_run_is_an_error_reply_not_a_stop_reason(data_dir: Path) -> None:
    async with RawDoor(data_dir) as door:
        sid = (await door.call("session/new", {"cwd": "/tmp", "mcpServers": []}, 1))["result"]["sessionId"]
        for request_id, text in ((2, "/fail boom"), (3, "/error boom")):
            error = await door.call("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": text}]}, request_id)
            assert error["error"]["code"] == -32603
            assert "backend failed" in error["error"]["message"]
        ok = await door.call("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "fine"}]}, 4)
        assert ok["result"]["stopReason"] == "end_turn"


async def test_an_oversized_message_is_refused_and_the_door_reads_on(data_dir: Path) -> None:
    async with RawDoor(data_dir, max_message_bytes=1000) as door:
        await door.send("x" * 5000)  # arrives at the door as MessageTooLarge, as over stdio or SLIM
        error = await door.reply()
        assert error["error"]["code"] == -32600 and "over the limit" in error["error"]["message"]
        ok = await door.call("initialize", {"protocolVersion": 1}, 1)
        assert ok["result"]["protocolVersion"] == 1


def test_fuzzed_messages_never_break_the_door(data_dir: Path) -> None:
    """Any JSON value, as a message, gets at most error replies; the door keeps serving."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20)
    values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3), max_leaves=8)
    methods = st.sampled_from(["initialize", "session/new", "session/load", "session/prompt", "session/cancel",
                               "session/list", "session/set_config_option", "session/set_model", "session/close",
                               "session/fork", "x/y"])
    messages = values | st.fixed_dictionaries(
        {"jsonrpc": st.just("2.0"), "method": methods, "params": values},
        optional={"id": st.integers(0, 10**6) | st.text(max_size=5)},
    )

    @settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
    @given(batch=st.lists(messages, min_size=1, max_size=4))
    def check(batch: list[Any]) -> None:
        async def scenario() -> None:
            async with RawDoor(data_dir) as door:
                for message in batch:
                    await door.send(json.dumps(message))
                ok = await door.call("initialize", {"protocolVersion": 1}, "final-check")
                assert ok["result"]["protocolVersion"] == 1

        asyncio.run(scenario())

    check()


async def test_cancel_request_notification_cancels_a_running_prompt(data_dir: Path) -> None:
    """The TypeScript SDK cancels an aborted request with $/cancel_request."""
    async with RawDoor(data_dir) as door:
        sid = (await door.call("session/new", {"cwd": "/tmp", "mcpServers": []}, 1))["result"]["sessionId"]
        await door.send({"jsonrpc": "2.0", "id": 2, "method": "session/prompt",
                         "params": {"sessionId": sid, "prompt": [{"type": "text", "text": "/hang on"}]}})
        await door.send({"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": 999}})  # unknown: ignored
        await door.send({"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": 2}})
        reply = await door.reply()
        assert reply["id"] == 2 and reply["result"]["stopReason"] == "cancelled"
