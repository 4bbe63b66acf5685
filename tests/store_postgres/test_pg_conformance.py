"""The PostgreSQL store passes the store conformance suite (onedoor.testing.store_conformance)
against a real PostgreSQL; the shared checks open two stores (two pools) on one database."""

from __future__ import annotations

import pytest
from onedoor.testing.store_conformance import CHECKS, JOURNAL_CHECKS, LEASE_CHECKS, SHARED_CHECKS, STATE_CHECKS
from onedoor_store_postgres import PostgresThreadStore


@pytest.mark.parametrize("check", CHECKS + SHARED_CHECKS + LEASE_CHECKS + STATE_CHECKS, ids=lambda check: check.__name__)
async def test_postgres_store_conforms(check, postgres):
    await check(lambda max_thread_chars: PostgresThreadStore(postgres.dsn, pool_size=4, max_thread_chars=max_thread_chars))


@pytest.mark.parametrize("check", JOURNAL_CHECKS, ids=lambda check: check.__name__)
async def test_postgres_shared_journals_take_answers(check, postgres):
    await check(lambda max_thread_chars: PostgresThreadStore(postgres.dsn, pool_size=4))
