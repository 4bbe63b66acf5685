"""Fixtures for the A2A door tests: one real server per module, with a token."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Iterator

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from a2a_helpers import TOKEN, A2aServer


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """`onedoor serve --door a2a --token …` with the scripted backend (no pacing)."""
    tmp = tmp_path_factory.mktemp("a2a")
    server = A2aServer(["--token", TOKEN, "-o", "sqlite.path=" + str(tmp / "threads.sqlite3")], tmp)
    try:
        yield server
    finally:
        server.stop()
