"""Loading a user's objects by name (``module:attribute``): the pydantic-ai Agent, the deps
factory. Used when options are checked at start-up and by every run."""

from __future__ import annotations

import importlib
from typing import Any


def load_object(target: str, what: str = "object") -> Any:
    """Import ``module:attribute`` (RuntimeError naming ``what`` if it is not there)."""
    module_name, _, attr = target.partition(":")
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise RuntimeError(f"cannot import {module_name!r} for {what} {target!r}: {exc}") from None
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise RuntimeError(f"module {module_name!r} has no attribute {attr!r}") from None
    return obj


def load_agent(target: str) -> Any:
    """Import ``module:attribute``; call it if it is a factory rather than an Agent."""
    from pydantic_ai.agent import AbstractAgent

    obj = load_object(target, "agent")
    if not isinstance(obj, AbstractAgent) and callable(obj):
        obj = obj()
    if not isinstance(obj, AbstractAgent):
        raise RuntimeError(f"{target!r} is {type(obj).__name__}, not a pydantic-ai Agent")
    return obj


__all__ = ["load_agent", "load_object"]
