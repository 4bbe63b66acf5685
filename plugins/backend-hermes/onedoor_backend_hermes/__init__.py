"""onedoor backend for Nous Research's hermes-agent, embedded: one AIAgent per run.

The entry point ``hermes`` names :func:`hermes_backend`. This module does not import
hermes (``run_agent``): it loads, with its home isolated, when the first run starts.
"""

from __future__ import annotations

from typing import Any

from .options import HermesOptions

__all__ = ["HermesOptions", "hermes_backend"]


def hermes_backend(options: HermesOptions | None = None) -> Any:
    """Backend factory: a fresh agent for every run."""
    from .agent import HermesAgent

    if options is None:
        raise ValueError("the hermes backend needs options: -o model=… -o base_url=…")
    return HermesAgent(options)


hermes_backend.Options = HermesOptions  # type: ignore[attr-defined]
hermes_backend.capabilities = frozenset({"approvals"})  # type: ignore[attr-defined]
