"""The thread store conformance suite: what every ``onedoor.stores`` plugin must do, as
plain async checks that any store author runs against their store.

A check takes a *store factory*: ``make_store(max_thread_chars=N)`` returning a new,
unopened :class:`~onedoor.threads.ThreadStore` (or an awaitable of one). Checks close what
they open, and use owners and thread ids of their own (random), so every check may share
one database with the others. The :data:`SHARED_CHECKS` also need every store the factory
makes to see the same threads (a file, a database server): several servers sharing it::

    import pytest
    from onedoor.testing.store_conformance import CHECKS, SHARED_CHECKS

    @pytest.mark.parametrize("check", CHECKS + SHARED_CHECKS, ids=lambda check: check.__name__)
    async def test_my_store_conforms(check, tmp_path):
        await check(lambda max_thread_chars: MyStore(tmp_path / "db", max_thread_chars=max_thread_chars))

Each check fails with an ``AssertionError`` that says what the store did wrong.
"""

from __future__ import annotations

import asyncio
import inspect
import os

from ..messages import Message, ToolCall
from ..threads import Thread, append_turn, title_from
from ._stores import ROOMY, TIGHT, Check, StoreFactory
from ._stores import name as _name
from ._stores import opened as _opened
from ._stores import refused as _refused
from .journal_checks import JOURNAL_CHECKS  # for a store that shares journals and takes answers for them
from .store_extra_checks import (
    check_parts_and_usage_round_trip,
    check_state_compare_and_set,
    check_state_writers_race,
    check_turn_leases,
)
from .store_record_checks import RECORD_CHECKS

# A turn as the kernel records it: a tool call with its result, odd text included
# (NUL, emoji, newlines, markup-looking and JSON-looking text), empty content.
TURN = (
    Message("user", "count the words of: my \x00secret plan 😀\nline two"),
    Message("assistant", "", (ToolCall("c1", "word_count", {"text": "my plan", "deep": [1, {"x": None}]}),)),
    Message("tool", '{"words": 3, "quote": "\\"", "tag": "</script>"}', tool_call_id="c1"),
    Message("assistant", "Three words — « ok »."),
)


# -- checks on one store ------------------------------------------------------------------
async def check_create_and_get(make_store: StoreFactory) -> None:
    """A new thread: a store-made id, the owner, title and settings, no messages, version 0;
    ``get`` reads back exactly what ``create`` returned."""
    owner = _name("alice")
    settings = {"backend": "scripted", "options": {"delay": 0.5, "tags": ["a", "ü"], "none": None}}
    async with _opened(make_store) as store:
        thread = await store.create(owner, title="plans", settings=settings)
        assert isinstance(thread, Thread) and thread.id.startswith("t-"), f"store-made id: {thread.id!r}"
        assert (thread.owner, thread.title, thread.settings) == (owner, "plans", settings)
        assert thread.messages == () and thread.version == 0
        assert thread.created_at > 0 and thread.updated_at == thread.created_at, "a new thread: created = updated"
        assert await store.get(owner, thread.id) == thread, "get reads back what create returned"
        other = await store.create(owner)
        assert other.id != thread.id and other.title == "" and other.settings == {}


async def check_messages_round_trip(make_store: StoreFactory) -> None:
    """Appended messages come back equal and in order (tool calls and results included);
    each append raises the version by one and moves ``updated_at`` on."""
    owner = _name("alice")
    async with _opened(make_store) as store:
        thread = await store.create(owner)
        first = await store.append(owner, thread.id, TURN, expected_version=0)
        assert first.messages == TURN and first.version == 1, f"after one append: {first}"
        later = (Message("user", "and then?"), Message("assistant", "then this."))
        second = await store.append(owner, thread.id, later, expected_version=1)
        assert second.messages == TURN + later and second.version == 2
        assert second.created_at == thread.created_at
        assert thread.updated_at <= first.updated_at <= second.updated_at, "updated_at moves on"
        assert await store.get(owner, thread.id) == second, "get reads back what append returned"
        empty = await store.append(owner, thread.id, (), expected_version=2)
        assert empty.version == 3 and empty.messages == second.messages, "an empty append still counts as a change"


