"""Helpers for the ACP door tests: an in-process door over an in-memory channel pair
(onedoor.testing) driven by the ``acp`` library's own client, and what the subprocess
tests need."""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import json
import shutil
import sys
from pathlib import Path
from typing import Any

from onedoor.composition import ServeContext
from onedoor.testing import MemoryChannel, channel_pair

HERE = Path(__file__).parent
JS_DIR = HERE / "js"
THREAD_STORE: Any = None  # when set, DoorHarness gives it to a kernel without a store (see test_acp_door.py)


def load_approval_module() -> Any:
    spec = importlib.util.spec_from_file_location("door_acp_approval_agent", HERE / "approval_agent.py")
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(module)
    return module


def onedoor_command() -> list[str]:
    """`onedoor` as installed next to this interpreter (falls back to python -m onedoor)."""
    script = Path(sys.executable).with_name("onedoor")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-m", "onedoor"]


class ClientSide:
    """``acp`` message transport for the client, over the client end of an in-memory pair."""

    def __init__(self, channel: MemoryChannel) -> None:
        self.channel = channel

    async def send(self, message: dict[str, Any]) -> None:
        await self.channel.send(json.dumps(message))

    async def receive(self) -> dict[str, Any] | None:
        text = await self.channel.recv()
        return None if text is None else json.loads(text)

    async def close(self) -> None:
        await self.channel.close()


class Recorder:
    """An ACP client that records updates in arrival order and answers permissions."""

    def __init__(self) -> None:
        self.updates: list[tuple[str, dict[str, Any]]] = []
        self.permission_requests: list[dict[str, Any]] = []
        self.answers: list[str] = []  # optionIds to answer with, in order; "cancelled" for cancelled
        self.permission_asked = asyncio.Event()
        self.hold_permission: asyncio.Event | None = None
        self.got_update = asyncio.Event()
        self.elicitations: list[dict[str, Any]] = []
        self.elicitation_answers: list[dict[str, Any]] = []  # replies to elicitation/create, in order
        self.elicitation_asked = asyncio.Event()
        self.hold_elicitation: asyncio.Event | None = None
        self.files: dict[str, str] = {}  # what the editor holds (fs/read_text_file), path -> text
        self.reads: list[dict[str, Any]] = []
        self.hold_read: asyncio.Event | None = None
        self.read_asked = asyncio.Event()

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append((session_id, update.model_dump(mode="json", by_alias=True, exclude_none=True)))
        self.got_update.set()

    async def request_permission(self, session_id: str, tool_call: Any, options: Any, **kwargs: Any) -> Any:
        self.permission_requests.append({
            "sessionId": session_id,
            "toolCall": tool_call.model_dump(mode="json", by_alias=True, exclude_none=True),
            "options": [o.option_id for o in options],
        })
        self.permission_asked.set()
        if self.hold_permission is not None:
            await self.hold_permission.wait()
        answer = self.answers.pop(0) if self.answers else "allow_once"
        if answer == "cancelled":
            return {"outcome": {"outcome": "cancelled"}}
        return {"outcome": {"outcome": "selected", "optionId": answer}}

    async def create_elicitation(self, message: str, mode: Any, **kwargs: Any) -> Any:
        self.elicitations.append({"message": message, "mode": mode.model_dump(mode="json", by_alias=True, exclude_none=True)})
        self.elicitation_asked.set()
        if self.hold_elicitation is not None:
            await self.hold_elicitation.wait()
        return self.elicitation_answers.pop(0) if self.elicitation_answers else {"action": "decline"}

    async def read_text_file(self, session_id: str, path: str, line: int | None = None, limit: int | None = None,
                             **kwargs: Any) -> Any:
        from acp import RequestError

        self.reads.append({"sessionId": session_id, "path": path, "line": line, "limit": limit})
        self.read_asked.set()
        if self.hold_read is not None:
            await self.hold_read.wait()
        if path not in self.files:
            raise RequestError(-32002, f"no such file: {path}")
        lines = self.files[path].split("\n")
        first = (line or 1) - 1
        return {"content": "\n".join(lines[first: None if limit is None else first + limit])}

    def kinds(self, session_id: str | None = None) -> list[str]:
        return [u["sessionUpdate"] for s, u in self.updates if session_id is None or s == session_id]

    def text(self, kind: str = "agent_message_chunk", session_id: str | None = None) -> str:
        return "".join(
            u["content"].get("text", "") for s, u in self.updates
            if u["sessionUpdate"] == kind and (session_id is None or s == session_id)
        )

    async def wait_for(self, predicate: Any, limit: float = 20.0) -> None:
        deadline = asyncio.get_running_loop().time() + limit
        while not predicate():
            left = deadline - asyncio.get_running_loop().time()
            assert left > 0, f"condition not met; updates: {self.kinds()}"
            self.got_update.clear()
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self.got_update.wait(), min(left, 0.5))


