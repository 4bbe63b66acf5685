"""onedoor: one agent, every door.

The kernel owns the agent port (:mod:`onedoor.events`, :mod:`onedoor.port`) and the run
lifecycle (:mod:`onedoor.kernel`); backends, doors and transports are entry-point
plugins (:mod:`onedoor.plugins`). Importing this package imports nothing heavy.

The distribution is ``onedoor-kernel`` (``onedoor`` on the package index is another
project: :mod:`onedoor.foreign`); ``__version__`` is written by ``nox -s bump``.
"""

__version__ = "0.1.0"

from .foreign import warn_if_installed as _warn_if_foreign

_warn_if_foreign()