async def check_title(make_store: StoreFactory) -> None:
    """An untitled thread is titled by its first user message; a given title stays; odd
    text in a title (NUL, newline, emoji) is kept exactly."""
    owner = _name("alice")
    async with _opened(make_store) as store:
        untitled = await store.create(owner)
        after = await store.append(owner, untitled.id, TURN, expected_version=0)
        assert after.title == title_from(TURN), f"title from the first user message: {after.title!r}"
        odd = "plans\x00 for\nmonday 😀"
        titled = await store.create(owner, title=odd)
        kept = await store.append(owner, titled.id, TURN, expected_version=0)
        assert kept.title == odd, f"a given title stays: {kept.title!r}"
        listed = {summary.id: summary.title for summary in await store.list(owner)}
        assert listed == {untitled.id: after.title, titled.id: odd}


async def check_chosen_thread_ids(make_store: StoreFactory) -> None:
    """A client-chosen id is kept; a taken one (by anyone) is ``conflict`` and reveals
    nothing of its owner's thread; an unusable one is ``invalid``."""
    alice, bob = _name("alice"), _name("bob")
    chosen = f"ag-ui:{os.urandom(4).hex()}_run.1-x"
    longest = ("L" + os.urandom(8).hex()).ljust(128, "z")
    async with _opened(make_store) as store:
        thread = await store.create(alice, thread_id=chosen, title="mine")
        assert thread.id == chosen and (await store.get(alice, chosen)) == thread
        assert (await store.create(alice, thread_id=longest)).id == longest, "128 characters is allowed"
        await _refused("conflict", store.create(alice, thread_id=chosen), "the same owner chose a taken id")
        await _refused("conflict", store.create(bob, thread_id=chosen), "another owner chose a taken id")
        assert await store.get(bob, chosen) is None, "a conflict gives the other owner no access"
        for bad in ("", "a b", "x" * 129, "é", "a/b", "new\nline", 42):
            await _refused("invalid", store.create(alice, thread_id=bad), f"thread id {bad!r}")
        assert [s.id for s in await store.list(alice)].count(chosen) == 1


async def check_another_owners_thread_looks_unknown(make_store: StoreFactory) -> None:
    """Every call names the owner: another owner cannot read, list, continue or delete a
    thread, and is told nothing more than for a thread that does not exist."""
    alice, bob = _name("alice"), _name("bob")
    async with _opened(make_store) as store:
        thread = await store.create(alice)
        thread = await store.append(alice, thread.id, TURN, expected_version=0)
        assert await store.get(bob, thread.id) is None, "another owner's get must be None"
        assert await store.list(bob) == [], "another owner's list must not show the thread"
        assert await store.list(bob, before=thread.id) == []
        await _refused("not_found", store.append(bob, thread.id, TURN, expected_version=1), "another owner appends")
        assert await store.delete(bob, thread.id) is False, "another owner's delete deletes nothing"
        assert await store.get(alice, thread.id) == thread, "the owner's thread is untouched"


async def check_unknown_thread(make_store: StoreFactory) -> None:
    """A thread that never existed: ``get`` is None, ``append`` is ``not_found``, ``delete`` False."""
    owner = _name("alice")
    async with _opened(make_store) as store:
        for thread_id in ("t-000000000000000000000000", "no such/thing"):
            assert await store.get(owner, thread_id) is None
            await _refused("not_found", store.append(owner, thread_id, TURN, expected_version=0), f"append to {thread_id}")
            assert await store.delete(owner, thread_id) is False


async def check_stale_version_is_a_conflict(make_store: StoreFactory) -> None:
    """``append`` is compare-and-set on the version: a stale (or future) one is
    ``conflict`` and changes nothing."""
    owner = _name("alice")
    async with _opened(make_store) as store:
        thread = await store.create(owner)
        current = await store.append(owner, thread.id, TURN, expected_version=0)
        for stale in (0, 2, 99):
            await _refused("conflict", store.append(owner, thread.id, TURN, expected_version=stale), f"version {stale}")
        assert await store.get(owner, thread.id) == current, "a refused append changes nothing"


