"""The feed: a bounded hand-over of events from one producer to one consumer.

The producer is a run's backend (a worker thread for a sync agent, a task for an async
one); the consumer is the run's stream on the event loop. Internal to the kernel.

The producer's fast path is one ``deque.append`` and one flag test per event::

    items.append(event)
    if feed.attention or len(items) >= feed.maxsize:
        if not feed.after_put_from_thread():     # or: await feed.after_put_from_task()
            break                                # the consumer wants no more events

``attention`` is True while the consumer waits for events and once the feed is closed;
the slow path then wakes the consumer, waits for room, or tells the producer to stop.
The consumer takes everything buffered at once (:meth:`Feed.take`). Appends and pops are
single deque operations, atomic under the GIL; the lock guards only the hand-over of the
consumer's waiter and the producer's wait for room.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import deque
from typing import Any, Callable

_SMALL_BATCH = 16


def resolve(fut: asyncio.Future) -> None:
    """Set ``fut``'s result to None unless it is already done."""
    if not fut.done():
        fut.set_result(None)


class Feed:
    __slots__ = (
        "loop", "maxsize", "items", "attention", "lock", "space", "producer_waiting", "space_future",
        "waiter", "closed", "done", "error", "exited", "threaded", "_exit_callbacks", "_due", "_timer", "_timer_at",
    )

    def __init__(self, loop: asyncio.AbstractEventLoop, maxsize: int, *, threaded: bool = False) -> None:
        self.loop = loop
        self.threaded = threaded  # the producer is a worker thread (not a task on the loop)
        self.maxsize = max(1, maxsize)
        self.items: deque[Any] = deque()
        self.attention = False  # the consumer waits, or the feed is closed: producers take the slow path
        self.lock = threading.Lock()
        self.space = threading.Condition(self.lock)
        self.producer_waiting = False  # a worker thread waits for room
        self.space_future: asyncio.Future | None = None  # a producer task waits for room
        self.waiter: asyncio.Future | None = None  # the consumer waits for events
        self.closed = False  # the consumer wants no more events
        self.done = False  # the producer has ended ...
        self.error: BaseException | None = None  # ... with this exception, or None
        self.exited: asyncio.Future = loop.create_future()  # resolved on the loop once the producer ended
        self._exit_callbacks: list[Callable[[], None]] = []
        # The consumer's time-out: one timer per feed, re-armed only when it fires early,
        # instead of a timer per wait (a run waits once per batch: thousands of times).
        self._due: float | None = None  # loop time at which the current wait times out
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at = 0.0

    # -- producer side, worker thread --------------------------------------------------
    def after_put_from_thread(self) -> bool:
        """The slow path after an append: wake the consumer, wait for room.

        Returns False once the consumer no longer wants events.
        """
        if self.closed:
            return False
        if self.waiter is not None:
            self._wake_threadsafe()
        items = self.items
        if len(items) >= self.maxsize:
            with self.lock:
                while len(items) >= self.maxsize and not self.closed:
                    self.producer_waiting = True
                    self.space.wait(0.5)
                self.producer_waiting = False
        return not self.closed

    def _wake_threadsafe(self) -> None:
        with self.lock:
            waiter, self.waiter = self.waiter, None
            self.attention = self.closed
        if waiter is not None:
            try:
                self.loop.call_soon_threadsafe(resolve, waiter)
            except RuntimeError:  # the loop is closed: nobody is waiting any more
                pass

    def end_from_thread(self, error: BaseException | None) -> None:
        """The worker's last act: record how it ended and wake whoever waits."""
        callbacks = self._mark_ended(error)
        self._wake_threadsafe()
        try:
            self.loop.call_soon_threadsafe(resolve, self.exited)
        except RuntimeError:
            pass
        for callback in callbacks:
            callback()

    # -- producer side, task on the loop -----------------------------------------------
    async def after_put_from_task(self) -> bool:
        """The slow path after an append from a task; False once the consumer wants no more."""
        if self.closed:
            return False
        waiter = self.waiter
        if waiter is not None:
            self.waiter = None
            self.attention = False
            resolve(waiter)
        if len(self.items) >= self.maxsize:
            self.space_future = self.loop.create_future()
            await self.space_future
        return not self.closed

    def end_from_task(self, error: BaseException | None) -> None:
        callbacks = self._mark_ended(error)
        self.wake()
        resolve(self.exited)
        for callback in callbacks:
            callback()

    def _mark_ended(self, error: BaseException | None) -> list[Callable[[], None]]:
        with self.lock:
            self.error = error
            self.done = True
            callbacks, self._exit_callbacks = self._exit_callbacks, []
        return callbacks

    def on_exit(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` once the producer has ended (now, if it already has).

        It runs in the producer's thread (or on the loop, for a task): keep it tiny and
        thread-safe.
        """
        with self.lock:
            if not self.done:
                self._exit_callbacks.append(callback)
                return
        callback()

    # -- consumer side (loop thread) ---------------------------------------------------
    def take(self) -> list[Any] | None:
        """Everything buffered, oldest first; None if nothing is."""
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
            resolve(space)
        return batch

    async def wait(self, timeout: float | None) -> bool:
        """Wait for events or the producer's end; False if ``timeout`` passed first."""
        if self.items or self.done or self.closed:
            return True
        if self.threaded:
            # Hand the GIL to the worker once before sleeping on the loop: a busy worker
            # fills a batch meanwhile (no pipe write, two thread switches per batch
            # instead of four); one that waits for I/O gives it straight back.
            time.sleep(0)
            if self.items or self.done:
                return True
        fut = self.loop.create_future()
        with self.lock:
            self.waiter = fut
            self.attention = True
        if self.items or self.done:  # raced with a producer that did not see the waiter
            self.wake()
        if timeout is not None:
            self._arm(self.loop.time() + timeout)
        try:
            if await fut:  # True: the timer resolved it
                return False
        finally:
            self._due = None
            with self.lock:
                if self.waiter is fut:
                    self.waiter = None
                    self.attention = self.closed
        if self.threaded and len(self.items) < _SMALL_BATCH:
            # A worker thread woke us for its first event and now waits for the GIL: let
            # it run once, so that a burst leaves in one batch rather than one wake-up
            # (two thread switches and a pipe write) per event. Instant for a worker
            # that is blocked in I/O; at most one switch interval for a busy one.
            time.sleep(0)
        return True

    def _arm(self, due: float) -> None:
        """Make sure the timer fires no later than ``due`` (it re-arms itself if early)."""
        self._due = due
        if self._timer is None or self._timer_at > due:
            if self._timer is not None:
                self._timer.cancel()
            self._timer = self.loop.call_at(due, self._on_timer)
            self._timer_at = due

    def _on_timer(self) -> None:
        self._timer = None
        due = self._due
        if due is None or self.closed:
            return  # nobody waits now; the next wait arms it again
        if self.loop.time() < due:  # armed for an earlier wait: wait on for this one
            self._timer = self.loop.call_at(due, self._on_timer)
            self._timer_at = due
            return
        with self.lock:
            waiter, self.waiter = self.waiter, None
            self.attention = self.closed
        if waiter is not None and not waiter.done():
            waiter.set_result(True)

    def _disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def wake(self) -> None:
        """Wake a waiting consumer (from the loop thread), e.g. after a cancel."""
        with self.lock:
            waiter, self.waiter = self.waiter, None
            self.attention = self.closed
        if waiter is not None:
            resolve(waiter)

    def close(self) -> None:
        """The consumer wants no more events: producers stop at their next event."""
        self._disarm()
        with self.lock:
            self.closed = True
            self.attention = True
            self.space.notify_all()
        space, self.space_future = self.space_future, None
        if space is not None:
            resolve(space)
