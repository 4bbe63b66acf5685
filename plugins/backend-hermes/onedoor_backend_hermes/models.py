"""The models a client may switch between (the factory's ``models`` and ``with_model``).

A choice's id is written as hermes' own ACP adapter writes it: ``provider:model`` for a
hermes provider (``openrouter:anthropic/claude-sonnet-4.5``), the bare model name on the
``base_url`` endpoint (hermes' ``custom`` provider). The ``models`` option lists the other
choices the same way; a bare name keeps the current endpoint or provider. hermes' own
``parse_model_input`` reads them (a colon counts only after a provider hermes knows, so
``llama3:8b`` stays one model name). ``with_model`` gives options for the new choice,
checked as at start-up; one AIAgent is built per run, so the next run uses it.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any

CUSTOM = "custom"  # hermes' provider for an OpenAI-compatible base_url


def current_id(options: Any) -> str:
    return options.model if options.base_url else f"{options.provider}:{options.model}"


def list_models(options: Any) -> list[dict[str, str]]:
    """``[{"id", "name", "description"}]``: the current choice first, then ``options.models``."""
    out = []
    for choice in (current_id(options), *options.models):
        provider, model = resolve(options, choice)
        where = options.base_url if provider == CUSTOM else f"provider {provider}"
        out.append({"id": choice, "name": model, "description": f"hermes, {where}"})
    return out


def with_model(options: Any, model_id: str) -> Any:
    """Options that run ``model_id`` (one of :func:`list_models`); ValueError otherwise."""
    current = current_id(options)
    choices = [current, *options.models]
    if model_id not in choices:
        raise ValueError(f"unknown model {model_id!r}; the choices are {', '.join(choices)}")
    if model_id == current:
        return options
    provider, model = resolve(options, model_id)
    others = [c for c in choices if c != model_id]
    if provider == CUSTOM:
        return dataclasses.replace(options, model=model, models=others, preflight=False)
    same = provider == options.provider and not options.base_url
    return dataclasses.replace(options, model=model, provider=provider, base_url="", models=others, preflight=False,
                               api_key=options.api_key if same else "")


def resolve(options: Any, choice: str) -> tuple[str, str]:
    """``(provider, model)`` of a choice; ValueError for one that cannot run."""
    current = CUSTOM if options.base_url else options.provider
    if choice == current_id(options):
        return current, options.model
    os.environ["HERMES_HOME"] = options.home  # before any hermes module is imported
    from hermes_cli.models import parse_model_input

    provider, model = parse_model_input(choice, current)
    if not model:
        raise ValueError(f"models: {choice!r} names no model")
    if provider == CUSTOM and not options.base_url:
        raise ValueError(f"models: {choice!r} needs base_url (hermes' custom provider is an OpenAI-compatible endpoint)")
    return provider, model


__all__ = ["current_id", "list_models", "resolve", "with_model"]
