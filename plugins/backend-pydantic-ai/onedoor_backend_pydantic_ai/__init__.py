"""onedoor backend for pydantic-ai: any pydantic-ai Agent, or one built from a model string.

The entry point ``pydantic-ai`` names :func:`pydantic_ai_backend`. This module imports
neither pydantic_ai nor openai: they load when the first run starts (or when ``accepts``
reads the model's profile at start-up).

The factory's attributes: ``Options``, ``capabilities``, ``accepts(options)`` (the content
kinds besides text the model is given), ``models(options)`` and ``with_model(options,
model_id)`` (the models a client may switch between: :mod:`.models`).
"""

from __future__ import annotations

from typing import Any

from .options import PydanticAIOptions

__all__ = ["PydanticAIOptions", "pydantic_ai_backend"]


def pydantic_ai_backend(options: PydanticAIOptions | None = None) -> Any:
    """Backend factory: a fresh agent for every run."""
    from .agent import PydanticAIAgent

    if options is None:
        raise ValueError("the pydantic-ai backend needs options: -o model=… or -o agent=module:attribute")
    return PydanticAIAgent(options)


pydantic_ai_backend.Options = PydanticAIOptions  # type: ignore[attr-defined]
pydantic_ai_backend.capabilities = frozenset({"tools", "client_tools", "approvals", "questions"})  # type: ignore[attr-defined]


def _accepts(options: PydanticAIOptions | None) -> frozenset[str]:
    from .models import accepted_kinds

    return accepted_kinds(options)


def _models(options: PydanticAIOptions) -> list[dict[str, str]]:
    from .models import list_models

    return list_models(options)


def _with_model(options: PydanticAIOptions, model_id: str) -> PydanticAIOptions:
    from .models import with_model

    return with_model(options, model_id)


pydantic_ai_backend.accepts = _accepts  # type: ignore[attr-defined]
pydantic_ai_backend.models = _models  # type: ignore[attr-defined]
pydantic_ai_backend.with_model = _with_model  # type: ignore[attr-defined]
