"""AG-UI runs as the kernel's journal keeps them, for readers that come back.

A kernel run is one AG-UI run, or several when it parks for answers: each resume is a
new AG-UI run (the resuming input's ``runId``) continuing the same kernel run and its
journal. Each AG-UI run is a :class:`Segment` in the journal's notes (``notes["agui"]``):
where it starts in the journal and how its translation was set up, so that
``GET /agui/runs/{runId}/events`` can translate it again with the same message ids, and
a resume can name its parent and carry its open tool calls. The journal's index finds
a segment by its runId (a resumed one's is another name of the kernel run); segments go
with the journal, so the door keeps no registry of its own.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

NOTE = "agui"  # the journal's notes key of this door


@dataclass
class Segment:
    """One AG-UI run of a kernel run (see the module docstring)."""

    agui_run_id: str
    thread_id: str  # the AG-UI threadId
    after: int  # the journal's last number before this AG-UI run
    id_prefix: str  # message ids of its translation
    parent_run_id: str | None = None
    carried: dict[str, tuple[str, str]] = field(default_factory=dict)  # open calls it took over from its parent
    snapshot_base: list[dict[str, Any]] = field(default_factory=list)
    snapshot_ids: str | None = None
    left_open: dict[str, tuple[str, str]] = field(default_factory=dict)  # at its interrupt: calls its resume carries
    join: bool = False  # its translation starts with a MESSAGES_SNAPSHOT (a client that joined the thread)


def note(journals: Any, journal: Any, segment: Segment) -> None:
    """Keep ``segment`` with ``journal`` (findable by its runId)."""
    journal.notes.setdefault(NOTE, []).append(segment)
    journals.name(journal, segment.agui_run_id)


def last(journal: Any) -> Segment | None:
    segments = journal.notes.get(NOTE) if journal is not None else None
    return segments[-1] if segments else None


def find(journals: Any, agui_run_id: str, principal: str) -> tuple[Any, Segment] | None:
    """The journal and segment of an AG-UI run of ``principal`` (None: unknown, or gone)."""
    journal = journals.named(agui_run_id, principal)
    if journal is None:
        return None
    segment = next((s for s in journal.notes.get(NOTE, ()) if s.agui_run_id == agui_run_id), None)
    return (journal, segment) if segment is not None else None


def running_on(journals: Any, principal: str, thread_id: str) -> Segment | None:
    """The AG-UI run still going on a stored thread (not one waiting for answers)."""
    for journal in reversed(journals.of_thread(thread_id, principal)):
        if journal.running and not journal.done:
            return last(journal)
    return None


__all__ = ["NOTE", "Segment", "find", "last", "note", "running_on"]
