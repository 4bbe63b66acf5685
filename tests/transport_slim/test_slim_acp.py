"""ACP over SLIM: the ACP door's prompt / stream / cancel flow through a SLIM session,
driven by a plain JSON-RPC client (one message per SLIM publish)."""

from __future__ import annotations

import asyncio
import itertools
import json
import time

import pytest

pytest.importorskip("slim_bindings")

from onedoor import plugins

if "acp" not in plugins.names("door"):
    pytest.skip("the ACP door (onedoor-door-acp) is not installed", allow_module_level=True)

from onedoor_transport_slim.client import open_channel


class AcpPeer:
    """Just enough of an ACP client: requests, notifications and session updates."""

    def __init__(self, channel) -> None:
        self.channel = channel
        self.ids = itertools.count(1)
        self.updates: list[dict] = []
        self.chunk = asyncio.Event()
        self.answers: dict[str, object] = {}  # method -> the result to answer the agent's request with
        self.asked: list[dict] = []  # the agent's requests, as received

    async def notify(self, method: str, params: dict) -> None:
        await self.channel.send(json.dumps({"jsonrpc": "2.0", "method": method, "params": params}))

    async def call(self, method: str, params: dict, timeout: float = 30.0) -> dict:
        request_id = next(self.ids)
        await self.channel.send(json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}))
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            assert remaining > 0, f"no reply to {method} within {timeout} s"
            text = await asyncio.wait_for(self.channel.recv(), remaining)
            assert text is not None, f"session ended while waiting for {method}: {self.channel.error}"
            message = json.loads(text)
            if message.get("id") == request_id and "method" not in message:
                return message
            if message.get("method") == "session/update":
                self.updates.append(message["params"]["update"])
                if message["params"]["update"].get("sessionUpdate") == "agent_message_chunk":
                    self.chunk.set()
            elif "id" in message and "method" in message:  # a request from the agent
                self.asked.append(message)
                if message["method"] in self.answers:
                    reply = {"jsonrpc": "2.0", "id": message["id"], "result": self.answers[message["method"]]}
                else:  # refuse politely
                    reply = {"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32601, "message": "not supported"}}
                await self.channel.send(json.dumps(reply))

    def text(self) -> str:
        return "".join(
            u.get("content", {}).get("text", "") for u in self.updates if u.get("sessionUpdate") == "agent_message_chunk"
        )


async def test_acp_prompt_stream_and_cancel(node_cluster, tmp_path):
    node_cluster.worker("acp", env={"HOME": str(tmp_path), "XDG_DATA_HOME": str(tmp_path / "data")})
    async with open_channel(options=node_cluster.options()) as channel:
        peer = AcpPeer(channel)
        init = await peer.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        assert init["result"]["protocolVersion"] == 1
        new = await peer.call("session/new", {"cwd": str(tmp_path), "mcpServers": []})
        session_id = new["result"]["sessionId"]
        reply = await peer.call("session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": "hello acp"}]})
        assert reply["result"]["stopReason"] == "end_turn"
        assert "hello acp" in peer.text()

        peer.updates.clear()
        peer.chunk.clear()
        prompt = asyncio.ensure_future(
            peer.call("session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": "/slow /long 400"}]})
        )
        # The reader runs inside `call`: wait for the first streamed chunk, then cancel.
        await asyncio.wait_for(peer.chunk.wait(), 20)
        await peer.notify("session/cancel", {"sessionId": session_id})
        reply = await asyncio.wait_for(prompt, 30)
        assert reply["result"]["stopReason"] == "cancelled"
        streamed = peer.text()
        assert 0 < len(streamed.split()) < 400  # stopped part way


async def test_acp_questions_over_slim(node_cluster, tmp_path):
    """An approval through session/request_permission and a question through
    elicitation/create, as over stdio, answered by a peer across the SLIM node."""
    node_cluster.worker("acp", env={"HOME": str(tmp_path), "XDG_DATA_HOME": str(tmp_path / "data")})
    async with open_channel(options=node_cluster.options()) as channel:
        peer = AcpPeer(channel)
        capabilities = {"elicitation": {"form": {}}}
        await peer.call("initialize", {"protocolVersion": 1, "clientCapabilities": capabilities})
        session_id = (await peer.call("session/new", {"cwd": str(tmp_path), "mcpServers": []}))["result"]["sessionId"]

        async def prompt(text: str) -> str:
            peer.updates.clear()
            reply = await peer.call("session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]})
            assert reply["result"]["stopReason"] == "end_turn", reply
            return peer.text()

        peer.answers["session/request_permission"] = {"outcome": {"outcome": "selected", "optionId": "reject_once"}}
        assert "Not approved (reject_once)" in await prompt('/ask rm {"path": "x"}')
        permission = peer.asked[-1]
        assert permission["method"] == "session/request_permission"
        assert {o["optionId"] for o in permission["params"]["options"]} >= {"allow_once", "reject_once"}
        peer.answers["session/request_permission"] = {"outcome": {"outcome": "selected", "optionId": "allow_once"}}
        assert "Approved (allow_once)" in await prompt('/ask rm {"path": "y"}')

        peer.answers["elicitation/create"] = {"action": "accept", "content": {"answer": "main"}}
        assert 'You answered {"answer": "main"}' in await prompt("/question Which branch?")
        assert peer.asked[-1]["method"] == "elicitation/create"
