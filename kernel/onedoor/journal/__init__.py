"""The journal: every event of a run, numbered, kept for a while, readable again.

A door that wants resumable streams hands its run to the kernel instead of iterating it
itself::

    journal = kernel.journals.start(stream, on_disconnect="cancel")
    async for seq, event in journal.follow(after=0):
        send(event, id=journal.cursor(seq))

The kernel drives the stream in a task of its own and numbers its events 1, 2, 3, …;
readers replay what they missed and then follow live events, each event exactly once,
until a terminal event (``RunFinished`` — also the ``suspended`` one of a run waiting
for answers — or ``RunFailed``). A reader that reconnects passes the cursor of the last
event it saw (SSE ``Last-Event-ID``). A resumed run (the stream ``kernel.resume``
returns) is started on the same journal and its numbers go on.

What a client's going away does is the door's choice, per run: ``"cancel"`` (the
default) cancels the run when its last reader leaves while it is
running; ``"finish"`` lets it run on into its thread, and a reader may come back.

A journal is kept ``limits.journal_retention`` seconds after its run ends, and holds at
most ``limits.max_journal_events`` events (the oldest go first); ended journals hold at
most ``limits.max_kept_journal_events`` in all (the oldest journals go first); a cursor older than
what is kept raises :class:`CursorExpired` (doors answer 409, or a thread snapshot).
Journals are per principal: another principal's run is unknown.

With a store that shares journals (:mod:`onedoor.journal.shared`; PostgreSQL), events
are written to the store before readers get them, and a reader can reattach through
any server sharing the store (``await kernel.journals.find(run_id, principal)``), and a
run parked there can be answered through any server (``await kernel.answer(...)``, which
returns a :class:`RemoteAnswer` for a run parked elsewhere: :mod:`onedoor.journal.answers`).

Cursors are ``"<run_id>:<epoch>:<seq>"`` (:mod:`onedoor.journal.cursors`); every door
reads them with :func:`read_cursor`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_names

# Each name and the module that holds it, imported on first use: a kernel that journals
# nothing (``onedoor run``) never loads the journals.
_WHERE: dict[str, str] = {
    "RemoteAnswer": "answers",
    **dict.fromkeys(("CURSOR_PATTERN", "RUN_ID", "RUN_ID_PATTERN", "Cursor", "CursorError", "CursorExpired",
                     "is_run_id", "parse_cursor", "read_cursor"), "cursors"),
    "Journals": "index",
    **dict.fromkeys(("ON_DISCONNECT", "Journaled", "OnDisconnect", "RunJournal"), "local"),
    **dict.fromkeys(("LEASE_RENEW", "LEASE_TTL", "SERVER_ID", "STOPPED", "JournalPage", "JournalWriter", "RemoteJournal",
                     "SharedJournalStore", "StoreOutage", "shared_store"), "shared"),
}

__all__ = [
    "CURSOR_PATTERN", "LEASE_RENEW", "LEASE_TTL", "ON_DISCONNECT", "RUN_ID", "RUN_ID_PATTERN", "SERVER_ID", "STOPPED",
    "Cursor", "CursorError", "CursorExpired", "JournalPage", "JournalWriter", "Journaled", "Journals", "OnDisconnect", "RemoteAnswer", "RemoteJournal",
    "RunJournal", "SharedJournalStore", "StoreOutage", "is_run_id", "parse_cursor", "read_cursor", "shared_store",
]


__getattr__, __dir__ = lazy_names(__name__, {name: f".{module}" for name, module in _WHERE.items()}, globals())


if TYPE_CHECKING:  # for type checkers and editors: the same names, eagerly
    from .answers import RemoteAnswer
    from .cursors import (
        CURSOR_PATTERN,
        RUN_ID,
        RUN_ID_PATTERN,
        Cursor,
        CursorError,
        CursorExpired,
        is_run_id,
        parse_cursor,
        read_cursor,
    )
    from .index import Journals
    from .local import ON_DISCONNECT, Journaled, OnDisconnect, RunJournal
    from .shared import (
        LEASE_RENEW,
        LEASE_TTL,
        SERVER_ID,
        STOPPED,
        JournalPage,
        JournalWriter,
        RemoteJournal,
        SharedJournalStore,
        StoreOutage,
        shared_store,
    )
