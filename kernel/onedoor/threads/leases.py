"""Turn leases: which turns of a thread a run is still answering, across processes.

A store that keeps turn leases (optional methods of :class:`TurnLeases`; SQLite and
PostgreSQL do) lets any process tell a turn being answered from a turn cut short: the
kernel opens a lease when a run's message is kept, renews its server's leases while the
runs go on and closes each at the run's end. A thread whose last message is a user's
message with no live lease (and no run of this process) has lost its reply: readers are
shown it marked (:data:`UNANSWERED`), and the next turn keeps that mark.

``holder`` names the process (:func:`holder`: host, pid and a random part); a store on
one machine may check the pid as well as the lease time, so a killed process's turn is
known cut at once rather than when its lease runs out.
"""

from __future__ import annotations

import os
import socket
from typing import Any, Protocol, runtime_checkable

LEASE_TTL = 10.0  # seconds a turn's lease lasts without renewal
LEASE_RENEW = 2.0  # how often a process renews its open leases
UNANSWERED = "[no reply was kept for this message]"  # what a cut turn is marked with
_HOLDER = f"{socket.gethostname()}:{os.getpid()}:{os.urandom(4).hex()}"


def holder() -> str:
    """This process, as turn leases name it (host:pid:random)."""
    return _HOLDER


def holder_alive(name: str) -> bool | None:
    """Whether the process a holder names still runs: True/False on this host, None (cannot
    tell) for another host or a name of another form."""
    host, _, rest = name.partition(":")
    pid_text = rest.partition(":")[0]
    if host != socket.gethostname() or not pid_text.isdigit():
        return None
    pid = int(pid_text)
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OSError:
        return None
    return True


@runtime_checkable
class TurnLeases(Protocol):
    """The optional turn-lease calls of a thread store."""

    async def turn_open(self, owner: str, thread_id: str, run_id: str, holder: str, lease_until: float) -> None: ...

    async def turn_close(self, run_id: str) -> None: ...

    async def turn_renew(self, holder: str, lease_until: float) -> None: ...

    async def turn_live(self, owner: str, thread_id: str, *, besides: str = "") -> bool:
        """Whether a run other than ``besides`` holds a live lease on the thread."""
        ...


def turn_leases(store: Any) -> TurnLeases | None:
    """``store`` if it keeps turn leases, else None."""
    return store if isinstance(store, TurnLeases) else None


__all__ = ["LEASE_RENEW", "LEASE_TTL", "UNANSWERED", "TurnLeases", "holder", "holder_alive", "turn_leases"]
