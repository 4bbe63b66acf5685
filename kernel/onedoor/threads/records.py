"""Doors' records, kept beside the threads: the optional :class:`RecordStore` part of a store.

A door that must keep objects of its own where every server sharing the store reads them,
and where a restart finds them (the A2A door's tasks and push-notification configs),
keeps them as records: JSON text under a ``kind`` (the door's namespace, ``a2a.task``)
and an id unique within that kind, per owner. Another owner's record is unknown (``None``
from :meth:`~RecordStore.record_get`, never listed), and its id is never taken over (a
put naming it changes nothing and returns False).

A listing filters on a record's ``group`` (what the record belongs to: an A2A task's
context) and ``tag`` (a short label: its state), and orders by ``rank`` (the door's
number, an A2A task's status time) then id, both descending; ``before=(rank, id)`` pages
on from the last record of the previous page. A record that names a ``thread_id`` goes
with that thread: deleting the thread deletes it too (it may hold the conversation's
text), and a put naming a thread that is not the owner's (deleted, never made) keeps
nothing. SQLite and PostgreSQL keep records; with a store that keeps none
(:func:`keeps_records` False), a door keeps its objects in memory.

``onedoor.testing.store_conformance.RECORD_CHECKS`` checks a store's records.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

MAX_LIST = 500  # the most records one listing returns
MAX_KIND = 64  # characters of a kind


@dataclass(frozen=True)
class Record:
    kind: str
    id: str
    owner: str
    body: str  # JSON text
    group: str = ""
    tag: str = ""
    rank: int = 0  # a signed 64-bit number
    thread_id: str | None = None
    updated_at: float = 0.0  # seconds since the epoch, set by the store on every put


@dataclass(frozen=True)
class RecordPage:
    records: list[Record]
    total: int  # how many records match the filters, over every page


@runtime_checkable
class RecordStore(Protocol):
    async def record_put(self, record: Record) -> bool:
        """Insert the record, or replace the one of its kind and id (``updated_at`` is the
        store's time); False, changing nothing, when that id is another owner's or the
        record names a thread that is not the owner's (deleted meanwhile)."""
        ...

    async def record_get(self, kind: str, owner: str, record_id: str) -> Record | None: ...

    async def record_list(
        self, kind: str, owner: str | None, *, group: str | None = None, tag: str | None = None,
        rank_from: int | None = None, before: tuple[int, str] | None = None, limit: int = 50,
    ) -> RecordPage:
        """The owner's records of ``kind`` (``owner=None``: every owner's, for a job of the
        server's own, never for a client's listing) matching ``group``, ``tag`` and
        ``rank >= rank_from``, newest rank first, at most ``limit`` (up to ``MAX_LIST``)
        after ``before``."""
        ...

    async def record_delete(self, kind: str, owner: str, record_id: str) -> bool: ...


def keeps_records(store: object) -> bool:
    """Whether ``store`` keeps doors' records."""
    return isinstance(store, RecordStore)


def check_record(record: Record) -> None:
    """For store authors: ValueError for a record no store keeps (an empty or long kind,
    an empty id, a rank outside 64 bits)."""
    if not record.kind or len(record.kind) > MAX_KIND:
        raise ValueError(f"a record's kind is 1-{MAX_KIND} characters")
    if not record.id:
        raise ValueError("a record needs an id")
    if not -(2**63) <= record.rank < 2**63:
        raise ValueError("a record's rank is a signed 64-bit number")


__all__ = ["MAX_LIST", "Record", "RecordPage", "RecordStore", "check_record", "keeps_records"]
