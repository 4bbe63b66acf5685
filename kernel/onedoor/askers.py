"""Deprecated path: this module is :mod:`onedoor.questions.askers` now. Importing it from here still
works (it is the same module) and warns; import it from its new place, or its public
names from :mod:`onedoor`."""

import sys
import warnings

from .questions import askers as _moved

warnings.warn("onedoor.askers is deprecated: it moved to onedoor.questions.askers", DeprecationWarning, stacklevel=2)
sys.modules[__name__] = _moved
