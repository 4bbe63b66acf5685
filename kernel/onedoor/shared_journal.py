"""Deprecated path: this module is :mod:`onedoor.journal.shared` now. Importing it from here still
works (it is the same module) and warns; import it from its new place, or its public
names from :mod:`onedoor`."""

import sys
import warnings

from .journal import shared as _moved

warnings.warn("onedoor.shared_journal is deprecated: it moved to onedoor.journal.shared", DeprecationWarning, stacklevel=2)
sys.modules[__name__] = _moved
