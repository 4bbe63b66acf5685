"""A throwaway PostgreSQL server for this folder (pg_server.py): one for the whole session;
tests that restart or stop PostgreSQL start their own. Skipped, saying why, where
PostgreSQL is not installed (CI installs it and fails such skips)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from pg_server import LocalPostgres, missing_reason


@pytest.fixture(scope="session")
def postgres():
    reason = missing_reason()
    if reason:
        pytest.skip(reason)
    with LocalPostgres() as server:
        yield server


@pytest.fixture
def own_postgres():
    """A server of this test's own, to restart or stop."""
    reason = missing_reason()
    if reason:
        pytest.skip(reason)
    with LocalPostgres() as server:
        yield server