class DoorHarness:
    """The door over an in-memory channel pair (onedoor.testing), driven by ``acp``'s own client."""

    def __init__(self, kernel: Any, data_dir: Path, *, elicitation: bool = False, fs: bool = False,
                 plugin_options: dict[str, Any] | None = None, **options: Any) -> None:
        from onedoor_door_acp.door import AcpOptions

        self.kernel = kernel
        self.plugin_options = plugin_options or {}  # other plugins' parsed options (ServeContext.options), e.g. the backend's
        self.elicitation = elicitation  # the client declares form elicitation
        self.fs = fs  # the client declares fs.readTextFile
        self.door_end, self.channel = channel_pair(line_framed=True)
        self.options = AcpOptions(data_dir=str(data_dir), **options)
        self.recorder = Recorder()
        self.task: asyncio.Task | None = None
        self.conn: Any = None

    async def __aenter__(self) -> "DoorHarness":
        from acp import connect_to_agent
        from onedoor_door_acp.server import serve_acp

        if THREAD_STORE is not None and self.kernel.store is None:
            self.kernel.store = THREAD_STORE
        ctx = ServeContext(kernel=self.kernel, options={**self.plugin_options, "acp": self.options}, door_names=["acp"], transport_name="memory")
        self.task = asyncio.create_task(serve_acp(self.door_end, ctx, self.options))
        self.conn = connect_to_agent(self.recorder, ClientSide(self.channel), use_unstable_protocol=True)
        if self.elicitation or self.fs:
            from acp.schema import (
                ClientCapabilities,
                ElicitationCapabilities,
                ElicitationFormCapabilities,
                FileSystemCapabilities,
            )

            capabilities = ClientCapabilities(
                elicitation=ElicitationCapabilities(form=ElicitationFormCapabilities()) if self.elicitation else None,
                fs=FileSystemCapabilities(read_text_file=True) if self.fs else FileSystemCapabilities(),
            )
            await self.conn.initialize(protocol_version=1, client_capabilities=capabilities)
        else:
            await self.conn.initialize(protocol_version=1)
        return self

    async def new_session(self, cwd: str = "/tmp", **kwargs: Any) -> str:
        response = await self.conn.new_session(cwd=cwd, mcp_servers=[], **kwargs)
        return response.session_id

    async def prompt(self, session_id: str, text: str) -> Any:
        from acp import text_block

        return await self.conn.prompt(session_id=session_id, prompt=[text_block(text)])

    async def disconnect(self) -> None:
        await self.channel.close()
        assert self.task is not None
        await asyncio.wait_for(self.task, 15)

    async def __aexit__(self, *exc: Any) -> None:
        await self.channel.close()
        if self.task is not None and not self.task.done():
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.task, 15)
        with contextlib.suppress(Exception):
            await self.conn.close()


def node_ready() -> str | None:
    """Why the JS clients cannot run here, or None."""
    if shutil.which("node") is None:
        return "node is not installed (the TS client and acpx tests need Node 20+)"
    if not (JS_DIR / "node_modules" / "@agentclientprotocol" / "sdk").is_dir():
        return "run `npm ci --prefix tests/door_acp/js` first (nox does it for this combo)"
    return None


class ToolUserAgent:
    """A test backend with the ``tools`` capability: calls each server tool it is offered
    (from the editor's MCP servers) once with {"text": message}."""

    async def run(self, message: str, *, history: Any = None, context: Any = None) -> Any:
        from onedoor.events import RunFinished, RunStarted, TextDelta, ToolFinished, ToolStarted

        yield RunStarted(context.run_id)
        names = []
        for index, tool in enumerate(t for t in context.tools if not t.client):
            call_id = f"call_{context.run_id[:8]}_{index}"
            args = {"text": message}
            yield ToolStarted(call_id, tool.name, args)
            try:
                result = await tool.handler(args)
                yield ToolFinished(call_id, tool.name, result)
            except Exception as exc:  # noqa: BLE001
                yield ToolFinished(call_id, tool.name, str(exc), True)
            names.append(tool.name)
        text = f"tools: {', '.join(names) or 'none'}"
        yield TextDelta(text)
        yield RunFinished(context.run_id, text)
