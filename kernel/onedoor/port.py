"""The agent port: what a backend implements and what the kernel hands it.

A backend's agent has one method::

    def run(self, message, *, history=None, context=None) -> Iterator[Event]
    async def run(self, message, *, history=None, context=None) -> AsyncIterator[Event]

``context`` is optional: an agent whose ``run`` does not accept it (and has no
``**kwargs``) is called without it. An agent may also offer ``cancel()`` or
``interrupt()``; the kernel calls it (from the event-loop thread) when a run is cancelled.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, AsyncIterator, Iterable, Iterator, Literal, Protocol, Sequence, runtime_checkable

from .events import Event, RunFailed, RunFinished, TextDelta

Role = Literal["system", "user", "assistant", "tool"]
ROLES = ("system", "user", "assistant", "tool")


@dataclass(frozen=True)
class ToolCall:
    """A tool call the assistant made in an earlier turn."""

    id: str
    name: str
    arguments: Any = None

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "arguments": self.arguments}


@dataclass(frozen=True)
class Message:
    """One message of the history a caller passes in.

    ``tool_calls`` belong to assistant messages; ``tool_call_id`` ties a ``tool``
    message (a tool's result) to its call.
    """

    role: Role
    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            out["tool_calls"] = [c.to_dict() for c in self.tool_calls]
        if self.tool_call_id is not None:
            out["tool_call_id"] = self.tool_call_id
        return out

    @classmethod
    def from_dict(cls, data: Any) -> "Message":
        if isinstance(data, Message):
            return data
        if not isinstance(data, dict):
            raise ValueError("a history message must be an object with role and content")
        role = data.get("role")
        if role not in ROLES:
            raise ValueError(f"unknown message role {role!r}; expected one of {', '.join(ROLES)}")
        content = data.get("content", "")
        if content is None:
            content = ""
        if not isinstance(content, str):
            raise ValueError("message content must be a string")
        calls = []
        for raw in data.get("tool_calls") or ():
            if not isinstance(raw, dict) or not isinstance(raw.get("id"), str) or not isinstance(raw.get("name"), str):
                raise ValueError("a tool call needs a string id and name")
            calls.append(ToolCall(raw["id"], raw["name"], raw.get("arguments")))
        call_id = data.get("tool_call_id")
        if call_id is not None and not isinstance(call_id, str):
            raise ValueError("tool_call_id must be a string")
        return cls(role, content, tuple(calls), call_id)


def normalize_history(history: Iterable[Any] | None) -> list[Message]:
    """Accept Message objects or plain dicts; raise ValueError on anything else."""
    if history is None:
        return []
    return [Message.from_dict(m) for m in history]


@dataclass(frozen=True)
class ToolSpec:
    """A tool a door offers to the backend for one run.

    ``client`` tools run on the door's side (AG-UI frontend tools): when a backend calls
    one, it ends the run with stop_reason ``pending_tools`` and leaves the call open;
    the client sends the result in the next run's history. Server tools carry a
    ``handler`` (``async (arguments) -> result``) that the backend may await.
    """

    name: str
    description: str = ""
    parameters: dict[str, Any] = field(default_factory=lambda: {"type": "object"})
    client: bool = True
    handler: Any = None


class CancelToken:
    """Set once when the run is cancelled; safe to read from any thread."""

    __slots__ = ("_event",)

    def __init__(self) -> None:
        self._event = threading.Event()

    def cancel(self) -> None:
        self._event.set()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until cancelled (True) or the timeout passes (False)."""
        return self._event.wait(timeout)


@dataclass(slots=True)
class RunContext:
    """Per-run context the kernel hands to backends that accept ``context``.

    Approvals: a backend that wants a human's consent before a tool runs calls
    ``await context.request_approval(call_id, name, arguments)`` (async backends) or
    ``context.request_approval_sync(...)`` (sync backends, from their worker thread)
    before it runs the tool; it may already have announced the call with ToolStarted
    (most libraries do), and doors show the call either way. The door asks its user
    (ACP: session/request_permission). The answer is False when the door cannot ask, the user
    rejects, or the run is cancelled meanwhile. While the question is open the idle
    timeout is paused, and every event sent before the question reaches the door first.
    """

    run_id: str
    cancel: CancelToken
    tools: tuple[ToolSpec, ...] = ()
    door: str = ""
    extras: dict[str, Any] = field(default_factory=dict)
    approve: Any = None  # set by the kernel: async (call_id, name, arguments) -> bool
    loop: Any = None  # the event loop the run's door lives on

    @property
    def cancelled(self) -> bool:
        return self.cancel.cancelled

    async def request_approval(self, call_id: str, name: str, arguments: Any = None) -> bool:
        if self.approve is None or self.cancel.cancelled:
            return False
        return bool(await self.approve(call_id, name, arguments))

    def request_approval_sync(self, call_id: str, name: str, arguments: Any = None) -> bool:
        """From a sync backend's worker thread; blocks until answered or cancelled."""
        import asyncio
        import concurrent.futures

        if self.approve is None or self.loop is None or self.cancel.cancelled:
            return False
        future = asyncio.run_coroutine_threadsafe(self.request_approval(call_id, name, arguments), self.loop)
        while True:
            try:
                return bool(future.result(timeout=0.25))
            except concurrent.futures.TimeoutError:
                if self.cancel.cancelled or self.loop.is_closed():
                    future.cancel()
                    return False
            except Exception:  # noqa: BLE001 - the door failed to ask: the answer is no
                return False

    def client_tool(self, name: str) -> ToolSpec | None:
        for tool in self.tools:
            if tool.name == name and tool.client:
                return tool
        return None


@runtime_checkable
class SyncAgent(Protocol):
    def run(self, message: str, *, history: Sequence[Message] | None = None) -> Iterator[Event]: ...


@runtime_checkable
class AsyncAgent(Protocol):
    def run(self, message: str, *, history: Sequence[Message] | None = None) -> AsyncIterator[Event]: ...


Agent = SyncAgent | AsyncAgent


async def collect_text(events: AsyncIterator[Event] | Iterable[Event]) -> str:
    """Drain a run and return its final text; raise RuntimeError if the run failed.

    A cancelled run returns the partial text it produced.
    """
    final: RunFinished | None = None
    parts: list[str] = []
    if hasattr(events, "__aiter__"):
        async for event in events:  # type: ignore[union-attr]
            final = _collect_one(event, parts) or final
    else:
        for event in events:  # type: ignore[union-attr]
            final = _collect_one(event, parts) or final
    if final is None:
        return "".join(parts)
    return final.text


def _collect_one(event: Event, parts: list[str]) -> RunFinished | None:
    if type(event) is TextDelta:
        parts.append(event.text)
    elif isinstance(event, RunFailed):
        raise RuntimeError(event.error)
    elif isinstance(event, RunFinished):
        return event
    return None
