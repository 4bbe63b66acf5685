"""onedoor backend for Nous Research's hermes-agent, embedded: one AIAgent per run.

The entry point ``hermes`` names :func:`hermes_backend`. This module does not import
hermes (``run_agent``): it loads, with its home isolated, when the first run starts.

The factory's attributes: ``Options``, ``capabilities``, ``accepts(options)`` (images unless
``vision=false``; audio and documents with ``base_url``: :mod:`.content`), ``models(options)``
and ``with_model(options, model_id)`` (the models a client may switch between: :mod:`.models`).
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


def _accepts(options: HermesOptions | None) -> frozenset[str]:
    from .content import accepted

    return accepted(options.vision, options.base_url) if options is not None else frozenset()


def _models(options: HermesOptions) -> list[dict[str, str]]:
    from .models import list_models

    return list_models(options)


def _with_model(options: HermesOptions, model_id: str) -> HermesOptions:
    from .models import with_model

    result: HermesOptions = with_model(options, model_id)
    return result


hermes_backend.accepts = _accepts  # type: ignore[attr-defined]
hermes_backend.models = _models  # type: ignore[attr-defined]
hermes_backend.with_model = _with_model  # type: ignore[attr-defined]
