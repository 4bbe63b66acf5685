"""Deprecated path: this module is :mod:`onedoor.wire.jsonrpc` now. Importing it from here still
works (it is the same module) and warns; import it from its new place, or its public
names from :mod:`onedoor`."""

import sys
import warnings

from .wire import jsonrpc as _moved

warnings.warn("onedoor.jsonrpc is deprecated: it moved to onedoor.wire.jsonrpc", DeprecationWarning, stacklevel=2)
sys.modules[__name__] = _moved
