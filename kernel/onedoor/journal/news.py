"""The store's news of a run's journal, for a reader (or the run's server) to wait on; see
:mod:`onedoor.journal.shared` for what a store with news offers."""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Callable

log = logging.getLogger("onedoor.journal")


def watch(store: Any, run_id: str, kind: str, callback: Callable[[], None]) -> Callable[[], None] | None:
    """Watch the store's news of a run (see the module docstring); None: it has none."""
    method = getattr(store, "journal_watch", None)
    if method is None:
        return None
    try:
        stop: Callable[[], None] = method(run_id, kind, callback)
    except Exception as exc:  # noqa: BLE001 - news is a shortcut: polling still works without it
        log.debug("run %s: no news of its journal (%s)", run_id, exc)
        return None
    return stop


NEWS_POLL = 1.0  # seconds between a reader's polls while the store's news is live


class _News:
    """What the store pushes about one run, for a reader to wait on (a timeout: its poll)."""

    def __init__(self, store: Any, run_id: str, kind: str) -> None:
        self.fresh = False  # news came since the last wait
        self._waiter: asyncio.Future[None] | None = None
        self._live = getattr(store, "journal_news_live", None)
        self._stop = watch(store, run_id, kind, self._heard)

    @property
    def live(self) -> bool:
        """Every news of the run will be heard (watching since before the reader's last read)."""
        return self._stop is not None and self._live is not None and bool(self._live())

    def _heard(self) -> None:
        self.fresh = True
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def wait(self, timeout: float, *, poll: bool = True) -> None:
        """Until news comes (at once if some came since the last wait) or ``timeout`` passes
        (``poll``: the timeout of a poll, which is longer while news is live)."""
        if self._stop is None:
            await asyncio.sleep(timeout)
            return
        if not self.fresh:
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await asyncio.wait((self._waiter,), timeout=max(timeout, NEWS_POLL) if poll and self.live else timeout)
            finally:
                self._waiter = None
        self.fresh = False

    def close(self) -> None:
        if self._stop is not None:
            self._stop()
            self._stop = None


__all__ = ["NEWS_POLL", "watch"]
