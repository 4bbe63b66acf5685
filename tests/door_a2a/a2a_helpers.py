"""Helpers for the A2A door tests: the Python client (a2a-sdk) calls, and a real
`onedoor serve --door a2a` process with its run outcomes.

(A uniquely named module: conftest puts this folder on sys.path for it; the helpers every
folder shares are in tests/onedoor_test_support.py.)"""

from __future__ import annotations

import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import uuid
from pathlib import Path
from typing import Any

import httpx
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.helpers import new_text_message
from a2a.types import Message, Role, SendMessageRequest
from onedoor_test_support import wait_for

HERE = Path(__file__).parent
LAUNCHER = HERE / "a2a_test_launcher.py"
TOKEN = "a2a-door-test-token-0123456789"
_LISTENING = re.compile(r"listening on (http://\S+)")


# -- the Python client (a2a-sdk) ------------------------------------------------------------
def ask(text: str, *, task_id: str = "", context_id: str = "") -> SendMessageRequest:
    message = new_text_message(text, role=Role.ROLE_USER, task_id=task_id or None, context_id=context_id or None)
    return SendMessageRequest(message=message)


def ask_parts(*parts: Any, task_id: str = "", context_id: str = "", **configuration: Any) -> SendMessageRequest:
    """A message of these A2A parts (``configuration``: SendMessageConfiguration fields)."""
    message = Message(message_id=uuid.uuid4().hex, role=Role.ROLE_USER, parts=list(parts), task_id=task_id,
                      context_id=context_id)
    return SendMessageRequest(message=message, configuration=configuration or None)


def reply_of(task: Any) -> str:
    return "".join(p.text for a in task.artifacts for p in a.parts)


def parts_of(task: Any) -> list[str]:
    return [p.text for a in task.artifacts for p in a.parts]


async def clients(http: httpx.AsyncClient, base: str, binding: str = "JSONRPC") -> tuple[Any, Any, Any]:
    """(card, a client that sends, a client that streams)."""
    card = await A2ACardResolver(http, base).get_agent_card()
    plain = ClientFactory(ClientConfig(httpx_client=http, streaming=False, supported_protocol_bindings=[binding]))
    streaming = ClientFactory(ClientConfig(httpx_client=http, streaming=True, supported_protocol_bindings=[binding]))
    return card, plain.create(card), streaming.create(card)


def authorized() -> httpx.AsyncClient:
    return httpx.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30)


async def send(client: Any, request: SendMessageRequest) -> Any:
    events = [event async for event in client.send_message(request)]
    assert len(events) == 1 and events[0].HasField("task"), events
    return events[0].task


class A2aServer:
    """``onedoor serve --door a2a ARGS --port 0`` through the test launcher (observer hook on)."""

    def __init__(self, args: list[str], tmp: Path) -> None:
        self.outcomes_path = tmp / "outcomes.jsonl"
        self.requests_path = tmp / "requests.jsonl"
        self.stderr_path = tmp / "stderr.txt"
        env = {**os.environ, "PYTHONUNBUFFERED": "1", "ONEDOOR_TEST_OUTCOMES": str(self.outcomes_path),
               "ONEDOOR_TEST_REQUESTS": str(self.requests_path)}
        cmd = [sys.executable, str(LAUNCHER), "serve", "--door", "a2a", "--port", "0", *args]
        self._stderr = open(self.stderr_path, "w", encoding="utf-8")
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=self._stderr, text=True, env=env)
        self.lines: list[str] = []
        found: "queue.Queue[str | None]" = queue.Queue()

        def pump() -> None:
            assert self.proc.stdout is not None
            for line in self.proc.stdout:
                self.lines.append(line.rstrip("\n"))
                match = _LISTENING.search(line)
                if match:
                    found.put(match.group(1))
            found.put(None)

        threading.Thread(target=pump, daemon=True).start()
        try:
            base = found.get(timeout=60)
        except queue.Empty:
            base = None
        if base is None:
            self.stop()
            raise RuntimeError(f"the A2A server did not start: {self.lines} {self.stderr()[-2000:]}")
        self.base_url = base
        self.a2a_url = base + "/a2a"
        wait_for(lambda: any("agent card" in line for line in self.lines), "the server's door lines", 10)

    def outcomes(self) -> list[dict[str, Any]]:
        if not self.outcomes_path.exists():
            return []
        return [json.loads(line) for line in self.outcomes_path.read_text("utf-8").splitlines() if line]

    def requests(self) -> list[dict[str, Any]]:
        """The requests the door served, as its observers saw them (the launcher's request hooks)."""
        if not self.requests_path.exists():
            return []
        return [json.loads(line) for line in self.requests_path.read_text("utf-8").splitlines() if line]

    def outcome_of(self, message_part: str, timeout: float = 30.0) -> dict[str, Any]:
        """The finished run whose message contains ``message_part`` (waits for it)."""
        return wait_for(lambda: next((o for o in self.outcomes() if message_part in o["message"]), None),
                        f"the run of {message_part!r} to finish (observer hook)", timeout)

    def stderr(self) -> str:
        self._stderr.flush()
        return self.stderr_path.read_text("utf-8", errors="replace")

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self._stderr.close()
        return self.proc.returncode
