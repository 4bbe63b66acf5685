"""Store conformance checks for doors' records (:mod:`onedoor.threads.records`), for a store
that keeps them. Listed in :mod:`onedoor.testing.store_conformance` (``RECORD_CHECKS``)."""

from __future__ import annotations

from ..threads import RecordStore
from ..threads.records import Record
from ._stores import StoreFactory
from ._stores import name as _name
from ._stores import opened as _opened


def _record(kind: str, owner: str, record_id: str, **fields: object) -> Record:
    return Record(kind, record_id, owner, fields.pop("body", '{"n": 1}'), **fields)  # type: ignore[arg-type]


async def check_records_per_owner(make_store: StoreFactory) -> None:
    """A record comes back as put (its body exact, odd text included) and is replaced by a
    put of the same kind and id; another owner's record is unknown, never listed, and a
    put naming its id changes nothing; kinds are apart; a delete deletes."""
    kind, other_kind = _name("kind"), _name("kind")
    alice, bob = _name("alice"), _name("bob")
    body = '{"text": "\\u0000 nul, emoji \U0001F600, \\"quotes\\"", "n": 12345678901234567}'
    async with _opened(make_store) as store:
        assert isinstance(store, RecordStore), f"{type(store).__name__} has not every record method"
        assert await store.record_put(_record(kind, alice, "r1", body=body, group="g", tag="t", rank=5)) is True
        got = await store.record_get(kind, alice, "r1")
        assert got is not None and (got.body, got.group, got.tag, got.rank, got.owner) == (body, "g", "t", 5, alice), got
        assert got.updated_at > 0, "the store sets updated_at"
        assert await store.record_put(_record(kind, alice, "r1", body='{"n": 2}', group="h", rank=6)) is True
        again = await store.record_get(kind, alice, "r1")
        assert again is not None and (again.body, again.group, again.rank) == ('{"n": 2}', "h", 6), "a put replaces"
        assert await store.record_get(kind, bob, "r1") is None, "another owner's record must look unknown"
        assert await store.record_put(_record(kind, bob, "r1", body='{"stolen": true}')) is False, \
            "a put naming another owner's id must be refused"
        kept = await store.record_get(kind, alice, "r1")
        assert kept is not None and kept.body == '{"n": 2}', "another owner's put changed the record"
        assert (await store.record_list(kind, bob)).records == [], "another owner's records must not be listed"
        assert await store.record_get(other_kind, alice, "r1") is None, "kinds are apart"
        assert await store.record_put(_record(other_kind, alice, "r1")) is True, "the same id in another kind is free"
        assert await store.record_delete(kind, bob, "r1") is False, "another owner cannot delete it"
        assert await store.record_delete(kind, alice, "r1") is True
        assert await store.record_get(kind, alice, "r1") is None
        assert await store.record_delete(kind, alice, "r1") is False


async def check_record_listing(make_store: StoreFactory) -> None:
    """Listings: newest rank first then id (both descending), filtered by group, tag and
    ``rank_from``, paged with ``before``; ``total`` counts every match; ``owner=None``
    lists every owner's."""
    kind = _name("kind")
    alice, bob = _name("alice"), _name("bob")
    async with _opened(make_store) as store:
        for n in range(7):
            await store.record_put(_record(kind, alice, f"a{n}", group="even" if n % 2 == 0 else "odd",
                                           tag="done" if n < 3 else "live", rank=10 * (n // 2)))
        await store.record_put(_record(kind, bob, "b0", group="even", rank=1000))
        everything = await store.record_list(kind, alice, limit=50)
        assert [r.id for r in everything.records] == ["a6", "a5", "a4", "a3", "a2", "a1", "a0"], everything
        assert everything.total == 7
        first = await store.record_list(kind, alice, limit=3)
        assert [r.id for r in first.records] == ["a6", "a5", "a4"] and first.total == 7
        last = first.records[-1]
        second = await store.record_list(kind, alice, limit=3, before=(last.rank, last.id))
        assert [r.id for r in second.records] == ["a3", "a2", "a1"] and second.total == 7, second
        even = await store.record_list(kind, alice, group="even")
        assert [r.id for r in even.records] == ["a6", "a4", "a2", "a0"] and even.total == 4
        live = await store.record_list(kind, alice, tag="live", rank_from=20)
        assert [r.id for r in live.records] == ["a6", "a5", "a4"] and live.total == 3, live
        anyone = await store.record_list(kind, None, group="even")
        assert [r.id for r in anyone.records] == ["b0", "a6", "a4", "a2", "a0"], "owner=None lists every owner's"


async def check_records_go_with_their_thread(make_store: StoreFactory) -> None:
    """Deleting a thread deletes the owner's records that name it, and no others; a put
    naming a thread that is gone, never was, or is another owner's keeps nothing."""
    kind = _name("kind")
    owner = _name("alice")
    async with _opened(make_store) as store:
        thread = await store.create(owner)
        other = await store.create(owner)
        await store.record_put(_record(kind, owner, "of-thread", thread_id=thread.id))
        await store.record_put(_record(kind, owner, "of-other", thread_id=other.id))
        await store.record_put(_record(kind, owner, "of-none"))
        assert await store.delete(owner, thread.id) is True
        assert await store.record_get(kind, owner, "of-thread") is None, "a deleted thread's records must go with it"
        assert await store.record_get(kind, owner, "of-other") is not None
        assert await store.record_get(kind, owner, "of-none") is not None
        for thread_id, who in ((thread.id, owner), ("t-never-made", owner), (other.id, _name("bob"))):
            assert await store.record_put(_record(kind, who, f"late-{thread_id}", thread_id=thread_id)) is False, \
                f"a put naming a thread that is not the owner's must keep nothing ({thread_id})"
            assert await store.record_get(kind, who, f"late-{thread_id}") is None


async def check_records_are_shared(make_store: StoreFactory) -> None:
    """Two stores on one database (two servers) see each other's records."""
    kind = _name("kind")
    owner = _name("alice")
    async with _opened(make_store) as one, _opened(make_store) as two:
        await one.record_put(_record(kind, owner, "shared", body='{"from": "one"}'))
        got = await two.record_get(kind, owner, "shared")
        assert got is not None and got.body == '{"from": "one"}', "a record put through one store must be read through another"


RECORD_CHECKS = [check_records_per_owner, check_record_listing, check_records_go_with_their_thread,
                 check_records_are_shared]

__all__ = ["RECORD_CHECKS"] + [c.__name__ for c in RECORD_CHECKS]
