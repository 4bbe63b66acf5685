"""Threads: stored conversations, and the store interface every thread store implements.

A thread belongs to one owner (a principal id) and holds its messages (port
``Message``s, tool calls and results included), a title, per-thread settings and a
``version`` that grows by one with every change. Every store call names the owner: a
thread of another owner is indistinguishable from one that does not exist. Writers
append with ``expected_version`` (compare-and-set): two doors writing one thread at once
serialise (one gets :class:`ThreadError` ``conflict``, re-reads and retries) instead of
losing a turn. Stores are async; :mod:`onedoor.threads.sqlite` is the embedded one.

Thread ids are made by the store (``t-`` and 24 hex digits) or chosen by the client
(AG-UI's ``threadId``, A2A's ``contextId``): 1 to 128 characters of letters, digits and
``-_.:``. A chosen id that is taken (by anyone) is ``conflict``, never another owner's
thread. Stores are plugins of the ``onedoor.stores`` entry-point group
(:mod:`onedoor.threads.stores`); ``onedoor serve`` gives the kernel one (``kernel.store``).
Doors make their thread calls through ``kernel.threads`` (:class:`ThreadDesk`). A store
may keep doors' records beside the threads (:mod:`onedoor.threads.records`). A store
that reads a thread again (every turn does) can keep what it parsed of it and read only
the messages past those (:class:`onedoor.threads.parsed.ParsedMessages`; the SQLite and
PostgreSQL stores do). A thread's size limit (``max_thread_chars``) counts its text and
the bytes of its parts; the kernel refuses a message that would pass it before its run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_names

# Each name and the module that holds it, imported on first use (a kernel that keeps no
# thread never loads the door-side desk).
_WHERE: dict[str, str] = {
    **dict.fromkeys(("MAX_PAGE", "NO_THREADS", "ThreadDesk", "ThreadPage"), "desk"),
    **dict.fromkeys(("THREAD_ID_PATTERN", "StateStore", "StoreUnavailable", "Thread", "ThreadError", "ThreadStore",
                     "ThreadSummary", "check_append", "check_state_update", "check_thread_id", "keeps_state",
                     "new_thread_id"), "model"),
    **dict.fromkeys(("Record", "RecordPage", "RecordStore", "keeps_records"), "records"),
    **dict.fromkeys(("TurnRecorder", "append_turn", "title_from", "turn_messages"), "turns"),
}

__all__ = [
    "MAX_PAGE", "NO_THREADS", "THREAD_ID_PATTERN", "Record", "RecordPage", "RecordStore", "StateStore", "StoreUnavailable", "Thread", "ThreadDesk", "ThreadError", "ThreadPage", "ThreadStore",
    "ThreadSummary", "TurnRecorder", "append_turn",
    "check_append", "check_state_update", "check_thread_id", "keeps_records", "keeps_state", "new_thread_id", "title_from", "turn_messages",
]


__getattr__, __dir__ = lazy_names(__name__, {name: f".{module}" for name, module in _WHERE.items()}, globals())


if TYPE_CHECKING:  # for type checkers and editors: the same names, eagerly
    from .desk import MAX_PAGE, NO_THREADS, ThreadDesk, ThreadPage
    from .model import (
        THREAD_ID_PATTERN,
        StateStore,
        StoreUnavailable,
        Thread,
        ThreadError,
        ThreadStore,
        ThreadSummary,
        check_append,
        check_state_update,
        check_thread_id,
        keeps_state,
        new_thread_id,
    )
    from .records import Record, RecordPage, RecordStore, keeps_records
    from .turns import TurnRecorder, append_turn, title_from, turn_messages
