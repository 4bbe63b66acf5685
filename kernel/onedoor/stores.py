"""Deprecated path: the thread store plugins are :mod:`onedoor.threads.stores` now, and
``make_store`` is :func:`onedoor.plugins.serve.make_store`. Importing from here still works
and warns."""

import warnings

from .plugins.serve import make_store
from .threads.stores import DEFAULT_STORE, NO_STORE, THREADS_FILE, SQLiteOptions, data_dir, sqlite

warnings.warn("onedoor.stores is deprecated: it moved to onedoor.threads.stores (make_store: onedoor.plugins.serve)",
              DeprecationWarning, stacklevel=2)

__all__ = ["DEFAULT_STORE", "NO_STORE", "THREADS_FILE", "SQLiteOptions", "data_dir", "make_store", "sqlite"]
