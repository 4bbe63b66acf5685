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
from typing import TYPE_CHECKING, Any, AsyncIterator, Iterable, Iterator, Protocol, Sequence, runtime_checkable

from . import events as _events
from .events import RunFailed, RunFinished, TextDelta
from .messages import ROLES, Message, Role, ToolCall, normalize_history  # noqa: F401 - re-exported
from .principals import LOCAL
from .questions import APPROVAL, Answer, Question, QuestionError, closing_answer  # noqa: F401 - re-exported
from .usage import ModelUsage

if TYPE_CHECKING:
    from .content import Part
    from .events import Event


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

    Questions: a backend that needs a person's answer asks, one call::

        answer = await context.ask(Question.approval(call_id, name, arguments))   # async backends
        answer = context.ask_sync(Question.input("Which branch?", schema))         # sync backends (worker thread)
        if answer.allowed: ...       # approvals: allow_once / allow_always
        if answer.accepted: answer.value   # input: the form's values, checked against the schema

    ``ask`` never raises: when nobody can answer (the door has no way to ask, the run is
    cancelled, the question expired) the answer is no (``reject_once``, or ``decline`` /
    ``cancel`` for input). Before a tool that needs consent, a backend may already have
    announced the call with ToolStarted (most libraries do); doors show the call either
    way. While a question is open the idle timeout is paused, and every event sent before
    it reaches the door first. How the door asks (within the run, or by ending its
    response and parking the run until a later request answers) is the door's choice:
    :mod:`onedoor.questions.askers`.

    ``request_approval(call_id, name, arguments) -> bool`` (and ``request_approval_sync``)
    is the same as asking an approval question and reading ``answer.allowed``.

    Content: ``content`` is the message's parts when it is more than text (images,
    files…: :mod:`onedoor.content`), empty for a plain message; the ``message`` argument of
    ``run`` is then their text, so a backend that reads only text keeps working. A backend
    gets only the kinds it declares it takes (``Backend.accepts``): the kernel refuses the
    others before the run starts.

    State: ``state`` is the run's shared state at its start (a JSON object, or None when the
    run has none): the thread's, or what the client sent. A backend changes it with one
    call, from a sync backend's worker thread or an async one's task alike::

        context.set_state({"todo": ["buy milk"]})                          # the whole document
        context.patch_state([{"op": "add", "path": "/todo/-", "value": "call mum"}])  # RFC 6902

    (or by yielding ``StateSnapshot`` / ``StateDelta`` events, which is what these do). The
    kernel applies each change before any door sees it; one that does not apply fails the
    run, leaving the state as it was. ``report_usage(ModelUsage(...))`` adds token usage to
    the run's (the kernel sums it per model onto the terminal event).
    """

    run_id: str
    cancel: CancelToken
    tools: tuple[ToolSpec, ...] = ()
    door: str = ""
    extras: dict[str, Any] = field(default_factory=dict)
    approve: Any = None  # the older approvals callback: async (call_id, name, arguments) -> bool; used when ``asker`` is None
    loop: Any = None  # the event loop the run's door lives on
    asker: Any = None  # set by the kernel: async (Question) -> Answer
    principal: str = LOCAL  # who started the run (see the HTTP transport's tokens)
    content: tuple[Part, ...] = ()  # the message's parts, when it is more than text
    state: dict[str, Any] | None = None  # the shared state at the run's start (a copy), or None
    emit: Any = None  # set by the kernel: puts an event in the run's stream as if the backend yielded it

    def set_state(self, state: dict[str, Any]) -> None:
        """Replace the run's shared state (a JSON object)."""
        self._send(_events.StateSnapshot(state))

    def patch_state(self, ops: Sequence[dict[str, Any]]) -> None:
        """Change the run's shared state by RFC 6902 JSON Patch operations."""
        self._send(_events.StateDelta(tuple(ops)))

    def report_usage(self, *usage: ModelUsage) -> None:
        """Add token usage (per model) to the run's."""
        self._send(_events.UsageReported(tuple(usage)))

    def _send(self, event: Any) -> None:
        if self.emit is None:
            raise RuntimeError("this run context sends no events (it is not a kernel run's)")
        self.emit(event)

    @property
    def cancelled(self) -> bool:
        return self.cancel.cancelled

    async def ask(self, question: Question) -> Answer:
        """The answer to ``question`` (see the class docstring); never raises."""
        if self.cancel.cancelled:
            return closing_answer(question, "cancelled")
        if self.asker is not None:
            answer: Answer = await self.asker(question)
            return answer
        if self.approve is not None and question.kind == APPROVAL and question.tool is not None:
            tool = question.tool
            allowed = bool(await self.approve(tool.id, tool.name, tool.arguments))
            return Answer(question.id, "allow_once" if allowed else "reject_once")
        return closing_answer(question, "policy")

    def ask_sync(self, question: Question) -> Answer:
        """From a sync backend's worker thread; blocks until answered (or the run ends)."""
        import asyncio
        import concurrent.futures

        if self.loop is None or self.cancel.cancelled:
            return closing_answer(question, "cancelled" if self.cancel.cancelled else "policy")
        future = asyncio.run_coroutine_threadsafe(self.ask(question), self.loop)
        while True:
            try:
                answer: Answer = future.result(timeout=1.0)
                return answer
            except concurrent.futures.TimeoutError:
                if self.loop.is_closed() or (self.cancel.cancelled and not future.done()):
                    future.cancel()
                    return closing_answer(question, "cancelled")
            except Exception:  # noqa: BLE001 - the loop went away while asking: the answer is no
                return closing_answer(question, "cancelled")

    async def request_approval(self, call_id: str, name: str, arguments: Any = None) -> bool:
        """True if the tool call may run (a person, or a policy, allowed it)."""
        return (await self.ask(Question.approval(call_id, name, arguments))).allowed

    def request_approval_sync(self, call_id: str, name: str, arguments: Any = None) -> bool:
        """From a sync backend's worker thread; blocks until answered or cancelled."""
        return self.ask_sync(Question.approval(call_id, name, arguments)).allowed

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
