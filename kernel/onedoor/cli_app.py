"""Deprecated path: this module is :mod:`onedoor.cli.app` now. Importing it from here still
works (it is the same module) and warns; import it from its new place, or its public
names from :mod:`onedoor`."""

import sys
import warnings

from .cli import app as _moved

warnings.warn("onedoor.cli_app is deprecated: it moved to onedoor.cli.app", DeprecationWarning, stacklevel=2)
sys.modules[__name__] = _moved
