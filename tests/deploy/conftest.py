"""Fixtures for the deployment tests: PostgreSQL (pg_server from tests/store_postgres) and
the balancers. Skipped, saying why, where PostgreSQL, nginx or HAProxy is missing (CI
installs them and fails such skips)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parents[1] / "store_postgres"))

from deploy_harness import balancer_missing
from pg_server import LocalPostgres, missing_reason


@pytest.fixture
def postgres():
    reason = missing_reason()
    if reason:
        pytest.skip(reason)
    with LocalPostgres(max_connections=200) as server:
        yield server


@pytest.fixture(params=["nginx"])
def balancer(request):
    reason = balancer_missing(request.param)
    if reason:
        pytest.skip(reason)
    return request.param


@pytest.fixture
def haproxy():
    reason = balancer_missing("haproxy")
    if reason:
        pytest.skip(reason)
    return "haproxy"
