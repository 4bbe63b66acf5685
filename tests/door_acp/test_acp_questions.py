"""Questions a run asks through the ACP door (issue 15): approvals over
``session/request_permission``, free-form questions over ``elicitation/create`` or by the
door's ``ask_fallback``; cancel, disconnect and hostile answers while a question is open.

The ``acp`` library's own client drives the door in process (acp_harness.DoorHarness);
hostile answers come from a raw JSON-RPC client over the same in-memory channel.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from acp import RequestError
from acp_harness import DoorHarness, load_approval_module, onedoor_command  # type: ignore[import-not-found]
from onedoor.composition import ServeContext
from onedoor.kernel import Backend, Kernel
from onedoor.testing import channel_pair, scripted_kernel
from onedoor_test_support import await_for

pytestmark = pytest.mark.timeout(60)

ASK_RM = '/ask rm {"path": "x"}'


def _statuses(door: DoorHarness) -> list[str]:
    return [u.get("status") for _, u in door.recorder.updates if u["sessionUpdate"].startswith("tool_call")]


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize(
    "choice, reply, last_status",
    [
        ("allow_once", "Approved (allow_once): ran rm", "completed"),
        ("allow_always", "Approved (allow_always): ran rm", "completed"),
        ("reject_once", "Not approved (reject_once): did not run rm", "failed"),
        ("reject_always", "Not approved (reject_always): did not run rm", "failed"),
    ],
)
async def test_each_permission_option_maps_to_the_kernel_outcome(
    data_dir: Path, mode: str, choice: str, reply: str, last_status: str
) -> None:
    kernel = scripted_kernel(mode=mode)
    async with DoorHarness(kernel, data_dir) as door:
        sid = await door.new_session()
        door.recorder.answers = [choice]
        response = await door.prompt(sid, ASK_RM)
        assert response.stop_reason == "end_turn"
        assert door.recorder.text() == reply
        (request,) = door.recorder.permission_requests
        assert request["options"] == ["allow_once", "allow_always", "reject_once", "reject_always"]
        assert request["toolCall"]["rawInput"] == {"path": "x"} and request["toolCall"]["status"] == "pending"
        statuses = _statuses(door)
        assert statuses[0] == "pending" and statuses[-1] == last_status
        assert statuses.count(last_status) == 1  # the call is closed once, by the door or the backend
    assert kernel.active_runs == 0


async def test_rejected_call_is_one_call_in_the_saved_history(data_dir: Path) -> None:
    async with DoorHarness(scripted_kernel(), data_dir) as door:
        sid = await door.new_session()
        door.recorder.answers = ["reject_once"]
        await door.prompt(sid, ASK_RM)
    async with DoorHarness(scripted_kernel(), data_dir) as door:
        await door.conn.load_session(cwd="/tmp", session_id=sid, mcp_servers=[])
        ends = [u for _, u in door.recorder.updates if u["sessionUpdate"] == "tool_call_update"]
        starts = [u for _, u in door.recorder.updates if u["sessionUpdate"] == "tool_call"]
        assert len(starts) == 1 and len(ends) == 1 and ends[0]["status"] == "failed"
        assert "rejected" in ends[0]["rawOutput"]


async def test_allow_always_holds_for_the_rest_of_the_turn_and_the_session(data_dir: Path) -> None:
    module = load_approval_module()
    async with DoorHarness(Kernel(Backend("approver", module.TwiceApprovalAgent)), data_dir) as door:
        sid = await door.new_session()
        door.recorder.answers = ["allow_always"]
        await door.prompt(sid, "one")
        assert door.recorder.text() == "Done. Done."
        assert len(door.recorder.permission_requests) == 1  # the second call of the turn is not asked
        door.recorder.updates.clear()
        await door.prompt(sid, "two")
        assert door.recorder.text() == "Done. Done."
        assert len(door.recorder.permission_requests) == 1  # nor any call of a later turn


async def test_reject_always_holds_for_the_rest_of_the_turn(data_dir: Path) -> None:
    module = load_approval_module()
    async with DoorHarness(Kernel(Backend("approver", module.TwiceApprovalAgent)), data_dir) as door:
        sid = await door.new_session()
        door.recorder.answers = ["reject_always"]
        await door.prompt(sid, "one")
        assert door.recorder.text() == "Not written. Not written."
        assert len(door.recorder.permission_requests) == 1


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize(
    "answer, reply",
    [
        ({"action": "accept", "content": {"answer": "main"}}, 'You answered {"answer": "main"}'),
        ({"action": "decline"}, "No answer (decline)"),
        ({"action": "cancel"}, "No answer (cancel)"),
    ],
)
async def test_a_free_form_question_is_an_elicitation(data_dir: Path, mode: str, answer: dict, reply: str) -> None:
    async with DoorHarness(scripted_kernel(mode=mode), data_dir, elicitation=True) as door:
        sid = await door.new_session()
        door.recorder.elicitation_answers = [answer]
        response = await door.prompt(sid, "/question Which branch?")
        assert response.stop_reason == "end_turn"
        assert door.recorder.text() == reply
        (asked,) = door.recorder.elicitations
        assert asked["message"] == "Which branch?"
        assert asked["mode"]["sessionId"] == sid
        assert asked["mode"]["requestedSchema"]["properties"] == {"answer": {"type": "string"}}


async def test_a_typed_form_reaches_the_client_and_its_answer_is_checked(data_dir: Path) -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer", "minimum": 1},
                                                "env": {"type": "string", "enum": ["dev", "prod"]},
                                                "ok": {"type": "boolean"}}, "required": ["n", "env"]}
    message = "/question " + json.dumps({"prompt": "Deploy?", "schema": schema})
    async with DoorHarness(scripted_kernel(), data_dir, elicitation=True) as door:
        sid = await door.new_session()
        door.recorder.elicitation_answers = [
            {"action": "accept", "content": {"n": 2, "env": "prod", "ok": True}},
            {"action": "accept", "content": {"n": "two", "env": "staging"}},  # does not fit: declined
        ]
        await door.prompt(sid, message)
        assert door.recorder.text() == 'You answered {"env": "prod", "n": 2, "ok": true}'
        assert door.recorder.elicitations[0]["mode"]["requestedSchema"]["required"] == ["n", "env"]
        door.recorder.updates.clear()
        await door.prompt(sid, message)
        assert door.recorder.text() == "No answer (decline)"


@pytest.mark.parametrize("fallback", ["deny", "allow"])
async def test_without_elicitation_the_fallback_declines(data_dir: Path, fallback: str) -> None:
    async with DoorHarness(scripted_kernel(), data_dir, ask_fallback=fallback) as door:
        sid = await door.new_session()
        response = await door.prompt(sid, "/question Which branch?")
        assert response.stop_reason == "end_turn"
        assert door.recorder.text() == "No answer (decline)"
        assert door.recorder.elicitations == []


async def test_without_elicitation_fallback_fail_ends_the_prompt_with_an_error(data_dir: Path) -> None:
    kernel = scripted_kernel()
    async with DoorHarness(kernel, data_dir, ask_fallback="fail") as door:
        sid = await door.new_session()
        with pytest.raises(RequestError) as caught:
            await door.prompt(sid, "/question Which branch?")
        assert "Which branch?" in str(caught.value) and "ask_fallback" in str(caught.value)
        response = await door.prompt(sid, "hello")  # the session goes on
        assert response.stop_reason == "end_turn"
    assert kernel.active_runs == 0


def test_ask_fallback_is_listed_in_plugins_options(agent_env: dict[str, str]) -> None:
    result = subprocess.run(onedoor_command() + ["plugins", "--options"], capture_output=True, text=True,
                            env=agent_env, timeout=120)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("  acp "))
    block = []
    for line in lines[start + 1:]:
        if not line.startswith("      "):
            break
        block.append(line.strip())
    assert any(line.startswith("-o ask_fallback='deny'") and "fail" in line for line in block), block


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_cancel_while_an_elicitation_is_open(data_dir: Path, mode: str) -> None:
    kernel = scripted_kernel(mode=mode)
    async with DoorHarness(kernel, data_dir, elicitation=True) as door:
        sid = await door.new_session()
        door.recorder.hold_elicitation = asyncio.Event()
        prompt = asyncio.create_task(door.prompt(sid, "/question Which branch?"))
        await asyncio.wait_for(door.recorder.elicitation_asked.wait(), 15)
        await door.conn.cancel(session_id=sid)
        response = await asyncio.wait_for(prompt, 15)
        assert response.stop_reason == "cancelled"
        door.recorder.hold_elicitation.set()
        await await_for(lambda: kernel.active_runs == 0, "the cancelled run to give its slot back")


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("kind", ["permission", "elicitation"])
async def test_client_disconnect_while_asked_ends_the_run(data_dir: Path, mode: str, kind: str) -> None:
    kernel = scripted_kernel(mode=mode)
    async with DoorHarness(kernel, data_dir, elicitation=True) as door:
        sid = await door.new_session()
        door.recorder.hold_permission = asyncio.Event()  # the client never answers
        door.recorder.hold_elicitation = asyncio.Event()
        text = ASK_RM if kind == "permission" else "/question Which branch?"
        prompt = asyncio.create_task(door.prompt(sid, text))
        asked = door.recorder.permission_asked if kind == "permission" else door.recorder.elicitation_asked
        await asyncio.wait_for(asked.wait(), 15)
        assert kernel.active_runs == 1
        await door.disconnect()
        await await_for(lambda: kernel.active_runs == 0, "the run to end after the client went away")
        prompt.cancel()
        await asyncio.gather(prompt, return_exceptions=True)


# -- hostile answers, from a raw JSON-RPC client --------------------------------------------


class RawClient:
    """The door over an in-memory pair, driven with raw JSON-RPC: answers the door's
    requests with whatever the test gives."""

    def __init__(self, kernel: Kernel, data_dir: Path, capabilities: dict[str, Any]) -> None:
        from onedoor_door_acp.door import AcpOptions

        self.kernel = kernel
        self.door_end, self.client = channel_pair(line_framed=True)
        self.options = AcpOptions(data_dir=str(data_dir))
        self.capabilities = capabilities
        self.task: asyncio.Task | None = None
        self.next_id = 0

    async def __aenter__(self) -> "RawClient":
        from onedoor_door_acp.server import serve_acp

        ctx = ServeContext(kernel=self.kernel, options={"acp": self.options})
        self.task = asyncio.create_task(serve_acp(self.door_end, ctx, self.options))
        await self.call("initialize", {"protocolVersion": 1, "clientCapabilities": self.capabilities})
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.client.close()
        assert self.task is not None
        await asyncio.wait_for(self.task, 15)

    async def call(self, method: str, params: Any) -> dict[str, Any]:
        self.next_id += 1
        await self.client.send_json({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        return await self.client.reply_to(self.next_id, 15)

    async def prompt_answering(self, sid: str, text: str, answer: Any) -> tuple[dict[str, Any], str, list[str]]:
        """Prompt; answer every request of the door with ``answer`` (a result, or
        ``("error", {...})``). The prompt's response, the reply text, the requests' methods."""
        self.next_id += 1
        prompt_id = self.next_id
        await self.client.send_json({"jsonrpc": "2.0", "id": prompt_id, "method": "session/prompt",
                                     "params": {"sessionId": sid, "prompt": [{"type": "text", "text": text}]}})
        text_parts: list[str] = []
        methods: list[str] = []
        while True:
            message = await self.client.recv_json(15)
            if message.get("id") == prompt_id and "method" not in message:
                return message, "".join(text_parts), methods
            method = message.get("method")
            if method == "session/update":
                update = message["params"]["update"]
                if update["sessionUpdate"] == "agent_message_chunk":
                    text_parts.append(update["content"]["text"])
            elif "id" in message:
                methods.append(method)
                if isinstance(answer, tuple):
                    reply = {"jsonrpc": "2.0", "id": message["id"], "error": answer[1]}
                else:
                    reply = {"jsonrpc": "2.0", "id": message["id"], "result": answer}
                await self.client.send_json(reply)


HOSTILE_PERMISSION_ANSWERS = [
    {"outcome": {"outcome": "selected", "optionId": "bogus"}},
    {"outcome": {"outcome": "selected", "optionId": "ALLOW_ONCE"}},
    {"outcome": {"outcome": "selected", "optionId": "allow_once "}},
    {"outcome": {"outcome": "selected", "optionId": 1}},
    {"outcome": {"outcome": "selected", "optionId": ["allow_once"]}},
    {"outcome": {"outcome": "selected", "optionId": {"allow_once": True}}},
    {"outcome": {"outcome": "selected"}},
    {"outcome": {"outcome": "allowed", "optionId": "allow_once"}},
    {"outcome": "allow_once"},
    {"outcome": None},
    {"optionId": "allow_once"},
    {},
    [],
    ["allow_once"],
    "allow_once",
    True,
    7,
    None,
    ("error", {"code": -32603, "message": "the editor broke"}),
    ("error", {"code": "x", "message": 5}),
    ("error", "not an error object"),
]


async def test_hostile_permission_answers_are_no_and_never_break_the_door(data_dir: Path) -> None:
    kernel = scripted_kernel(reasoning=False)
    async with RawClient(kernel, data_dir, {}) as client:
        sid = (await client.call("session/new", {"cwd": "/tmp", "mcpServers": []}))["result"]["sessionId"]
        for answer in HOSTILE_PERMISSION_ANSWERS:
            response, text, methods = await client.prompt_answering(sid, ASK_RM, answer)
            assert (response.get("result") or {}).get("stopReason") == "end_turn", (answer, response)
            assert text == "Not approved (reject_once): did not run rm", (answer, text)
            assert methods == ["session/request_permission"]
        response, text, _ = await client.prompt_answering(
            sid, ASK_RM, {"outcome": {"outcome": "selected", "optionId": "allow_once"}})
        assert text == "Approved (allow_once): ran rm"  # and a good answer still works
    assert kernel.active_runs == 0


HOSTILE_ELICITATION_ANSWERS = [
    {"action": "accept", "content": {"answer": 5}},
    {"action": "accept", "content": {"answer": "x", "extra": 1}},
    {"action": "accept", "content": "main"},
    {"action": "accept", "content": ["main"]},
    {"action": "accept"},
    {"action": "ACCEPT", "content": {"answer": "main"}},
    {"action": ["accept"]},
    {"action": None},
    {"content": {"answer": "main"}},
    [],
    "accept",
    None,
    ("error", {"code": -32601, "message": "Method not found"}),
]


async def test_hostile_elicitation_answers_are_declined_and_never_break_the_door(data_dir: Path) -> None:
    kernel = scripted_kernel(reasoning=False)
    async with RawClient(kernel, data_dir, {"elicitation": {"form": {}}}) as client:
        sid = (await client.call("session/new", {"cwd": "/tmp", "mcpServers": []}))["result"]["sessionId"]
        for answer in HOSTILE_ELICITATION_ANSWERS:
            response, text, methods = await client.prompt_answering(sid, "/question Which branch?", answer)
            assert (response.get("result") or {}).get("stopReason") == "end_turn", (answer, response)
            assert text == "No answer (decline)", (answer, text)
            assert methods == ["elicitation/create"]
        _, text, _ = await client.prompt_answering(
            sid, "/question Which branch?", {"action": "accept", "content": {"answer": "main"}})
        assert text == 'You answered {"answer": "main"}'
    assert kernel.active_runs == 0


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_server_cancelling_every_run_while_asked_closes_the_call(data_dir: Path, mode: str) -> None:
    module = load_approval_module()  # asks before it announces the call: only the door can close it
    factory = module.SyncApprovalAgent if mode == "sync" else module.AsyncApprovalAgent
    kernel = Kernel(Backend("approver", factory))
    async with DoorHarness(kernel, data_dir) as door:
        sid = await door.new_session()
        door.recorder.hold_permission = asyncio.Event()  # the editor does not answer
        prompt = asyncio.create_task(door.prompt(sid, "hello"))
        await asyncio.wait_for(door.recorder.permission_asked.wait(), 15)
        assert kernel.cancel_all() == 1
        response = await asyncio.wait_for(prompt, 15)
        assert response.stop_reason == "cancelled"
        assert _statuses(door) == ["pending", "failed"]
        door.recorder.hold_permission.set()
        await await_for(lambda: kernel.active_runs == 0, "the cancelled run to give its slot back")
