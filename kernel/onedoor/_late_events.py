"""The events only some runs send: ``ReplyPart``, ``StateSnapshot``, ``StateDelta`` and
``UsageReported`` (see :mod:`onedoor.events`, where everyone finds them).

Their classes are made the first time anyone asks :mod:`onedoor.events` for one of them (or
for ``Event``, ``EVENT_TYPES`` or ``TYPE_NAMES``): a run that sends only text never pays
for them at start-up. Nothing imports this module but :mod:`onedoor.events`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .content import Part
    from .usage import ModelUsage


@dataclass(frozen=True)
class ReplyPart:
    """A part of the reply that is not text (its text parts come as TextDelta)."""

    part: Part


@dataclass(frozen=True)
class StateSnapshot:
    """The run's shared state is now ``state`` (a JSON object)."""

    state: dict[str, Any]


@dataclass(frozen=True)
class StateDelta:
    """The run's shared state changed by ``ops`` (RFC 6902 JSON Patch operations)."""

    ops: tuple[dict[str, Any], ...]


@dataclass(frozen=True)
class UsageReported:
    """Usage so far, to be added to the run's (a backend may send several)."""

    usage: tuple[ModelUsage, ...]


for _cls in (ReplyPart, StateSnapshot, StateDelta, UsageReported):
    _cls.__module__ = "onedoor.events"  # where they are found (pickle, repr of the class, docs)
del _cls
