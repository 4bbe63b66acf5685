"""Fixtures: a fake model server per test, and no network beyond 127.0.0.1."""

from __future__ import annotations

import pytest
from onedoor_fake_model_server import fake_model_server, loopback_only


@pytest.fixture(autouse=True)
def _loopback_only():
    with loopback_only() as attempts:
        yield
    assert not attempts, f"the test tried to reach the network: {attempts}"


@pytest.fixture
def server():
    with fake_model_server() as srv:
        yield srv
