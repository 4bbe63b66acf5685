"""The model of a run: building it, what it reads, the models a client may switch between.

The factory's optional attributes a door uses (kernel-independent: plain data):

- ``accepts(options) -> kinds``: the content kinds besides text the model is given
  (``-o accepts=…``, or ``auto``: from the model's pydantic-ai profile).
- ``models(options) -> [{"id", "name", "description"}]``: ``model`` first (the current
  one), then ``-o models=…``.
- ``with_model(options, model_id) -> options``: options that run ``model_id`` (one of
  ``models``), checked as at start-up; ValueError otherwise. Build the backend again with
  them (``factory(new_options)``) for the runs that should use it.
"""

from __future__ import annotations

import dataclasses
import logging
from functools import lru_cache
from typing import Any

from .content import SENDABLE, kinds_of_profile
from .options import AUTO, PydanticAIOptions

log = logging.getLogger("onedoor.pydantic_ai")
_OPENAI_PREFIXES = ("openai:", "openai-chat:")


def build_model(opts: PydanticAIOptions) -> tuple[Any, Any]:
    """``opts.model`` for pydantic-ai (a Model with ``base_url``, else the model string, which
    pydantic-ai resolves), and the OpenAI client to close after the run (or None)."""
    if not opts.base_url:
        return opts.model, None
    from openai import AsyncOpenAI
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    from .agent_support import env_key

    client = AsyncOpenAI(
        base_url=opts.base_url,
        api_key=opts.api_key or env_key() or "not-needed",
        max_retries=opts.retries,
        timeout=opts.timeout,
    )
    return OpenAIChatModel(server_name(opts.model), provider=OpenAIProvider(openai_client=client)), client


def server_name(model: str) -> str:
    """The model's name on an OpenAI-compatible server (``openai:`` dropped)."""
    return model.split(":", 1)[1] if model.startswith(_OPENAI_PREFIXES) else model


def accepted_kinds(options: PydanticAIOptions | None) -> frozenset[str]:
    """The factory's ``accepts``: what the configured model is given besides text."""
    if options is None:
        return frozenset()
    if options.accepts != AUTO:
        return frozenset(k for k in options.accepts.split(",") if k)
    return _profile_kinds(options.agent, options.model, options.base_url)


@lru_cache(maxsize=64)
def _profile_kinds(agent: str, model: str, base_url: str) -> frozenset[str]:
    try:
        return kinds_of_profile(_model_for_profile(agent, model, base_url).profile) & SENDABLE
    except Exception as exc:  # noqa: BLE001 - an unknown model must not stop the server: text only
        log.warning("cannot tell what the model reads (%s); it is given text only: set -o accepts=… to choose", exc)
        return frozenset()


def _model_for_profile(agent: str, model: str, base_url: str) -> Any:
    from pydantic_ai.models import infer_model

    if base_url:
        from pydantic_ai.models.openai import OpenAIChatModel
        from pydantic_ai.providers.openai import OpenAIProvider

        return OpenAIChatModel(server_name(model), provider=OpenAIProvider(base_url=base_url, api_key="unused"))
    if model:
        return infer_model(model)
    from .loading import load_agent

    found = load_agent(agent).model
    if found is None:
        raise ValueError(f"agent {agent!r} has no model of its own")
    return infer_model(found) if isinstance(found, str) else found


def list_models(options: PydanticAIOptions) -> list[dict[str, str]]:
    """The factory's ``models``: the model the options run first, then the others listed."""
    out = []
    for model_id in (options.model, *options.models) if options.model else ():
        provider, _, name = model_id.partition(":") if ":" in model_id and not options.base_url else ("", "", model_id)
        where = options.base_url or provider
        out.append({"id": model_id, "name": name, "description": f"pydantic-ai, {where}" if where else "pydantic-ai"})
    return out


def with_model(options: PydanticAIOptions, model_id: str) -> PydanticAIOptions:
    """The factory's ``with_model``: these options, running ``model_id``."""
    choices = [options.model, *options.models] if options.model else []
    if model_id not in choices:
        listed = ", ".join(choices) or "none: set -o models=…"
        raise ValueError(f"unknown model {model_id!r}; the choices are {listed}")
    if model_id == options.model:
        return options
    others = [m for m in choices if m != model_id]
    return dataclasses.replace(options, model=model_id, models=others, preflight=False)


__all__ = ["accepted_kinds", "build_model", "list_models", "server_name", "with_model"]
