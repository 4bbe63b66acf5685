"""The backend runner: drives one agent's ``run`` as the producer of a :class:`Feed`.

A sync agent runs on its own worker thread, an async one in its own task on the run's
event loop. The runner tells the backend to stop (the run's cancel token, task
cancellation, the agent's own ``cancel()`` or ``interrupt()``) and waits for it to end,
once, for at most the grace it is given. A backend that ignores all of that is logged
once and left to finish on its own; whoever needs to know when it really ends (the
kernel, to free the run's slot) registers with :meth:`BackendRunner.on_exit`.
Internal to the kernel.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import logging
import threading
from typing import Any, Callable

from ..port import Message, RunContext
from ._feed import Feed, resolve

log = logging.getLogger("onedoor.kernel")


class StopRun(Exception):
    """End the run with a RunFailed carrying this message (internal to the kernel)."""


_SIGNATURE_CACHE: dict[Any, bool] = {}


def accepts_context(method: Any) -> bool:
    """Whether ``agent.run`` takes ``context`` (by name or through ``**kwargs``)."""
    key = getattr(method, "__func__", method)
    found = _SIGNATURE_CACHE.get(key)
    if found is None:
        try:
            params = list(inspect.signature(method).parameters.values())
        except (TypeError, ValueError):
            params = []
        found = any(p.name == "context" or p.kind is inspect.Parameter.VAR_KEYWORD for p in params)
        _SIGNATURE_CACHE[key] = found
    return found


class BackendRunner:
    """One run's producer: the agent, its worker thread or task, and the feed it fills."""

    def __init__(self, backend_name: str, agent: Any, context: RunContext, feed: Feed) -> None:
        self.backend_name = backend_name
        self.agent = agent
        self.context = context
        self.feed = feed
        self.thread: threading.Thread | None = None
        self.task: asyncio.Task | None = None
        self.told = False
        self.abandoned = False  # it did not stop within its grace; it finishes on its own
        self._stop_by: float | None = None  # loop.time() when a wait in stop() gives up
        self._shortened: asyncio.Future | None = None  # resolved when shorten() moves _stop_by

    @classmethod
    def start(
        cls,
        backend: Any,
        message: str,
        history: list[Message],
        context: RunContext,
        queue_size: int,
        threads: set[threading.Thread],
        starting: Callable[[], None] | None = None,
    ) -> "BackendRunner":
        """Build a fresh agent and start its run; raise :class:`StopRun` if it cannot be built.
        The backend runs in a copy of the caller's ``contextvars`` context; ``starting`` is
        called in that copy first (an observer making its span current for the backend)."""
        loop = asyncio.get_running_loop()
        context.loop = loop
        try:
            agent = backend.factory()
            method = agent.run
        except Exception as exc:  # noqa: BLE001 - reported as RunFailed
            raise StopRun(f"backend {backend.name!r} could not create an agent: {type(exc).__name__}: {exc}") from None
        is_async = inspect.isasyncgenfunction(method) or inspect.iscoroutinefunction(method)
        runner = cls(backend.name, agent, context, Feed(loop, queue_size, threaded=not is_async))
        context.emit = runner.emit
        kwargs: dict[str, Any] = {"history": history}
        if accepts_context(method):
            kwargs["context"] = context
        name = f"onedoor-run-{context.run_id}"
        run_context = contextvars.copy_context()
        if starting is not None:
            run_context.run(starting)
        if is_async:
            runner.task = loop.create_task(pump_async(method, message, kwargs, runner.feed), name=name,
                                           context=run_context)
        else:
            thread = threading.Thread(target=run_context.run, args=(run_sync_worker, method, message, kwargs,
                                      runner.feed), name=name, daemon=True)
            threads.add(thread)
            runner.feed.on_exit(lambda: threads.discard(thread))
            runner.thread = thread
            thread.start()
        return runner

    def emit(self, event: Any) -> None:
        """An event from the backend's side that it did not yield (``context.set_state`` and
        the like): into the feed, in order with what the backend sent before it."""
        feed = self.feed
        feed.items.append(event)
        if not feed.attention and len(feed.items) < feed.maxsize:
            return
        if self.thread is not None and threading.current_thread() is self.thread:
            feed.after_put_from_thread()
        elif _on_loop(feed.loop):
            feed.wake()
        else:
            feed.loop.call_soon_threadsafe(feed.wake)

    def on_exit(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` once the backend's worker or task has really ended."""
        self.feed.on_exit(callback)

    def tell(self) -> None:
        """Tell the backend to stop, once: cancel token, task cancellation, cancel()/interrupt()."""
        if self.told:
            return
        self.told = True
        self.context.cancel.cancel()
        if self.task is not None and not self.task.done():
            self.task.cancel()
        for name in ("cancel", "interrupt"):
            hook = getattr(self.agent, name, None)
            if callable(hook):
                try:
                    hook()
                except Exception:
                    log.exception("backend %r: %s() raised", self.backend_name, name)
                break

    async def stop(self, *, tell: bool, grace: float) -> None:
        """Make sure the backend ends, waiting at most ``grace`` seconds in all.

        ``tell``: the run is being cut short, so the backend is told at once. Otherwise
        (after its terminal event) it gets the grace to return by itself, and is told
        only if it does not. A backend still running after that is logged once and left
        to finish: the feed is closed, so nothing it sends reaches anyone.
        :meth:`shorten` cuts a wait in progress short (a server shutting down).
        """
        feed = self.feed
        feed.close()
        if not feed.exited.done() and not self.abandoned:
            if tell:
                self.tell()
            started = feed.loop.time()
            if not await self._wait_exited(grace):
                self.tell()
                self.abandoned = True
                log.warning(
                    "backend %r did not stop within %.3g s of being %s; leaving its worker to finish "
                    "(the run's slot stays taken until it does)",
                    self.backend_name, feed.loop.time() - started, "cancelled" if tell else "done",
                )
        if feed.exited.done() and self.thread is not None:
            self.thread.join(1.0)  # it has signalled its end; wait out the instant until the thread exits

    async def _wait_exited(self, grace: float) -> bool:
        """Wait until the producer ended (True) or the grace, maybe shortened meanwhile, ran out."""
        loop = self.feed.loop
        self._stop_by = loop.time() + grace
        try:
            while not self.feed.exited.done():
                left = self._stop_by - loop.time()
                if left <= 0:
                    return False
                self._shortened = loop.create_future()
                wakers = {self.feed.exited, self._shortened}
                await asyncio.wait(wakers, timeout=left, return_when=asyncio.FIRST_COMPLETED)
            return True
        finally:
            self._stop_by = None
            self._shortened = None

    def shorten(self, grace: float) -> None:
        """A wait in :meth:`stop` ends at most ``grace`` seconds from now."""
        if self._stop_by is not None:
            self._stop_by = min(self._stop_by, self.feed.loop.time() + grace)
            if self._shortened is not None:
                resolve(self._shortened)


def _on_loop(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False


def run_sync_worker(method: Any, message: str, kwargs: dict[str, Any], feed: Feed) -> None:
    """Body of a sync run's worker thread. The generator is closed in this thread."""
    error: BaseException | None = None
    source: Any = None
    try:
        source = method(message, **kwargs)
        if hasattr(source, "__aiter__") and not hasattr(source, "__iter__"):
            raise TypeError("run() returned an async iterator but is not declared `async def`")
        items = feed.items
        append = items.append
        maxsize = feed.maxsize
        for event in source:
            append(event)
            if feed.attention or len(items) >= maxsize:
                if not feed.after_put_from_thread():
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


async def pump_async(method: Any, message: str, kwargs: dict[str, Any], feed: Feed) -> None:
    """Body of an async run's task: iterate the agent's stream into the feed."""
    error: BaseException | None = None
    source: Any = None
    try:
        source = method(message, **kwargs)
        if inspect.isawaitable(source):
            source = await source
        items = feed.items
        append = items.append
        maxsize = feed.maxsize
        async for event in source:
            append(event)
            if feed.attention or len(items) >= maxsize:
                if not await feed.after_put_from_task():
                    break
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
