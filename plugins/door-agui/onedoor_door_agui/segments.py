"""AG-UI runs as the kernel's journal keeps them, for readers that come back.

A kernel run is one AG-UI run, or several when it parks for answers: each resume is a
new AG-UI run (the resuming input's ``runId``) continuing the same kernel run and its
journal. Each AG-UI run is a :class:`Segment` in the journal's notes (``notes["agui"]``,
as JSON): where it starts in the journal and how its translation was set up, so that
``GET /agui/runs/{runId}/events`` can translate it again with the same message ids, and
a resume can name its parent and carry its open tool calls. The journal's index finds
a segment by its runId (a resumed one's is another name of the kernel run); segments go
with the journal, so the door keeps no registry of its own. With a store that shares
journals, the kernel shares the notes and names too (``onedoor.journal.notes``): a
reader reattaching through another server finds the same segments there.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from onedoor import STOP_SUSPENDED, CursorExpired, RunFinished

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

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "Segment":
        def calls(key: str) -> dict[str, tuple[str, str]]:  # JSON made the pairs lists
            return {call_id: (str(pair[0]), str(pair[1])) for call_id, pair in (data.get(key) or {}).items()}

        known = set(cls.__dataclass_fields__) - {"carried", "left_open"}  # (another version's extra keys: left out)
        fields = {k: v for k, v in data.items() if k in known}
        return cls(**fields, carried=calls("carried"), left_open=calls("left_open"))


def note(journals: Any, journal: Any, segment: Segment) -> None:
    """Keep ``segment`` with ``journal`` (findable by its runId)."""
    journals.name(journal, segment.agui_run_id)
    journals.note(journal, NOTE, [*_kept(journal), segment.to_json()])


def leave_open(journals: Any, journal: Any, segment: Segment, calls: dict[str, tuple[str, str]]) -> None:
    """``segment`` (the journal's last) reached its interrupt with ``calls`` open: its resume carries them."""
    segment.left_open = calls
    kept = _kept(journal)
    if kept and kept[-1].get("agui_run_id") == segment.agui_run_id:
        journals.note(journal, NOTE, [*kept[:-1], segment.to_json()])


def _kept(journal: Any) -> list[dict[str, Any]]:
    kept = journal.notes.get(NOTE) if journal is not None else None
    return list(kept) if isinstance(kept, list) else []


def all_of(journal: Any) -> list[Segment]:
    return [Segment.from_json(data) for data in _kept(journal)]


def last(journal: Any) -> Segment | None:
    kept = _kept(journal)
    return Segment.from_json(kept[-1]) if kept else None


async def find(journals: Any, agui_run_id: str, principal: str) -> tuple[Any, Segment] | None:
    """The journal (this server's, or another's through a store that shares journals) and
    segment of an AG-UI run of ``principal`` (None: unknown, or gone)."""
    journal = await journals.find_named(agui_run_id, principal)
    if journal is None:
        return None
    segment = next((s for s in all_of(journal) if s.agui_run_id == agui_run_id), None)
    return (journal, segment) if segment is not None else None


async def running_on(journals: Any, principal: str, thread_id: str) -> Segment | None:
    """The AG-UI run still going on a stored thread (not one waiting for answers), on
    this server or, through a store that shares journals, on another."""
    for journal in reversed(journals.of_thread(thread_id, principal)):
        if journal.running and not journal.done:
            return last(journal)
    for journal in await journals.others_on_thread(thread_id, principal):
        if not await parked(journal):
            return last(journal)
    return None


async def parked(journal: Any) -> bool:
    """Whether a run another server writes waits for answers (its last event so far is its
    suspended ending); one whose events are no longer kept counts as parked (not followed)."""
    if journal.last_seq < 1:
        return False
    reader = journal.follow(after=journal.last_seq - 1)
    try:
        async for _, event in reader:
            return type(event) is RunFinished and event.stop_reason == STOP_SUSPENDED
    except CursorExpired:
        return True
    finally:
        await reader.aclose()
    return True


__all__ = ["NOTE", "Segment", "all_of", "find", "last", "leave_open", "note", "parked", "running_on"]
