"""Fixtures for the SLIM transport tests (helpers live in slim_harness.py)."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from slim_harness import Cluster


@pytest.fixture
def cluster():
    root = Path(tempfile.mkdtemp(prefix="odslim-", dir="/tmp"))
    c = Cluster(root)
    try:
        yield c
    finally:
        c.close()
        artifacts = os.environ.get("ONEDOOR_TEST_ARTIFACTS")
        if artifacts:
            dest = Path(artifacts) / "slim-logs" / root.name
            shutil.copytree(root, dest, ignore=shutil.ignore_patterns("*.sock"), dirs_exist_ok=True)
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def node_cluster(cluster):
    cluster.start_node()
    return cluster
