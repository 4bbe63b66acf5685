"""Helpers for plugin authors: test a backend or a door in-process.

    from onedoor.testing import check_backend, scripted_kernel, collect

    def test_my_backend_keeps_the_contract():
        report = check_backend(my_factory, "hello")
        assert report.ok, report.problems

    async def test_my_door():
        kernel = scripted_kernel(delay=0.01)
        events = await collect(kernel, "hi")

    async def test_my_channel_door():                # no transport: an in-memory channel
        async with serve_in_memory(MyDoor(), ServeContext(kernel=scripted_kernel())) as client:
            await client.send_json({...}); reply = await client.recv_json()
"""

from __future__ import annotations

import asyncio
import inspect
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

from ..builtins.scripted import ScriptedOptions, scripted
from ..errors import ContractViolation
from ..events import Event, RunFailed, RunFinished
from ..kernel import Backend, Kernel, Limits
from ..port import CancelToken, RunContext, ToolSpec
from ..run.contract import Contract
from .channels import MemoryChannel, channel_pair, serve_in_memory


@dataclass
class ContractReport:
    """What :func:`check_backend` found: the raw events and any contract problems."""

    events: list[Event] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def outcome(self) -> Event | None:
        return self.events[-1] if self.events else None


def check_events(events: Sequence[Event], tools: Sequence[ToolSpec] = ()) -> list[str]:
    """Contract problems in a raw event sequence from a backend (empty if it is valid)."""
    client = {t.name for t in tools if t.client}
    contract = Contract(lambda name: name in client)
    problems: list[str] = []
    for event in events:
        try:
            contract.check(event)
        except ContractViolation as exc:
            problems.append(str(exc))
            break
    else:
        if not contract.ended:
            problems.append("the stream ended without RunFinished or RunFailed")
    return problems


async def _drain_raw(agent: Any, message: str, history: Any, context: RunContext, limit: int) -> list[Event]:
    kwargs: dict[str, Any] = {"history": history}
    params = inspect.signature(agent.run).parameters
    if "context" in params or any(p.kind is p.VAR_KEYWORD for p in params.values()):
        kwargs["context"] = context
    source = agent.run(message, **kwargs)
    if inspect.isawaitable(source):
        source = await source
    events: list[Event] = []
    if hasattr(source, "__aiter__"):
        async for event in source:
            events.append(event)
            if len(events) >= limit:
                break
    else:
        def pull() -> None:
            for event in source:
                events.append(event)
                if len(events) >= limit:
                    break

        await asyncio.to_thread(pull)
    return events


def check_backend(
    factory: Callable[[], Any],
    message: str = "hello",
    *,
    history: Sequence[Any] = (),
    tools: Sequence[ToolSpec] = (),
    limit: int = 100_000,
) -> ContractReport:
    """Run a backend's agent directly (no kernel) and check its raw stream."""
    context = RunContext(run_id="contract-check", cancel=CancelToken(), tools=tuple(tools))
    events = asyncio.run(_drain_raw(factory(), message, list(history), context, limit))
    return ContractReport(events, check_events(events, tools))


def scripted_kernel(limits: Limits | None = None, *, store: Any = None, hooks: Any = None, **options: Any) -> Kernel:
    """A kernel on the scripted backend, e.g. ``scripted_kernel(delay=0.01, mode="async")``
    (``store``: a thread store; ``hooks``: a pluggy hook relay of observers)."""
    from ..plugins.discovery import backend_accepts

    opts = ScriptedOptions(**options)
    backend = Backend("scripted", lambda: scripted(opts), accepts=backend_accepts(scripted, "scripted", opts))
    return Kernel(backend, limits=limits, store=store, hooks=hooks)


def kernel_for_agent(
    factory: Callable[[], Any], name: str = "test", limits: Limits | None = None, *, accepts: Iterable[str] = (),
    store: Any = None, hooks: Any = None,
) -> Kernel:
    """A kernel around any agent factory (a class or a function returning an agent);
    ``accepts``: the content kinds it takes besides text."""
    return Kernel(Backend(name, factory, accepts=frozenset(accepts)), limits=limits, store=store, hooks=hooks)


async def collect(kernel: Kernel, message: str, **kwargs: Any) -> list[Event]:
    """Every event of one run through the kernel."""
    async with kernel.run(message, **kwargs) as run:
        return [event async for event in run]


def final(events: Sequence[Event]) -> RunFinished | RunFailed:
    last = events[-1]
    assert isinstance(last, (RunFinished, RunFailed)), f"last event is {type(last).__name__}"
    return last


__all__ = [
    "ContractReport",
    "MemoryChannel",
    "check_backend",
    "check_events",
    "collect",
    "final",
    "kernel_for_agent",
    "scripted_kernel",
    "ScriptedOptions",
    "channel_pair",
    "serve_in_memory",
]
