"""The MCP door in-process: the channel bridge on fake channels, the Host checks, the tool."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from onedoor.composition import ChannelClosed, MessageTooLarge, ServeContext
from onedoor.testing import scripted_kernel
from onedoor_door_mcp import McpOptions, door
from onedoor_door_mcp.asgi import _matches, allowed_hosts, allowed_origins
from onedoor_door_mcp.channel import decode
from onedoor_door_mcp.tool import AskTool

pytestmark = pytest.mark.timeout(60)

INIT = {
    "jsonrpc": "2.0", "id": 0, "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}


class FakeChannel:
    """Whole messages in from a list (or raised), out to a list; closes when told."""

    peer = "fake"

    def __init__(self) -> None:
        self.inbox: asyncio.Queue[Any] = asyncio.Queue()
        self.sent: list[dict[str, Any]] = []
        self.arrived = asyncio.Event()
        self.broken = False

    def push(self, item: Any) -> None:
        self.inbox.put_nowait(item if isinstance(item, (str, Exception)) or item is None else json.dumps(item))

    async def recv(self) -> str | None:
        item = await self.inbox.get()
        if isinstance(item, Exception):
            raise item
        return item

    async def send(self, message: str) -> None:
        if self.broken:
            raise ChannelClosed("gone")
        self.sent.append(json.loads(message))
        self.arrived.set()

    async def close(self) -> None:
        pass

    async def answer(self, rid: Any, timeout: float = 15.0) -> dict[str, Any]:
        async def wait() -> dict[str, Any]:
            while True:
                for message in self.sent:
                    if message.get("id") == rid and ("result" in message or "error" in message):
                        return message
                self.arrived.clear()
                await self.arrived.wait()

        return await asyncio.wait_for(wait(), timeout)


async def _serve(channel: FakeChannel, kernel: Any) -> asyncio.Task:
    ctx = ServeContext(kernel=kernel, options={"mcp": McpOptions()}, door_names=["mcp"])
    return asyncio.ensure_future(door().serve_channel(channel, ctx))


async def test_channel_session_answers_and_ends_when_the_peer_closes() -> None:
    kernel = scripted_kernel()
    channel = FakeChannel()
    task = await _serve(channel, kernel)
    channel.push(INIT)
    assert (await channel.answer(0))["result"]["serverInfo"]["name"] == "onedoor"
    channel.push({"jsonrpc": "2.0", "method": "notifications/initialized"})
    channel.push({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "ask", "arguments": {"message": "hi"}}})
    assert (await channel.answer(1))["result"]["content"][0]["text"] == "You said: hi (1 words, turn 1)"
    channel.push(None)
    await asyncio.wait_for(task, 15)
    assert kernel.active_runs == 0


async def test_oversized_message_is_answered_and_the_session_goes_on() -> None:
    channel = FakeChannel()
    task = await _serve(channel, scripted_kernel())
    channel.push(INIT)
    await channel.answer(0)
    channel.push(MessageTooLarge(10_000_000, 65536))
    channel.push({"jsonrpc": "2.0", "id": 2, "method": "ping"})
    assert (await channel.answer(2))["result"] == {}
    too_large = [m for m in channel.sent if m.get("id") is None and "error" in m]
    assert too_large and too_large[0]["error"]["code"] == -32600 and "65536" in too_large[0]["error"]["message"]
    channel.push(None)
    await asyncio.wait_for(task, 15)


async def test_a_peer_that_goes_away_mid_run_cancels_it() -> None:
    kernel = scripted_kernel()
    channel = FakeChannel()
    task = await _serve(channel, kernel)
    channel.push(INIT)
    await channel.answer(0)
    channel.push({"jsonrpc": "2.0", "method": "notifications/initialized"})
    channel.push({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                  "params": {"name": "ask", "arguments": {"message": "/hang"}, "_meta": {"progressToken": 3}}})
    for _ in range(200):  # bounded wait for the run to start
        if kernel.active_runs:
            break
        await asyncio.sleep(0.02)
    assert kernel.active_runs == 1
    channel.broken = True  # the next write fails
    channel.push(None)
    await asyncio.wait_for(task, 20)
    assert kernel.active_runs == 0
    assert not [t for t in kernel.worker_threads() if t.is_alive()]


async def test_two_channels_share_one_kernel() -> None:
    """A channel transport such as SLIM serves many sessions at once."""
    kernel = scripted_kernel()
    channels = [FakeChannel(), FakeChannel()]
    tasks = [await _serve(c, kernel) for c in channels]
    for index, channel in enumerate(channels):
        channel.push(INIT)
        channel.push({"jsonrpc": "2.0", "method": "notifications/initialized"})
        channel.push({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                      "params": {"name": "ask", "arguments": {"message": f"session{index}"}}})
    answers = [await c.answer(1) for c in channels]
    assert [a["result"]["content"][0]["text"] for a in answers] == [f"You said: session{i} (1 words, turn 1)" for i in range(2)]
    for channel in channels:
        channel.push(None)
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
    answer = json.loads(decode(text))
    assert answer["error"]["code"] == code and answer["id"] == rid


def test_decode_passes_good_messages_and_drops_bad_notifications() -> None:
    assert not isinstance(decode(json.dumps({"jsonrpc": "2.0", "id": "a", "method": "ping"})), str)
    assert decode(json.dumps({"jsonrpc": "1.0", "method": "notifications/x"})) is None


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
    assert check({"message": "hi"}) == ("hi", [])
    assert check({"message": "hi", "history": [{"role": "user", "content": "x"}]})[1] == [{"role": "user", "content": "x"}]
    for bad in (None, [], {"message": "  "}, {"message": "x", "history": {}}, {"message": "x", "history": ["x"]},
                {"message": "x", "extra": 1}, {"message": "x", "history": [{"role": "user"}]}):
        with pytest.raises(ValueError):
            check(bad)


def test_door_declares_both_shapes() -> None:
    obj = door()
    assert obj.shapes == frozenset({"asgi", "channel"}) and obj.framing == "ndjson"
    mount = obj.asgi_mount(ServeContext(kernel=scripted_kernel()))
    assert mount.prefix == "/mcp" and callable(mount.lifespan)


def test_any_host_when_served_to_the_network_behind_a_token() -> None:
    from dataclasses import dataclass

    from onedoor_door_mcp.asgi import make_app

    @dataclass
    class HttpOpts:
        host: str
        token: str

    def app_for(host: str, token: str) -> Any:
        ctx = ServeContext(kernel=scripted_kernel(), options={"http": HttpOpts(host, token)}, transport_name="http")
        return make_app(ctx)

    assert app_for("0.0.0.0", "t" * 32).hosts == ["*"]
    assert "evil.example" not in app_for("0.0.0.0", "").hosts and app_for("0.0.0.0", "").hosts != ["*"]
    loopback = app_for("127.0.0.1", "t" * 32)
    assert loopback.hosts != ["*"] and not _matches("evil.example", loopback.hosts)
    assert not _matches("http://evil.example", app_for("0.0.0.0", "t" * 32).origins)


async def test_tool_name_and_server_name_options() -> None:
    channel = FakeChannel()
    ctx = ServeContext(kernel=scripted_kernel(), options={"mcp": McpOptions(tool_name="consult", server_name="helper")})
    task = asyncio.ensure_future(door().serve_channel(channel, ctx))
    channel.push(INIT)
    assert (await channel.answer(0))["result"]["serverInfo"]["name"] == "helper"
    channel.push({"jsonrpc": "2.0", "method": "notifications/initialized"})
    channel.push({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert [t["name"] for t in (await channel.answer(1))["result"]["tools"]] == ["consult"]
    channel.push({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "ask", "arguments": {"message": "x"}}})
    assert (await channel.answer(2))["error"]["code"] == -32602
    channel.push({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "consult", "arguments": {"message": "x"}}})
    assert (await channel.answer(3))["result"]["content"][0]["text"].startswith("You said: x")
    channel.push(None)
    await asyncio.wait_for(task, 15)
