"""Deprecated path: this module is :mod:`onedoor.plugins.options` now. Importing it from here still
works (it is the same module) and warns; import it from its new place, or its public
names from :mod:`onedoor`."""

import sys
import warnings

from .plugins import options as _moved

warnings.warn("onedoor.options is deprecated: it moved to onedoor.plugins.options", DeprecationWarning, stacklevel=2)
sys.modules[__name__] = _moved
