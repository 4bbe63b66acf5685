"""tests/release: what a package index user gets (versions, metadata, licenses,
dependencies) and, given built distributions (``nox -s packaging``), installing each by
name from a local index."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
