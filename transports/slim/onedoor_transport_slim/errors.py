"""The SLIM transport's own error (light: importable without slim_bindings)."""

from __future__ import annotations

from onedoor import OnedoorError


class SlimTransportError(OnedoorError):
    """A SLIM failure, said in one line: no node, no worker, a refused session, a dead peer."""


__all__ = ["SlimTransportError"]
