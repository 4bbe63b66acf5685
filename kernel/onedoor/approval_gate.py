"""The approval gate: a backend's question "may I run this tool?" on its way to the door.

The kernel puts one gate on a run whose door passed an ``approver`` (see
:class:`onedoor.port.RunContext`). The gate keeps three promises: every event the
backend sent before the question reaches the door first; while a question is open (and
for one idle timeout after), the run's idle timeout waits for the human; a cancelled run
answers no. Internal to the kernel.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any, Awaitable, Callable

from .feed import Feed

log = logging.getLogger("onedoor.kernel")

Approver = Callable[[str, str, Any], Awaitable[Any]]


class ApprovalGate:
    def __init__(self, approver: Approver) -> None:
        self.approver = approver
        self.feed: Feed | None = None
        self.open = 0  # questions being asked now
        self.last_answered = float("-inf")  # time.monotonic() of the last answer
        self.cancelled = False
        self._door_idle: asyncio.Event | None = None  # set while the door waits for events
        self._cancel: asyncio.Event | None = None

    def bind(self, feed: Feed) -> None:
        """Attach the run's feed; called on the run's event loop when the backend starts."""
        self.feed = feed
        self._events()

    def _events(self) -> tuple[asyncio.Event, asyncio.Event]:
        if self._door_idle is None or self._cancel is None:
            self._door_idle = asyncio.Event()
            self._cancel = asyncio.Event()
            if self.cancelled:
                self._cancel.set()
        return self._door_idle, self._cancel

    def door_waiting(self, waiting: bool) -> None:
        """The run's stream tells the gate when the door has read everything sent so far."""
        door_idle = self._door_idle
        if door_idle is not None:
            if waiting:
                door_idle.set()
            else:
                door_idle.clear()

    def holds_idle_timeout(self, idle_timeout: float) -> bool:
        """True while a human is (or was just) being asked: the idle timeout waits."""
        return bool(self.open) or time.monotonic() - self.last_answered < idle_timeout

    def cancel(self) -> None:
        """The run was cancelled: open and future questions are answered no."""
        self.cancelled = True
        if self._cancel is not None:
            self._cancel.set()

    async def ask(self, call_id: str, name: str, arguments: Any) -> bool:
        """The kernel's side of ``RunContext.request_approval``."""
        if self.cancelled:
            return False
        door_idle, cancel = self._events()
        self.open += 1
        try:
            await self._door_caught_up(door_idle, cancel)
            if self.cancelled:
                return False
            return await self._ask_door(call_id, name, arguments, cancel)
        finally:
            self.open -= 1
            self.last_answered = time.monotonic()

    async def _door_caught_up(self, door_idle: asyncio.Event, cancel: asyncio.Event) -> None:
        """Wait until the door has read every event sent before the question."""
        feed = self.feed
        while feed is not None and (feed.items or not door_idle.is_set()) and not self.cancelled:
            idle = asyncio.ensure_future(door_idle.wait())
            stop = asyncio.ensure_future(cancel.wait())
            await asyncio.wait({idle, stop}, timeout=0.5, return_when=asyncio.FIRST_COMPLETED)
            idle.cancel()
            stop.cancel()
            if not feed.items and door_idle.is_set():
                break

    async def _ask_door(self, call_id: str, name: str, arguments: Any, cancel: asyncio.Event) -> bool:
        ask = asyncio.ensure_future(self.approver(call_id, name, arguments))
        stop = asyncio.ensure_future(cancel.wait())
        try:
            await asyncio.wait({ask, stop}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stop.cancel()
        if not ask.done():
            ask.cancel()
            return False
        try:
            return bool(ask.result())
        except Exception:  # the door could not ask: the answer is no
            log.debug("approval request failed", exc_info=True)
            return False
