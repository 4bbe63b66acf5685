"""Deprecated path: this module is :mod:`onedoor.plugins.requirements` now. Importing it from here still
works (it is the same module) and warns; import it from its new place, or its public
names from :mod:`onedoor`."""

import sys
import warnings

from .plugins import requirements as _moved

warnings.warn("onedoor.requirements_check is deprecated: it moved to onedoor.plugins.requirements", DeprecationWarning, stacklevel=2)
sys.modules[__name__] = _moved