async def check_concurrent_writers_lose_no_turn(make_store: StoreFactory) -> None:
    """Eight writers append a turn each at once (re-reading on conflict, as the kernel
    does): every turn is kept whole, none twice, and the version counts them."""
    owner = _name("alice")
    writers = 8
    async with _opened(make_store) as store:
        thread = await store.create(owner)

        async def write(n: int) -> None:
            turn = (Message("user", f"question {n}"), Message("assistant", f"answer {n}"))
            await append_turn(store, thread, turn, attempts=writers * 4)

        await asyncio.gather(*(write(n) for n in range(writers)))
        final = await store.get(owner, thread.id)
        assert final is not None and final.version == writers, f"version {final and final.version}, expected {writers}"
        contents = [m.content for m in final.messages]
        pairs = list(zip(contents[::2], contents[1::2], strict=True))
        assert sorted(pairs) == sorted((f"question {n}", f"answer {n}") for n in range(writers)), pairs


async def check_size_limit(make_store: StoreFactory) -> None:
    """A thread holds at most ``max_thread_chars`` characters of content: an append past
    it is ``too_large`` and changes nothing; reaching the limit exactly is allowed."""
    owner = _name("alice")
    async with _opened(make_store, max_thread_chars=TIGHT) as store:
        thread = await store.create(owner)
        kept = await store.append(owner, thread.id, [Message("user", "u" * 600)], expected_version=0)
        await _refused(
            "too_large", store.append(owner, thread.id, [Message("assistant", "a" * 401)], expected_version=1), "over"
        )
        assert await store.get(owner, thread.id) == kept, "a refused append changes nothing"
        full = await store.append(owner, thread.id, [Message("assistant", "a" * 400)], expected_version=1)
        assert full.version == 2 and sum(len(m.content) for m in full.messages) == TIGHT


async def check_delete_really_deletes(make_store: StoreFactory) -> None:
    """A deleted thread is gone from every call, and its id, chosen again, starts empty:
    none of its messages come back."""
    owner = _name("alice")
    chosen = _name("doomed")
    async with _opened(make_store) as store:
        thread = await store.create(owner, thread_id=chosen, title="secret")
        await store.append(owner, thread.id, TURN, expected_version=0)
        assert await store.delete(owner, chosen) is True
        assert await store.get(owner, chosen) is None
        assert chosen not in [s.id for s in await store.list(owner)]
        await _refused("not_found", store.append(owner, chosen, TURN, expected_version=1), "append to a deleted thread")
        assert await store.delete(owner, chosen) is False, "deleting twice deletes nothing more"
        again = await store.create(owner, thread_id=chosen)
        assert again.messages == () and again.version == 0 and again.title == ""
        assert await store.get(owner, chosen) == again, "no message of the deleted thread came back"


async def check_listing_order_and_pages(make_store: StoreFactory) -> None:
    """``list`` is newest change first (ties by id, descending), without messages but with
    their count; ``before`` pages on after a thread; a change moves a thread to the front."""
    owner = _name("alice")
    async with _opened(make_store) as store:
        made = [await store.create(owner, title=f"thread {n}") for n in range(5)]
        oldest = min(made, key=lambda t: (t.updated_at, t.id))
        moved = await store.append(owner, oldest.id, TURN, expected_version=0)
        listed = await store.list(owner)
        assert [s.id for s in listed][0] == moved.id, "the thread changed last is listed first"
        keys = [(s.updated_at, s.id) for s in listed]
        assert keys == sorted(keys, reverse=True), f"newest first, ties by id: {keys}"
        assert sorted(s.id for s in listed) == sorted(t.id for t in made)
        top = listed[0]
        assert (top.title, top.message_count, top.created_at, top.updated_at) == (
            moved.title, len(TURN), moved.created_at, moved.updated_at
        )
        pages: list[str] = []
        before: str | None = None
        for _ in range(len(made) + 1):  # bounded: at most one page per thread and an empty one
            page = await store.list(owner, limit=2, before=before)
            assert len(page) <= 2, f"limit 2 gave {len(page)}"
            if not page:
                break
            pages += [s.id for s in page]
            before = page[-1].id
        assert pages == [s.id for s in listed], "paging with before gives every thread once, in order"
        assert await store.list(owner, before="t-000000000000000000000000") == [], "an unknown mark lists nothing"


async def check_close_twice(make_store: StoreFactory) -> None:
    """``close`` may be called again, and on a store that was never used."""
    unused = make_store(max_thread_chars=ROOMY)
    if inspect.isawaitable(unused):
        unused = await unused
    await unused.close()
    await unused.close()
    async with _opened(make_store) as store:
        await store.create(_name("alice"))
        await store.close()


