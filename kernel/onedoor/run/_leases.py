"""The leases of this process's turns (see :mod:`onedoor.threads.leases`): opened when a
run's message is kept, renewed every ``LEASE_RENEW`` seconds while any is open, closed at
the run's end. A lease call that fails never fails a run: a turn whose lease cannot be
kept looks cut to other processes once the lease runs out, which is the truth about a
turn whose reply could not be kept either. Internal to the kernel."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import Any

from ..threads.leases import LEASE_RENEW, LEASE_TTL, holder, turn_leases

log = logging.getLogger("onedoor.kernel")


class LeaseKeeper:
    def __init__(self, host: Any) -> None:
        self.host = host  # the registry: its ``store`` may change (tests set kernel.store)
        self.open: set[str] = set()  # run ids whose lease this process renews
        self._renewing: asyncio.Task[None] | None = None

    async def begin(self, owner: str, thread_id: str, run_id: str) -> None:
        store = turn_leases(self.host.store)
        if store is None:
            return
        try:
            await store.turn_open(owner, thread_id, run_id, holder(), time.time() + LEASE_TTL)
        except Exception as exc:  # noqa: BLE001 - the store failed: the turn's reply will not be kept either
            log.debug("run %s: no turn lease (%s)", run_id, exc)
            return
        self.open.add(run_id)
        if self._renewing is None or self._renewing.done():
            self._renewing = asyncio.get_running_loop().create_task(self._renew(), name="onedoor-turn-leases")

    async def end(self, run_id: str) -> None:
        if run_id not in self.open:
            return
        self.open.discard(run_id)  # renewed no more, whatever the store says now
        if not self.open:
            self.stop()
        store = turn_leases(self.host.store)
        if store is not None:
            with contextlib.suppress(Exception):
                await store.turn_close(run_id)

    def stop(self) -> None:
        """No lease is open (or the kernel shuts down): the renewing task ends now, not at its
        next wake-up (an event loop closed meanwhile would find it pending)."""
        if self._renewing is not None and not self._renewing.done():
            self._renewing.cancel()
        self._renewing = None

    async def _renew(self) -> None:
        while self.open:
            await asyncio.sleep(LEASE_RENEW)
            store = turn_leases(self.host.store)
            if store is None or not self.open:
                return
            try:
                await store.turn_renew(holder(), time.time() + LEASE_TTL)
            except Exception as exc:  # noqa: BLE001 - tried again at the next renewal
                log.debug("turn leases not renewed (%s)", exc)


__all__ = ["LeaseKeeper"]
