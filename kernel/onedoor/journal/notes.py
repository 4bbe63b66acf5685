"""Doors' notes and names of a run, shared through a store that shares journals.

A door keeps what a reader of its run needs in ``journal.notes`` (one key per door) and
may give the run other names (``kernel.journals.name``; AG-UI: the runId of a response
that resumed it). With a store that shares journals and has the methods below, the
driving server writes the notes (as JSON) and the names to the store whenever they
changed, always before the events that follow the change, so a reader on another server
(``await kernel.journals.find_named(name, principal)``) gets a :class:`RemoteJournal`
with the notes as they were when its events were written:

- ``journal_note(run_id, notes, names)``: keep ``notes`` (JSON text) and the names
  (added to those kept) of a run whose row the server holds;
- ``journal_notes(run_id, principal) -> str | None``: the notes kept (None: none);
- ``journal_named(name, principal) -> str | None``: the run id with that name;
- ``journal_running(thread_id, principal, ended=False) -> list[str]``: the runs of a thread
  not ended whose lease holds (also one waiting for answers), at most four, those not ended
  first, then the last to end;
  ``ended``: the runs the store keeps of the thread, ended ones too.

Notes that are not JSON are kept on the driving server only (logged once per run).
A store without these methods shares events only.
"""

from __future__ import annotations

import json
import logging
from typing import Any

log = logging.getLogger("onedoor.journal")


def shares_notes(store: Any) -> bool:
    return all(hasattr(store, name) for name in ("journal_note", "journal_notes", "journal_named", "journal_running"))


def notes_text(journal: Any) -> str | None:
    """The journal's notes as JSON (None: some door keeps what JSON cannot say)."""
    try:
        return json.dumps(journal.notes, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as exc:
        log.warning("run %s: its doors' notes are not shared (not JSON: %s)", journal.run_id, exc)
        return None


async def share_notes(writer: Any) -> bool:
    """The driving server's side (a ``JournalWriter``): write the journal's notes and names
    as they are now; False when the writer gave up (the kernel no longer keeps the journal)."""
    journal, store, version = writer.journal, writer.store, writer.journal.notes_version
    text = notes_text(journal) if shares_notes(store) else None
    if text is not None:
        names = list(journal.names)

        async def write() -> bool:
            await store.journal_note(journal.run_id, text, names)
            return True

        if await writer._until_stored(write) is not True:
            return False
    writer.noted = version
    return True


async def read_notes(store: Any, run_id: str, principal: str) -> dict[str, Any]:
    """The notes the store keeps of a run ({} when none, or the store keeps no notes)."""
    if not shares_notes(store):
        return {}
    text = await store.journal_notes(run_id, principal)
    notes = json.loads(text) if text else {}
    return notes if isinstance(notes, dict) else {}


async def run_named(store: Any, name: str, principal: str) -> str | None:
    """The run id the store knows by ``name`` for ``principal`` (None: no such name)."""
    if not shares_notes(store) or not isinstance(name, str):
        return None
    run_id: str | None = await store.journal_named(name, principal)
    return run_id


async def runs_on(store: Any, thread_id: str, principal: str, ended: bool = False) -> list[str]:
    """The run ids of a thread the store says are going on (``ended``: or kept; see the module docstring)."""
    if not shares_notes(store) or not isinstance(thread_id, str):
        return []
    return list(await store.journal_running(thread_id, principal, ended=ended))
