"""Conformance checks for a store that shares journals and takes answers for runs parked on
another server (:mod:`onedoor.journal.answers`: ``journal_answer``, ``journal_parked``).
Every store the factory makes must see the same journals (two servers on one store);
:data:`JOURNAL_CHECKS` is exported with the others by :mod:`onedoor.testing.store_conformance`."""

from __future__ import annotations

import asyncio
import time

from ._stores import Check, StoreFactory
from ._stores import name as _name
from ._stores import opened as _opened


async def _parked_run(store: object, run_id: str, principal: str, events: int) -> None:
    """A run's row and ``events`` events, as the server writing it leaves them."""
    assert await store.journal_open(run_id, principal, "server-a", None, time.time() + 60)  # type: ignore[attr-defined]
    await store.journal_write(run_id, 1, [f'{{"n": {n}}}' for n in range(1, events + 1)],  # type: ignore[attr-defined]
                              lease_until=time.time() + 60, ended=False)


async def check_journal_answers(make_store: StoreFactory) -> None:
    """Answers left through one store reach the run's server through another: only the run's
    principal, only while its journal ends where the answerer read it, one batch at a time
    (the next write clears it), never for an ended run; ``journal_parked`` renews the lease
    and tells of a cancel too."""
    run_id, alice = _name("r"), _name("alice")
    async with _opened(make_store) as owner, _opened(make_store) as other:
        await _parked_run(owner, run_id, alice, 3)
        assert await owner.journal_parked(run_id, time.time() + 60) == (False, None), "nothing pending yet"
        assert not await other.journal_answer(run_id, _name("bob"), 3, '{"x": 1}'), "another principal's run"
        assert not await other.journal_answer(run_id, alice, 2, '{"x": 1}'), "a journal that moved on since it was read"
        assert not await other.journal_answer(_name("r"), alice, 3, '{"x": 1}'), "an unknown run"
        assert await other.journal_answer(run_id, alice, 3, '{"first": "é😀"}'), "answers for the parked run"
        assert not await owner.journal_answer(run_id, alice, 3, '{"second": 2}'), "one batch at a time"
        lease = time.time() + 123
        assert await owner.journal_parked(run_id, lease) == (False, '{"first": "é😀"}'), "the batch, as left"
        page = await other.journal_read(run_id, alice, 0, limit=0)
        assert page is not None and abs(page.lease_until - lease) < 0.01, "journal_parked renews the lease"
        await owner.journal_write(run_id, 4, ['{"n": 4}'], lease_until=time.time() + 60, ended=False)
        assert await owner.journal_parked(run_id, time.time() + 60) == (False, None), "a write clears the batch"
        assert not await other.journal_answer(run_id, alice, 3, '{"x": 1}'), "the journal moved on"
        assert await other.journal_answer(run_id, alice, 4, '{"again": 1}'), "answers for its next suspension"
        assert await other.journal_cancel(run_id, alice)
        assert await owner.journal_parked(run_id, time.time() + 60) == (True, '{"again": 1}'), "a cancel asked"
        await owner.journal_write(run_id, 5, ['{"n": 5}'], lease_until=time.time() + 60, ended=True)
        assert not await other.journal_answer(run_id, alice, 5, '{"x": 1}'), "an ended run takes no answers"


async def check_journal_answers_race(make_store: StoreFactory) -> None:
    """Many answers for one suspension at once, through two stores: exactly one is left."""
    run_id, alice = _name("r"), _name("alice")
    async with _opened(make_store) as one, _opened(make_store) as two:
        await _parked_run(one, run_id, alice, 2)
        stores = [one, two] * 8
        results = await asyncio.gather(*(s.journal_answer(run_id, alice, 2, f'{{"n": {n}}}')
                                         for n, s in enumerate(stores)))
        assert results.count(True) == 1, f"exactly one batch wins, got {results.count(True)}"
        _, pending = await one.journal_parked(run_id, time.time() + 60)
        assert pending == f'{{"n": {results.index(True)}}}', "the batch that won is the one pending"


JOURNAL_CHECKS: list[Check] = [check_journal_answers, check_journal_answers_race]

__all__ = ["JOURNAL_CHECKS", "check_journal_answers", "check_journal_answers_race"]
