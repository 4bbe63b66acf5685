"""Fixtures: one isolated hermes home per session, a fake model server per test, no outside network."""

from __future__ import annotations

import pytest
from onedoor_fake_model_server import fake_model_server, loopback_only


@pytest.fixture(autouse=True)
def _loopback_only():
    with loopback_only() as attempts:
        yield
    assert not attempts, f"the test tried to reach the network: {attempts}"


@pytest.fixture(scope="session")
def hermes_home(tmp_path_factory):
    return str(tmp_path_factory.mktemp("hermes-home"))


@pytest.fixture
def server():
    with fake_model_server() as srv:
        yield srv
