"""What a run id may be: doors check the ids clients send with :func:`is_run_id`, and
journal cursors (:mod:`onedoor.journal.cursors`) carry one."""

from __future__ import annotations

from typing import Any

from ._lazy import LazyPattern

RUN_ID_PATTERN = r"[A-Za-z0-9_.-]{1,128}"
_RUN_ID = LazyPattern(RUN_ID_PATTERN)  # compiled on first use


def is_run_id(text: Any) -> bool:
    """Whether ``text`` can be a run id."""
    return isinstance(text, str) and _RUN_ID.fullmatch(text) is not None


__all__ = ["RUN_ID_PATTERN", "is_run_id"]
