"""The other ``onedoor`` on the package index.

The distribution name ``onedoor`` belongs to an unrelated project (a guardrail engine,
0.3–0.8, Python >= 3.12) whose import package is also ``onedoor``. This kernel is
published as ``onedoor-kernel``; installed side by side, the two overwrite each other's
files (its ``onedoor/__init__.py`` replaces ours, or the other way round).

:func:`warn_if_installed` says so in one line on stderr, once per process. It runs at
every start, so it is cheap on purpose: one directory listing per site-packages folder on
``sys.path``, no :mod:`importlib.metadata` (which costs more to import than the check).
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # typing's flag, without importing typing or collections.abc at start
if TYPE_CHECKING:
    from collections.abc import Iterable

FOREIGN = "onedoor"  # the distribution name that is not ours
OURS = "onedoor-kernel"

_warned = False


def _site_dirs() -> Iterable[str]:
    return [entry for entry in sys.path if os.path.basename(entry) in ("site-packages", "dist-packages")]


def installed_version(paths: Iterable[str] | None = None) -> str | None:
    """The version of a distribution named ``onedoor`` installed in these folders (default:
    the site-packages folders on ``sys.path``), or None. ``"?"`` when its metadata folder
    names no version."""
    for folder in _site_dirs() if paths is None else paths:
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        for name in names:
            stem, dot, suffix = name.rpartition(".")
            if not dot or suffix not in ("dist-info", "egg-info"):
                continue
            dist, _, version = stem.partition("-")
            if dist.lower() == FOREIGN:
                return version.partition("-")[0] or "?"
    return None


def message(version: str) -> str:
    return (
        f"onedoor: warning: the distribution '{FOREIGN}' {version} is installed here; on the package index that name "
        f"is an unrelated project whose import package is also `onedoor`, so it and {OURS} overwrite each other's "
        f"files. Fix: pip uninstall {FOREIGN} && pip install --force-reinstall {OURS}"
    )


def warn_if_installed() -> bool:
    """Print :func:`message` on stderr if the foreign distribution is installed (once per
    process). Returns whether it is installed."""
    global _warned
    version = installed_version()
    if version is None:
        return False
    if not _warned:
        _warned = True
        print(message(version), file=sys.stderr)
    return True
