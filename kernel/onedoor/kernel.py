"""The run lifecycle: ``Kernel.run`` is the only way a door starts a run.

Every run gets a fresh agent from the backend's factory. A sync agent runs on its own
worker thread, an async one in its own task; either way its events reach the door
through a bounded feed, in batches, as one async stream. The kernel enforces the
contract (see :mod:`onedoor.contract`), turns exceptions, broken streams and silence
past the idle timeout into a :class:`RunFailed`, and cancels for real: the backend is
told (cancel token, task cancellation, its ``cancel()``/``interrupt()``), its worker
ends, and the run closes with stop_reason ``cancelled``.

A door uses it like this::

    async with kernel.run(message, history=history, door="rest") as run:
        async for event in run:
            ...            # call run.cancel() at any time; leaving the block cancels too
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import os
import threading
import time
import weakref
from collections import deque
from dataclasses import dataclass, field
from typing import Any, AsyncGenerator, AsyncIterator, Callable, Iterable, Sequence

from .contract import Contract
from .errors import ContractViolation, RunRefused
from .events import (
    STOP_CANCELLED,
    Event,
    RunFailed,
    RunFinished,
    RunStarted,
    TextDelta,
    ToolFinished,
)
from .port import CancelToken, Message, RunContext, ToolSpec, normalize_history

log = logging.getLogger("onedoor.kernel")


@dataclass
class Limits:
    """Limits a kernel enforces; every door inherits them."""

    max_concurrent_runs: int = 64
    max_message_chars: int = 100_000
    max_input_chars: int = 1_000_000  # message plus history
    idle_timeout: float = 120.0  # seconds a backend may stay silent
    run_timeout: float | None = 3600.0
    cancel_grace: float = 5.0  # how long a cancelled backend gets to stop
    queue_size: int = 1024  # events buffered between backend and door (backpressure)
    retry_after: float = 1.0  # advice given with a "busy" refusal


@dataclass
class Backend:
    """A loaded backend: its name and a factory that builds a fresh agent per run."""

    name: str
    factory: Callable[[], Any]
    capabilities: frozenset[str] = field(default_factory=frozenset)


@dataclass(frozen=True)
class RunInfo:
    """What lifecycle hooks learn about a run."""

    run_id: str
    backend: str
    door: str
    message: str
    history_length: int
    started_at: float


class Kernel:
    def __init__(self, backend: Backend, *, limits: Limits | None = None, hooks: Any = None) -> None:
        self.backend = backend
        self.limits = limits or Limits()
        self.hooks = hooks  # a pluggy PluginManager's .hook relay, or None
        self._active = 0
        self._threads: set[threading.Thread] = set()
        self._runs: "weakref.WeakSet[RunStream]" = weakref.WeakSet()

    @property
    def active_runs(self) -> int:
        return self._active

    def cancel_all(self) -> int:
        """Cancel every run in flight (graceful shutdown); returns how many were told."""
        runs = [r for r in list(self._runs) if r.outcome is None]
        for run in runs:
            run.cancel()
        return len(runs)

    def worker_threads(self) -> list[threading.Thread]:
        """Worker threads of sync runs that are still alive (for tests and metrics)."""
        return [t for t in list(self._threads) if t.is_alive()]

    def run(
        self,
        message: str,
        *,
        history: Iterable[Any] | None = None,
        tools: Sequence[ToolSpec] = (),
        door: str = "",
        run_id: str | None = None,
        extras: dict[str, Any] | None = None,
        approver: Callable[[str, str, Any], Any] | None = None,
    ) -> "RunStream":
        """Start a run; raise :class:`RunRefused` (before any event) if it cannot start.

        ``message`` may be empty only when the history ends with tool results: the run
        then continues after the client answered frontend tools. ``approver`` is the
        door's ``async (call_id, name, arguments) -> bool`` for backends that ask before
        running a tool (see :class:`onedoor.port.RunContext`); without one, the answer
        to every such question is no.
        """
        lim = self.limits
        if not isinstance(message, str):
            raise RunRefused("invalid", "the message must be a string")
        if len(message) > lim.max_message_chars:
            raise RunRefused(
                "too_large", f"the message has {len(message)} characters; the limit is {lim.max_message_chars}"
            )
        try:
            past = normalize_history(history)
        except ValueError as exc:
            raise RunRefused("invalid", f"bad history: {exc}") from None
        if not message.strip() and not (past and past[-1].role == "tool"):
            # An empty message is a continuation only after tool results (a client
            # answering frontend tools); otherwise there is nothing to answer.
            raise RunRefused("invalid", "the message is empty")
        total = len(message) + sum(len(m.content) for m in past)
        if total > lim.max_input_chars:
            raise RunRefused(
                "too_large", f"message and history have {total} characters; the limit is {lim.max_input_chars}"
            )
        if self._active >= lim.max_concurrent_runs:
            raise RunRefused(
                "busy",
                f"the server is running {self._active} runs, its limit; try again shortly",
                retry_after=lim.retry_after,
            )
        self._active += 1
        context = RunContext(
            run_id=run_id or os.urandom(16).hex(),
            cancel=CancelToken(),
            tools=tuple(tools),
            door=door,
            extras=dict(extras or {}),
        )
        stream = RunStream(self, message, past, context, approver)
        self._runs.add(stream)
        return stream

    def _release(self) -> None:
        self._active -= 1

    def _call_hook(self, name: str, **kwargs: Any) -> None:
        if self.hooks is None:
            return
        caller = getattr(self.hooks, name, None)
        if caller is None:
            return
        impls = getattr(caller, "get_hookimpls", None)
        if impls is None:  # a plain object standing in for pluggy's relay
            calls = [(caller, kwargs)]
        else:  # call each implementation alone, so one broken observer cannot silence the rest
            calls = [(impl.function, {a: kwargs[a] for a in impl.argnames}) for impl in reversed(impls())]
        for function, arguments in calls:
            try:
                function(**arguments)
            except Exception:  # an observer must never break a run
                log.exception("lifecycle hook %s failed", name)


_SIGNATURE_CACHE: dict[Any, bool] = {}


def _accepts_context(method: Any) -> bool:
    key = getattr(method, "__func__", method)
    found = _SIGNATURE_CACHE.get(key)
    if found is None:
        try:
            params = inspect.signature(method).parameters.values()
        except (TypeError, ValueError):
            params = ()  # type: ignore[assignment]
        found = any(p.name == "context" or p.kind is inspect.Parameter.VAR_KEYWORD for p in params)
        _SIGNATURE_CACHE[key] = found
    return found


def _resolve(fut: asyncio.Future) -> None:
    if not fut.done():
        fut.set_result(None)


class _Feed:
    """Events from one producer (worker thread or pump task) to the run's consumer.

    Bounded: a producer that runs ahead waits for space (a thread on a condition, a
    task on a future). The consumer takes everything buffered at once. Appends and
    pops are single deque operations, atomic under the GIL; the lock only guards the
    hand-over of the consumer's waiter and the producer's wait for space.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, maxsize: int) -> None:
        self.loop = loop
        self.maxsize = maxsize
        self.items: deque[Any] = deque()
        self.lock = threading.Lock()
        self.space = threading.Condition(self.lock)
        self.producer_waiting = False
        self.space_future: asyncio.Future | None = None
        self.waiter: asyncio.Future | None = None
        self.done = False
        self.error: BaseException | None = None
        self.closed = False
        self.exited: asyncio.Future = loop.create_future()

    # -- producer side, worker thread --------------------------------------------------
    def put_from_thread(self, item: Any) -> bool:
        """Add an event; False once the consumer no longer wants events."""
        items = self.items
        if len(items) >= self.maxsize:
            with self.lock:
                while len(items) >= self.maxsize and not self.closed:
                    self.producer_waiting = True
                    self.space.wait(0.5)
                self.producer_waiting = False
        if self.closed:
            return False
        items.append(item)
        if self.waiter is not None:
            self._wake_threadsafe()
        return True

    def _wake_threadsafe(self) -> None:
        with self.lock:
            waiter, self.waiter = self.waiter, None
        if waiter is not None:
            try:
                self.loop.call_soon_threadsafe(_resolve, waiter)
            except RuntimeError:  # the loop is closed: nobody is waiting any more
                pass

    def end_from_thread(self, error: BaseException | None) -> None:
        self.error = error
        self.done = True
        self._wake_threadsafe()
        try:
            self.loop.call_soon_threadsafe(_resolve, self.exited)
        except RuntimeError:
            pass

    # -- producer side, pump task (loop thread) ----------------------------------------
    async def put_from_task(self, item: Any) -> None:
        self.items.append(item)
        waiter = self.waiter
        if waiter is not None:
            self.waiter = None
            _resolve(waiter)
        if len(self.items) >= self.maxsize and not self.closed:
            self.space_future = self.loop.create_future()
            await self.space_future

    def end_from_task(self, error: BaseException | None) -> None:
        self.error = error
        self.done = True
        self.wake()
        _resolve(self.exited)

    # -- consumer side (loop thread) ---------------------------------------------------
    def take(self) -> list[Any] | None:
        items = self.items
        count = len(items)
        if not count:
            return None
        pop = items.popleft
        batch = [pop() for _ in range(count)]
        if self.producer_waiting:
            with self.lock:
                self.space.notify()
        space = self.space_future
        if space is not None:
            self.space_future = None
            _resolve(space)
        return batch

    async def wait(self, timeout: float | None) -> bool:
        """Wait for events or the producer's end; False if ``timeout`` passed first."""
        if self.items or self.done or self.closed:
            return True
        fut = self.loop.create_future()
        with self.lock:
            self.waiter = fut
        if self.items or self.done:  # raced with a producer that did not see the waiter
            self.wake()
        try:
            await asyncio.wait_for(fut, timeout)
            return True
        except TimeoutError:
            return False
        finally:
            with self.lock:
                if self.waiter is fut:
                    self.waiter = None

    def wake(self) -> None:
        """Wake a waiting consumer (from the loop thread), e.g. after cancel()."""
        with self.lock:
            waiter, self.waiter = self.waiter, None
        if waiter is not None:
            _resolve(waiter)

    def close(self) -> None:
        """The consumer wants no more events: producers stop at their next put."""
        with self.lock:
            self.closed = True
            self.space.notify_all()
        space, self.space_future = self.space_future, None
        if space is not None:
            _resolve(space)


