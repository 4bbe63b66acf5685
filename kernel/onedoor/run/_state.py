"""A run's shared state, as the kernel keeps it (see :mod:`onedoor.state`). Internal to the kernel."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .. import events as _events  # the state events' classes are made on first use
from ..errors import ContractViolation
from ..state import apply_patch, checked_state, copy_state, size_bound, state_chars

if TYPE_CHECKING:
    from ..events import StateDelta, StateSnapshot


class RunState:
    """The state of one run, from its first response to its last."""

    __slots__ = ("value", "limit", "changes", "base_version", "shown_at_start", "_size")

    def __init__(self, value: dict[str, Any] | None, limit: int, base_version: int = 0, *, shown: bool = False) -> None:
        self.value = value
        self.limit = limit
        self.changes: list[tuple[str, Any]] = []  # ("snapshot", state) | ("delta", ops), in order
        self.base_version = base_version  # the thread's state version the run started from
        # the stream starts with a StateSnapshot (after RunStarted): a client sent a state, or
        # the thread has one; a reader replaying the run from its start gets the state it began with
        self.shown_at_start = shown
        self._size = -1  # characters of the state's JSON, at most (-1: not known; measure it)

    def copy(self) -> dict[str, Any] | None:
        """The state now, as a copy a backend may change freely."""
        return copy_state(self.value) if self.value is not None else None

    @property
    def changed(self) -> bool:
        return bool(self.changes)

    def apply(self, event: StateSnapshot | StateDelta) -> StateSnapshot | StateDelta:
        """Check and apply a backend's change; the event to pass on (ContractViolation when
        it does not apply: the state stays as it was)."""
        try:
            if isinstance(event, _events.StateSnapshot):
                # one fresh copy, shared by the event, the value and the change: none of them
                # is changed in place (a patch makes a new document, sharing what it leaves)
                new = checked_state(event.state, self.limit)
                self.changes.append(("snapshot", new))
                self.value, self._size = new, -1
                return _events.StateSnapshot(new)
            ops = checked_state({"ops": list(event.ops)}, self.limit)["ops"]  # JSON, and a copy
            new = apply_patch(self.value or {}, ops)
            self._check_size(new, ops)
        except ValueError as exc:
            raise ContractViolation(f"a state change was refused: {exc}") from None
        self.changes.append(("delta", ops))
        self.value = new
        return _events.StateDelta(tuple(ops))

    def _check_size(self, new: dict[str, Any], ops: Any) -> None:
        """ValueError when ``new`` is past the limit. Measured only when a bound of what the
        patches since the last measure added could pass it: most deltas are not."""
        added = size_bound(ops)
        if self._size >= 0 and added >= 0 and self._size + added <= self.limit:
            self._size += added
            return
        size = state_chars(new)
        if size > self.limit:
            raise ValueError(f"the state would have {size:,} characters; the limit is {self.limit:,}")
        self._size = size

    def replayed_on(self, stored: dict[str, Any]) -> dict[str, Any]:
        """The run's changes applied again, in order, on ``stored`` (another door changed the
        thread's state meanwhile); ValueError when they no longer apply."""
        value = stored
        for kind, change in self.changes:
            value = copy_state(change) if kind == "snapshot" else apply_patch(value, change)
        return checked_state(value, self.limit)


__all__ = ["RunState"]