# -- checks on two stores sharing their data ----------------------------------------------
async def check_two_stores_share_threads(make_store: StoreFactory) -> None:
    """Two stores on the same data (two servers): a thread made through one is read,
    continued, listed and deleted through the other, and compare-and-set holds across them."""
    owner = _name("alice")
    async with _opened(make_store) as one, _opened(make_store) as two:
        thread = await one.create(owner, title="shared")
        first = await one.append(owner, thread.id, TURN, expected_version=0)
        assert await two.get(owner, thread.id) == first
        later = (Message("user", "from the other"), Message("assistant", "seen"))
        second = await two.append(owner, thread.id, later, expected_version=1)
        await _refused("conflict", one.append(owner, thread.id, later, expected_version=1), "a stale write via the other")
        assert await one.get(owner, thread.id) == second
        assert [s.id for s in await one.list(owner)] == [thread.id]
        assert await two.delete(owner, thread.id) is True
        assert await one.get(owner, thread.id) is None
        # the same id made again, through the other store: another thread, read as such (a
        # store that keeps what it read of a thread must tell the two apart)
        await asyncio.sleep(0.01)
        again = await two.create(owner, thread_id=thread.id)
        other = tuple(Message("user", f"a new thread under an old id, message {n}") for n in range(8))  # more than before
        made = await two.append(owner, again.id, other, expected_version=0)
        assert await one.get(owner, thread.id) == made and made.messages == other
        assert (await one.append(owner, thread.id, later, expected_version=1)).messages == other + later


async def check_concurrent_writers_on_two_stores(make_store: StoreFactory) -> None:
    """Writers on two stores append to one thread at once: every turn is kept, once."""
    owner = _name("alice")
    writers = 6
    async with _opened(make_store) as one, _opened(make_store) as two:
        thread = await one.create(owner)

        async def write(n: int) -> None:
            turn = (Message("user", f"question {n}"), Message("assistant", f"answer {n}"))
            await append_turn(one if n % 2 else two, thread, turn, attempts=writers * 4)

        await asyncio.gather(*(write(n) for n in range(writers)))
        final = await two.get(owner, thread.id)
        assert final is not None and final.version == writers
        contents = [m.content for m in final.messages]
        pairs = sorted(zip(contents[::2], contents[1::2], strict=True))
        assert pairs == sorted((f"question {n}", f"answer {n}") for n in range(writers)), pairs


CHECKS: list[Check] = [
    check_create_and_get,
    check_messages_round_trip,
    check_title,
    check_chosen_thread_ids,
    check_another_owners_thread_looks_unknown,
    check_unknown_thread,
    check_stale_version_is_a_conflict,
    check_concurrent_writers_lose_no_turn,
    check_size_limit,
    check_delete_really_deletes,
    check_listing_order_and_pages,
    check_close_twice,
    check_parts_and_usage_round_trip,
]
SHARED_CHECKS: list[Check] = [check_two_stores_share_threads, check_concurrent_writers_on_two_stores]
LEASE_CHECKS: list[Check] = [check_turn_leases]  # for a store with the optional turn-lease calls
STATE_CHECKS: list[Check] = [check_state_compare_and_set, check_state_writers_race]  # for a StateStore
# RECORD_CHECKS (store_record_checks): for a store that keeps doors' records (onedoor.threads.records)


async def run_all(make_store: StoreFactory, *, shared: bool = False, leases: bool = False, state: bool = False,
                  records: bool = False) -> None:
    """Every check in turn (the shared ones too with ``shared``, the lease ones with
    ``leases``, the state ones with ``state``, the record ones with ``records``); the first
    failure raises."""
    for check in (CHECKS + (SHARED_CHECKS if shared else []) + (LEASE_CHECKS if leases else [])
                  + (STATE_CHECKS if state else []) + (RECORD_CHECKS if records else [])):
        await check(make_store)


__all__ = ["CHECKS", "JOURNAL_CHECKS", "LEASE_CHECKS", "RECORD_CHECKS", "SHARED_CHECKS", "STATE_CHECKS", "StoreFactory",
           "run_all", "TURN"] + [
    c.__name__ for c in CHECKS + SHARED_CHECKS + LEASE_CHECKS + STATE_CHECKS + RECORD_CHECKS
]  # (the journal checks' names: onedoor.testing.journal_checks)
