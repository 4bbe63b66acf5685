"""onedoor backend for pydantic-ai: any pydantic-ai Agent, or one built from a model string.

The entry point ``pydantic-ai`` names :func:`pydantic_ai_backend`. This module imports
neither pydantic_ai nor openai: they load when the first run starts.
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
