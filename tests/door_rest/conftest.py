"""Fixtures for the REST door tests."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Iterator

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from onedoor_transport_http.testing import start_server
from rest_helpers import TOKEN


def pytest_configure(config: Any) -> None:
    config.addinivalue_line("markers", "fuzz: schemathesis run against the live OpenAPI document")


@pytest.fixture(scope="module")
def served() -> Iterator[Any]:
    """A real `onedoor serve --door rest` subprocess with a token and small limits."""
    args = [
        "--door", "rest", "--token", TOKEN,
        "-o", "limits.max_message_chars=2000",
        "-o", "limits.max_concurrent_runs=4",
        "-o", "max_body_bytes=65536",
        "-o", "keepalive=0.3",
    ]
    with start_server(args) as server:
        yield server
