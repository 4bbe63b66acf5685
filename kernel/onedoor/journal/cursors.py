"""Journal cursors: ``"<run_id>:<epoch>:<seq>"``, the one form every door hands out (SSE
``id:``) and reads back (``Last-Event-ID``, ``?after=``).

``epoch`` is 0 for every run today; a cursor of another epoch is of an earlier life of
the run and is refused as expired, like one older than what the journal keeps.
:func:`read_cursor` is the one check every door makes before it replays a run.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._lazy import LazyPattern
from ..errors import OnedoorError
from ..ids import RUN_ID_PATTERN, is_run_id  # (re-exported: what a cursor carries)

CURSOR_PATTERN = rf"^{RUN_ID_PATTERN}:[0-9]{{1,9}}:[0-9]{{1,12}}$"  # for schemas (OpenAPI)
_CURSOR = LazyPattern(rf"({RUN_ID_PATTERN}):(\d{{1,9}}):(\d{{1,12}})", re.ASCII)  # compiled on first use


if TYPE_CHECKING:
    RUN_ID: re.Pattern[str]


def __getattr__(name: str) -> Any:
    if name == "RUN_ID":  # the compiled run id pattern, as this module has always offered it
        return re.compile(RUN_ID_PATTERN)  # (re keeps it compiled)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class CursorError(OnedoorError):
    """A cursor a door will not replay from. ``reason``: ``invalid`` (not a cursor, or a
    cursor of another run) or ``expired`` (an earlier life of the run, older than what is
    kept, or never given out by this run): doors answer 422 and 409."""

    def __init__(self, message: str, reason: str = "invalid") -> None:
        super().__init__(message)
        self.reason = reason


class CursorExpired(CursorError):
    """The cursor is older than the events the journal still holds (or was never one of
    this run's): read the thread instead."""

    def __init__(self, message: str) -> None:
        super().__init__(message, "expired")


@dataclass(frozen=True)
class Cursor:
    run_id: str
    epoch: int
    seq: int

    def __str__(self) -> str:
        return f"{self.run_id}:{self.epoch}:{self.seq}"


def parse_cursor(text: Any) -> Cursor:
    """A cursor from its text form; ``ValueError`` (a short message) for anything else."""
    match = _CURSOR.fullmatch(text) if isinstance(text, str) else None
    if match is None:
        raise ValueError("not a cursor: expected RUN_ID:EPOCH:SEQ, as in an event's id")
    return Cursor(match.group(1), int(match.group(2)), int(match.group(3)))


def read_cursor(text: str | None, run_id: str, epoch: int, *, default: int = 0) -> int:
    """The journal number after which a reader of run ``run_id`` (now in ``epoch``) resumes;
    ``default`` without a cursor. :class:`CursorError` for a cursor that is not one, or is
    another run's (``invalid``), or of another epoch (``expired``). Whether the journal
    still holds what follows is for its ``follow`` to say (:class:`CursorExpired`)."""
    if text is None or text == "":
        return default
    try:
        cursor = parse_cursor(text)
    except ValueError as exc:
        raise CursorError(str(exc)) from None
    if cursor.run_id != run_id:
        raise CursorError(f"cursor {text!r} is of another run")
    if cursor.epoch != epoch:
        raise CursorError(f"cursor {text!r} is of an earlier life of the run", "expired")
    return cursor.seq


__all__ = [
    "CURSOR_PATTERN", "RUN_ID", "RUN_ID_PATTERN", "Cursor", "CursorError", "CursorExpired", "is_run_id", "parse_cursor",
    "read_cursor",
]
