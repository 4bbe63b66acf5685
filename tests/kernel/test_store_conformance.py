"""The built-in SQLite store passes the store conformance suite (onedoor.testing.store_conformance),
on a real file: the shared checks open two stores on that one file, as two servers would."""

from __future__ import annotations

import pytest
from onedoor.testing.store_conformance import (
    CHECKS,
    JOURNAL_CHECKS,
    LEASE_CHECKS,
    SHARED_CHECKS,
    STATE_CHECKS,
    check_another_owners_thread_looks_unknown,
)
from onedoor.threads.sqlite import SQLiteThreadStore


@pytest.mark.parametrize("check", CHECKS + SHARED_CHECKS + LEASE_CHECKS + STATE_CHECKS, ids=lambda check: check.__name__)
async def test_sqlite_store_conforms(check, tmp_path):
    await check(lambda max_thread_chars: SQLiteThreadStore(tmp_path / "threads.db", max_thread_chars=max_thread_chars))


async def test_the_suite_catches_a_store_that_lets_another_owner_in(tmp_path):
    """The suite can fail: a store that ignores the owner on get is caught."""

    class Leaky(SQLiteThreadStore):
        async def get(self, owner, thread_id):
            thread = await super().get(owner, thread_id)
            if thread is None and not owner.startswith("alice"):  # another owner: look the thread up as anyone
                for alice in self._owners:
                    found = await super().get(alice, thread_id)
                    if found is not None:
                        return found
            return thread

        async def create(self, owner, **kwargs):
            self._owners.add(owner)
            return await super().create(owner, **kwargs)

    def leaky(max_thread_chars):
        store = Leaky(tmp_path / "leaky.db", max_thread_chars=max_thread_chars)
        store._owners = set()
        return store

    with pytest.raises(AssertionError, match="another owner's get must be None"):
        await check_another_owners_thread_looks_unknown(leaky)


@pytest.mark.parametrize("check", JOURNAL_CHECKS, ids=lambda check: check.__name__)
async def test_sqlite_shared_journals_take_answers(check, tmp_path):
    await check(lambda max_thread_chars: SQLiteThreadStore(tmp_path / "threads.db", shared_journal=True))
