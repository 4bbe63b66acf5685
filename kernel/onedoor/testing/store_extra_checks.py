"""Store conformance checks for the optional parts of a store: turn leases
(:mod:`onedoor.threads.leases`), shared state (:class:`~onedoor.threads.StateStore`), and
the content and usage every store keeps with its messages. Listed in
:mod:`onedoor.testing.store_conformance` (``CHECKS``, ``LEASE_CHECKS``, ``STATE_CHECKS``)."""

from __future__ import annotations

import asyncio

from ..messages import Message
from ..threads import ThreadError
from ._stores import TIGHT, StoreFactory
from ._stores import name as _name
from ._stores import opened as _opened


# -- turn leases (onedoor.threads.leases), for stores that keep them -----------------------
async def check_turn_leases(make_store: StoreFactory) -> None:
    """A lease makes a thread's turn live for everyone but its own run; closing it, letting
    it run out, or a holder process that is gone (this host) ends it; leases are per owner."""
    import time

    from ..threads.leases import holder

    owner = _name("alice")
    async with _opened(make_store) as store:
        thread = await store.create(owner)
        now = time.time()
        assert await store.turn_live(owner, thread.id) is False, "no turn is open"
        await store.turn_open(owner, thread.id, "run-1", holder(), now + 10)
        assert await store.turn_live(owner, thread.id) is True
        assert await store.turn_live(owner, thread.id, besides="run-1") is False, "besides: its own run"
        assert await store.turn_live(_name("bob"), thread.id) is False, "another owner's thread"
        await store.turn_renew(holder(), now + 20)
        await store.turn_close("run-1")
        assert await store.turn_live(owner, thread.id) is False, "closed"
        await store.turn_open(owner, thread.id, "run-2", holder(), now - 1)
        assert await store.turn_live(owner, thread.id) is False, "its lease ran out"
        await store.turn_open(owner, thread.id, "run-3", "another-host.example:1:x", now + 10)
        await store.turn_open(owner, thread.id, "run-4", f"{holder().split(':')[0]}:999999999:gone", now + 10)
        assert await store.turn_live(owner, thread.id, besides="run-3") is False, "a holder process that is gone"
        assert await store.turn_live(owner, thread.id) is True, "another host's live lease counts"


# -- content and usage kept with the messages ------------------------------------------------
async def check_parts_and_usage_round_trip(make_store: StoreFactory) -> None:
    """A message's parts (an image's bytes, a resource with its lines, JSON data) and a
    turn's usage come back exactly; the size limit counts the bytes of the parts."""
    from ..content import Part
    from ..usage import ModelUsage

    owner = _name("alice")
    image = Part.media("image", "image/png", data=b"\x89PNG\r\n\x1a\n" + bytes(range(256)), name="shot.png")
    resource = Part.resource("file:///work/a.py", text="print('hi')\n", lines=(5, 10))
    data = Part.of_data({"k": [1, None, "\u00e9"]})
    sent = (
        Message("user", "look", parts=(Part.of_text("look"), image, resource, data)),
        Message("assistant", "a cat", usage=(ModelUsage("m-1", "fake", 10, 7, requests=1),)),
    )
    async with _opened(make_store) as store:
        thread = await store.create(owner)
        await store.append(owner, thread.id, sent, expected_version=0)
        got = await store.get(owner, thread.id)
        assert got is not None and got.messages == sent, f"parts or usage changed on the way: {got and got.messages}"
    async with _opened(make_store, max_thread_chars=TIGHT) as store:
        thread = await store.create(owner)
        big = Message("user", "x", parts=(Part.of_text("x"), Part.media("image", "image/png", data=b"\x89PNG\r\n\x1a\n" + bytes(TIGHT))))
        try:
            await store.append(owner, thread.id, [big], expected_version=0)
        except ThreadError as exc:
            assert exc.reason == "too_large", exc.reason
        else:
            raise AssertionError("an image larger than the thread's limit was kept")


# -- shared state (onedoor.state), for stores that keep it -------------------------------------
async def check_state_compare_and_set(make_store: StoreFactory) -> None:
    """A new thread's state is {} at version 0; an update at the current version replaces it
    and adds one; a stale version is ``conflict`` and changes nothing; another owner's
    thread is ``not_found``; the state survives reopening the store and goes with the thread."""
    owner = _name("alice")
    state = {"todo": ["milk", "\x00nul", "😀"], "n": 1.5, "deep": {"a": [None, True]}}
    async with _opened(make_store) as store:
        thread = await store.create(owner)
        assert (thread.state, thread.state_version) == ({}, 0), (thread.state, thread.state_version)
        kept = await store.update_state(owner, thread.id, state, expected_version=0)
        assert (kept.state, kept.state_version) == (state, 1), (kept.state, kept.state_version)
        for version, who in ((0, owner), (1, _name("bob"))):
            try:
                await store.update_state(who, thread.id, {"lost": True}, expected_version=version)
            except ThreadError as exc:
                assert exc.reason == ("conflict" if who == owner else "not_found"), exc.reason
            else:
                raise AssertionError(f"update_state at version {version} by {who} was taken")
        await store.append(owner, thread.id, [Message("user", "hi")], expected_version=0)
    async with _opened(make_store) as store:
        again = await store.get(owner, thread.id)
        assert again is not None and (again.state, again.state_version) == (state, 1), again
        assert await store.delete(owner, thread.id)
        try:
            await store.update_state(owner, thread.id, {}, expected_version=1)
        except ThreadError as exc:
            assert exc.reason == "not_found", exc.reason
        else:
            raise AssertionError("the state of a deleted thread was updated")


async def check_state_writers_race(make_store: StoreFactory) -> None:
    """Many writers at the state's version at once: exactly one wins, the others are told."""
    owner = _name("alice")
    async with _opened(make_store) as one, _opened(make_store) as two:
        thread = await one.create(owner)

        async def write(n: int) -> bool:
            try:
                await (one if n % 2 else two).update_state(owner, thread.id, {"by": n}, expected_version=0)
                return True
            except ThreadError as exc:
                assert exc.reason == "conflict", exc.reason
                return False

        won = await asyncio.gather(*(write(n) for n in range(8)))
        assert sum(won) == 1, f"{sum(won)} writers won"
        final = await one.get(owner, thread.id)
        assert final is not None and final.state == {"by": won.index(True)} and final.state_version == 1


__all__ = ["check_parts_and_usage_round_trip", "check_state_compare_and_set", "check_state_writers_race",
           "check_turn_leases"]
