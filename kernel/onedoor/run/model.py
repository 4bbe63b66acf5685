"""What the kernel runs and what it tells observers about a run."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable


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


__all__ = ["Backend", "RunInfo"]
