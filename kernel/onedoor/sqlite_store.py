"""Deprecated path: this module is :mod:`onedoor.threads.sqlite` now. Importing it from here still
works (it is the same module) and warns; import it from its new place, or its public
names from :mod:`onedoor`."""

import sys
import warnings

from .threads import sqlite as _moved

warnings.warn("onedoor.sqlite_store is deprecated: it moved to onedoor.threads.sqlite", DeprecationWarning, stacklevel=2)
sys.modules[__name__] = _moved
