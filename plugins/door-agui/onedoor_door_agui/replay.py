"""A run followed again from a cursor (``GET runs/{id}/events`` with ``Last-Event-ID``): the
reader missed the state events before the cursor, so they are folded into one
STATE_SNAPSHOT sent before the first frame after it (the state as it was at the cursor)."""

from __future__ import annotations

import copy
from typing import Any

from onedoor import StateDelta, StateSnapshot
from onedoor.state import apply_patch

from .translate import encode_sse


class StateReplay:
    def __init__(self) -> None:
        self.state: dict[str, Any] | None = None
        self.owed = False  # a state event was skipped: a snapshot goes first

    def skipped(self, event: Any) -> None:
        """An event before the cursor (not sent again)."""
        kind = type(event)
        if kind is StateSnapshot:
            self.state, self.owed = copy.deepcopy(event.state), True
        elif kind is StateDelta:
            # the kernel applied it already, so it applies here too
            self.state, self.owed = apply_patch(self.state or {}, list(event.ops)), True

    def before(self) -> bytes:
        """The frame owed before the first one after the cursor (once)."""
        if not self.owed:
            return b""
        self.owed = False
        return encode_sse({"type": "STATE_SNAPSHOT", "snapshot": self.state or {}})


__all__ = ["StateReplay"]
