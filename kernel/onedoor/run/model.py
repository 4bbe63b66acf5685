"""What the kernel runs and what it tells observers about a run."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable


@dataclass
class Backend:
    """A loaded backend: its name and a factory that builds a fresh agent per run.
    ``accepts``: the kinds of content part it takes besides text (:mod:`onedoor.content`:
    ``image``, ``audio``, ``video``, ``document``, ``resource``…); doors advertise them and
    the kernel refuses the others before a run starts."""

    name: str
    factory: Callable[[], Any]
    capabilities: frozenset[str] = field(default_factory=frozenset)
    accepts: frozenset[str] = field(default_factory=frozenset)


@dataclass(frozen=True)
class RunInfo:
    """What lifecycle hooks learn about a run (its ``thread_id`` and ``principal`` too,
    and ``meta``: what its door passed on from the request, such as W3C trace context)."""

    run_id: str
    backend: str
    door: str
    message: str
    history_length: int
    started_at: float
    thread_id: str | None = None
    principal: str = "local"
    meta: dict[str, str] = field(default_factory=dict)


__all__ = ["Backend", "RunInfo"]