class _Stop(Exception):
    """Internal: end the run with a RunFailed carrying this message."""


class RunStream:
    """One run's event stream. Iterate it, or use it as an async context manager.

    ``cancel()`` asks the run to stop: the backend is told, and the stream ends with
    the events already produced, ToolFinished errors for open tool calls, and
    RunFinished(stop_reason="cancelled"). ``aclose()`` (or leaving ``async with``) also
    cancels, for a consumer that went away and wants no more events.
    """

    def __init__(
        self, kernel: Kernel, message: str, history: list[Message], context: RunContext, approver: Any = None
    ) -> None:
        self.kernel = kernel
        self._approver = approver
        self._approvals_open = 0
        self._approval_ended = float("-inf")
        self._door_idle: asyncio.Event | None = None  # set while the door waits for events
        self._cancel_event: asyncio.Event | None = None
        if approver is not None:
            context.approve = self._approve
        self.message = message
        self.history = history
        self.context = context
        self.run_id = context.run_id
        self.outcome: RunFinished | RunFailed | None = None
        self._cancel_requested = False
        self._told = False
        self._started = False
        self._released = False
        self._agent: Any = None
        self._feed: _Feed | None = None
        self._pump: asyncio.Task | None = None
        self._thread: threading.Thread | None = None
        self.info: RunInfo | None = None
        self._gen = self._drive()

    # -- public API --------------------------------------------------------------------
    def __aiter__(self) -> AsyncIterator[Event]:
        return self._gen

    async def __aenter__(self) -> "RunStream":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()

    @property
    def cancelled(self) -> bool:
        return self._cancel_requested

    def cancel(self) -> None:
        """Ask the run to stop; safe to call more than once and after the end."""
        if self._cancel_requested or self.outcome is not None:
            return
        self._cancel_requested = True
        if self._cancel_event is not None:
            self._cancel_event.set()
        self._tell_backend()
        if self._feed is not None:
            self._feed.wake()

    async def aclose(self) -> None:
        if not self._started:
            self._gen = _empty()
            self._finish_bookkeeping(RunFinished(self.run_id, "", STOP_CANCELLED), call_hook=False)
            return
        await self._gen.aclose()

    def __del__(self) -> None:  # a stream that was never iterated nor closed
        if not self._released:
            self._released = True
            self.kernel._release()

    # -- the drive loop ----------------------------------------------------------------
    async def _drive(self) -> AsyncGenerator[Event, None]:
        self._started = True
        kernel = self.kernel
        lim = kernel.limits
        run_id = self.run_id
        contract = Contract(lambda name: self.context.client_tool(name) is not None)
        self.info = RunInfo(run_id, kernel.backend.name, self.context.door, self.message, len(self.history), time.time())
        kernel._call_hook("onedoor_run_started", run=self.info)
        outcome: RunFinished | RunFailed | None = None
        try:
            yield RunStarted(run_id)
            try:
                if not self._cancel_requested:
                    self._start_backend()
                feed = self._feed
                if feed is None:  # cancelled before the backend started
                    feed = self._feed = _Feed(asyncio.get_running_loop(), 1)
                    feed.end_from_task(None)
                started = time.monotonic()
                run_deadline = started + lim.run_timeout if lim.run_timeout else None
                while outcome is None:
                    batch = feed.take()
                    if batch is None:
                        if self._cancel_requested:
                            break
                        if feed.done:
                            if feed.error is not None:
                                raise _Stop(self._describe_error(feed.error))
                            raise ContractViolation("backend's stream ended without RunFinished or RunFailed")
                        timeout = lim.idle_timeout
                        if run_deadline is not None:
                            left = run_deadline - time.monotonic()
                            if left <= 0:
                                raise _Stop(f"backend {kernel.backend.name!r} exceeded the run timeout of {lim.run_timeout:g} s")
                            timeout = min(timeout, left) if timeout else left
                        if self._door_idle is not None:
                            self._door_idle.set()
                        got = await feed.wait(timeout)
                        if self._door_idle is not None:
                            self._door_idle.clear()
                        if not got:
                            if self._approvals_open or time.monotonic() - self._approval_ended < lim.idle_timeout:
                                continue  # a human is (or was just) being asked: the idle timeout waits
                            if run_deadline is not None and time.monotonic() >= run_deadline:
                                raise _Stop(f"backend {kernel.backend.name!r} exceeded the run timeout of {lim.run_timeout:g} s")
                            raise _Stop(f"backend {kernel.backend.name!r} sent no event for {lim.idle_timeout:g} s (idle timeout)")
                        continue
                    for event in batch:
                        if self._cancel_requested:
                            break
                        if type(event) is TextDelta and contract.started and not contract.ended:
                            text = event.text
                            if type(text) is not str:
                                raise ContractViolation("TextDelta.text must be a string")
                            contract.parts.append(text)
                            yield event
                            continue
                        contract.check(event)
                        kind = type(event)
                        if kind is RunStarted:
                            continue  # the kernel already sent its own
                        if kind is RunFinished:
                            outcome = RunFinished(run_id, event.text, event.stop_reason)
                            break
                        if kind is RunFailed:
                            for closing in contract.close_open_tools("the run failed"):
                                yield closing
                            outcome = RunFailed(run_id, str(event.error))
                            break
                        yield event
                if outcome is None:  # cancelled
                    await self._stop_backend(tell=True)
                    for closing in contract.close_open_tools("cancelled"):
                        yield closing
                    outcome = RunFinished(run_id, contract.text, STOP_CANCELLED)
            except (ContractViolation, _Stop) as exc:
                await self._stop_backend(tell=True)
                for closing in contract.close_open_tools("the run failed"):
                    yield closing
                message = str(exc)
                if isinstance(exc, ContractViolation):
                    message = f"backend {kernel.backend.name!r} broke the event contract: {message}"
                log.info("run %s failed: %s", run_id, message)
                outcome = RunFailed(run_id, message)
            self.outcome = outcome
            yield outcome
            await self._stop_backend(tell=False)
        except BaseException:
            # The consumer went away (aclose / task cancelled): stop the backend, no more events.
            cut_short = self.outcome is None
            if cut_short:
                outcome = RunFinished(run_id, contract.text, STOP_CANCELLED)
                self.outcome = outcome
                self._cancel_requested = True
            await self._stop_backend(tell=cut_short)
            raise
        finally:
            self._finish_bookkeeping(outcome or RunFinished(run_id, contract.text, STOP_CANCELLED))

    # -- backend management ------------------------------------------------------------
    async def _approve(self, call_id: str, name: str, arguments: Any) -> bool:
        """The kernel's side of an approval: order, idle-timeout pause, cancel = no."""
        if self._cancel_requested or self._approver is None:
            return False
        if self._door_idle is None:
            self._door_idle = asyncio.Event()
        if self._cancel_event is None:
            self._cancel_event = asyncio.Event()
        self._approvals_open += 1
        try:
            # Every event sent before the question reaches the door first.
            feed = self._feed
            while feed is not None and (feed.items or not self._door_idle.is_set()) and not self._cancel_requested:
                waiter = asyncio.ensure_future(self._door_idle.wait())
                stop = asyncio.ensure_future(self._cancel_event.wait())
                await asyncio.wait({waiter, stop}, timeout=0.5, return_when=asyncio.FIRST_COMPLETED)
                waiter.cancel()
                stop.cancel()
                if not feed.items and self._door_idle.is_set():
                    break
            if self._cancel_requested:
                return False
            ask = asyncio.ensure_future(self._approver(call_id, name, arguments))
            stop = asyncio.ensure_future(self._cancel_event.wait())
            try:
                await asyncio.wait({ask, stop}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                stop.cancel()
            if not ask.done():
                ask.cancel()
                return False
            try:
                return bool(ask.result())
            except Exception:  # noqa: BLE001 - the door could not ask: the answer is no
                log.debug("approval request failed", exc_info=True)
                return False
        finally:
            self._approvals_open -= 1
            self._approval_ended = time.monotonic()

    def _start_backend(self) -> None:
        loop = asyncio.get_running_loop()
        self.context.loop = loop
        if self._approver is not None:
            self._door_idle = self._door_idle or asyncio.Event()
            self._cancel_event = self._cancel_event or asyncio.Event()
        try:
            agent = self._agent = self.kernel.backend.factory()
            method = agent.run
        except Exception as exc:
            raise _Stop(f"backend {self.kernel.backend.name!r} could not create an agent: {type(exc).__name__}: {exc}") from None
        feed = self._feed = _Feed(loop, self.kernel.limits.queue_size)
        kwargs: dict[str, Any] = {"history": self.history}
        if _accepts_context(method):
            kwargs["context"] = self.context
        if inspect.isasyncgenfunction(method) or inspect.iscoroutinefunction(method):
            self._pump = loop.create_task(self._pump_async(method, kwargs, feed), name=f"onedoor-run-{self.run_id}")
        else:
            thread = threading.Thread(
                target=_run_sync_worker,
                args=(method, self.message, kwargs, feed),
                name=f"onedoor-run-{self.run_id}",
                daemon=True,
            )
            self.kernel._threads.add(thread)
            self._thread = thread
            thread.start()

    async def _pump_async(self, method: Any, kwargs: dict[str, Any], feed: _Feed) -> None:
        error: BaseException | None = None
        source: Any = None
        try:
            source = method(self.message, **kwargs)
            if inspect.isawaitable(source):
                source = await source
            async for event in source:
                if feed.closed:
                    break
                await feed.put_from_task(event)
        except asyncio.CancelledError:
            pass
        except BaseException as exc:  # noqa: BLE001 - reported as RunFailed
            error = exc
        finally:
            aclose = getattr(source, "aclose", None)
            if aclose is not None:
                try:
                    await aclose()
                except BaseException:  # noqa: BLE001
                    pass
            feed.end_from_task(error)

    def _tell_backend(self) -> None:
        if self._told:
            return
        self._told = True
        self.context.cancel.cancel()
        if self._pump is not None and not self._pump.done():
            self._pump.cancel()
        agent = self._agent
        for name in ("cancel", "interrupt"):
            hook = getattr(agent, name, None)
            if callable(hook):
                try:
                    hook()
                except Exception:
                    log.exception("backend %r: %s() raised", self.kernel.backend.name, name)
                break

    async def _stop_backend(self, tell: bool) -> None:
        """Make sure the producer has ended.

        ``tell``: the run is being cut short, so the backend is told to stop at once.
        Otherwise (after its terminal event) it gets the grace period to return first.
        """
        feed = self._feed
        if feed is None:
            return
        feed.close()
        if feed.exited.done():
            self._join_worker()
            return
        if tell:
            self._tell_backend()
        grace = self.kernel.limits.cancel_grace
        try:
            await asyncio.wait_for(asyncio.shield(feed.exited), grace)
            self._join_worker()
            return
        except TimeoutError:
            if not tell:
                self._tell_backend()
        try:
            await asyncio.wait_for(asyncio.shield(feed.exited), grace)
            self._join_worker()
        except TimeoutError:
            log.warning(
                "backend %r did not stop within %g s of being cancelled; leaving its worker to finish",
                self.kernel.backend.name,
                self.kernel.limits.cancel_grace,
            )

    def _join_worker(self) -> None:
        """The worker has signalled its end; wait out the instant until its thread exits."""
        thread = self._thread
        if thread is not None:
            thread.join(1.0)
            self.kernel._threads.discard(thread)

    def _describe_error(self, exc: BaseException) -> str:
        log.debug("backend %r raised", self.kernel.backend.name, exc_info=exc)
        detail = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        text = f"{type(exc).__name__}: {detail}" if detail else type(exc).__name__
        return f"backend {self.kernel.backend.name!r} failed: {text}"

    def _finish_bookkeeping(self, outcome: RunFinished | RunFailed, call_hook: bool = True) -> None:
        if self.outcome is None:
            self.outcome = outcome
        if not self._released:
            self._released = True
            self.kernel._release()
            if call_hook:
                self.kernel._call_hook("onedoor_run_finished", run=self.info, outcome=self.outcome)


def _run_sync_worker(method: Any, message: str, kwargs: dict[str, Any], feed: _Feed) -> None:
    """Body of a sync run's worker thread. The generator is closed in this thread."""
    error: BaseException | None = None
    source: Any = None
    try:
        source = method(message, **kwargs)
        if hasattr(source, "__aiter__") and not hasattr(source, "__iter__"):
            raise TypeError("run() returned an async iterator but is not declared `async def`")
        put = feed.put_from_thread
        for event in source:
            if not put(event):
                break
    except BaseException as exc:  # noqa: BLE001 - reported as RunFailed
        error = exc
    finally:
        close = getattr(source, "close", None)
        if close is not None:
            try:
                close()
            except BaseException:  # noqa: BLE001
                pass
        feed.end_from_thread(error)


async def _empty() -> AsyncGenerator[Event, None]:
    return
    yield  # pragma: no cover


def iter_outcome(events: Sequence[Event]) -> RunFinished | RunFailed | None:
    """The terminal event of a finished list of events, if any."""
    for event in reversed(events):
        if isinstance(event, (RunFinished, RunFailed)):
            return event
    return None


__all__ = ["Backend", "Kernel", "Limits", "RunInfo", "RunStream", "ToolFinished", "iter_outcome"]
