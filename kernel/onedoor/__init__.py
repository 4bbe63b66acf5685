"""onedoor: one agent, every door.

The kernel owns the agent port (:mod:`onedoor.events`, :mod:`onedoor.port`) and the run
lifecycle (:mod:`onedoor.kernel`); backends, doors and transports are entry-point
plugins (:mod:`onedoor.plugins`). Importing this package imports nothing heavy.
"""

__version__ = "0.1.0"
