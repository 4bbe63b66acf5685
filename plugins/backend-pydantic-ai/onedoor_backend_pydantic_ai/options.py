"""Options of the pydantic-ai backend, validated once at start-up (no pydantic_ai import)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlparse

AUTO = "auto"

# Provider prefix -> the environment variable pydantic-ai reads its key from.
KEY_ENV = {
    "openai": "OPENAI_API_KEY",
    "openai-chat": "OPENAI_API_KEY",
    "openai-responses": "OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "google-gla": "GOOGLE_API_KEY",
    "gemini": "GEMINI_API_KEY",
    "groq": "GROQ_API_KEY",
    "mistral": "MISTRAL_API_KEY",
    "cohere": "CO_API_KEY",
    "deepseek": "DEEPSEEK_API_KEY",
    "openrouter": "OPENROUTER_API_KEY",
}


@dataclass
class PydanticAIOptions:
    model: str = field(default="", metadata={
        "help": "model: 'openai:gpt-4o', 'anthropic:claude-sonnet-4-5', … or, with base_url, the server's model name; "
                "with agent, the model that agent runs on instead of its own"})
    agent: str = field(default="", metadata={"help": "an existing pydantic-ai Agent as module:attribute"})
    base_url: str = field(default="", metadata={
        "help": "OpenAI-compatible server for model, e.g. http://127.0.0.1:11434/v1 (Ollama) or a vLLM URL"})
    api_key: str = field(default="", metadata={"help": "API key for base_url (default: $OPENAI_API_KEY)", "secret": True})
    instructions: str = field(default="", metadata={"help": "system instructions for an agent built from model"})
    retries: int = field(default=2, metadata={"help": "HTTP retries of the OpenAI client (base_url only)"})
    timeout: float = field(default=600.0, metadata={"help": "seconds one model request may take (base_url only)"})
    preflight: bool = field(default=False, metadata={"help": "at start-up, check base_url answers GET /models"})
    models: list[str] = field(default_factory=list, metadata={
        "help": "other models a client may switch to (e.g. ACP's model picker), comma-separated, written as model is"})
    accepts: str = field(default=AUTO, metadata={
        "help": "content besides text the model is given: auto (what its pydantic-ai profile says it reads) or a "
                "comma list of image, audio, video, document, resource ('' = text only)"})
    deps: str = field(default="", metadata={
        "help": "deps for every run as module:attribute (a function is called per run); StateDeps get the shared state"})

    def __post_init__(self) -> None:
        self.model = self.model.strip()
        self.agent = self.agent.strip()
        self.base_url = self.base_url.strip().rstrip("/")
        self.deps = self.deps.strip()
        self.models = _unique(m.strip() for m in self.models if m.strip() and m.strip() != self.model)
        self.accepts = _accepts(self.accepts)
        if not self.model and not self.agent:
            raise ValueError("name a model (-o model=openai:gpt-4o) or an agent (-o agent=module:attribute)")
        if self.models and not self.model:
            raise ValueError("models lists models to switch to: name the one to start with as model too")
        if self.agent and self.base_url and not self.model:
            raise ValueError("base_url applies to model, not to an agent you build yourself (add model to run it there)")
        _check_targets(self.agent, self.deps)
        if self.retries < 0:
            raise ValueError("retries must be 0 or more")
        if self.timeout <= 0:
            raise ValueError("timeout must be more than 0")
        if self.base_url:
            parsed = urlparse(self.base_url)
            if parsed.scheme not in ("http", "https") or not parsed.netloc:
                raise ValueError(f"base_url must be an http(s) URL, got {self.base_url!r}")
        elif self.model:
            for model in (self.model, *self.models):
                _check_provider(model)
        if self.preflight and self.base_url:
            check_reachable(self.base_url, self.api_key, min(self.timeout, 5.0))


def _check_targets(agent: str, deps: str) -> None:
    """``agent`` and ``deps`` (each ``module:attribute`` or empty) can be imported."""
    from .loading import load_agent, load_object  # imports pydantic_ai: fine at start-up, not at import

    for target, what in ((agent, "agent"), (deps, "deps")):
        module, _, attr = target.partition(":")
        if target and (not module or not attr):
            raise ValueError(f"{what} must look like module:attribute, got {target!r}")
    try:
        if agent:
            load_agent(agent)
        if deps:
            load_object(deps, "deps")
    except RuntimeError as exc:
        raise ValueError(str(exc)) from None


def _check_provider(model: str) -> None:
    """A model string without base_url must name its provider, whose key must be set."""
    prefix = model.partition(":")[0] if ":" in model else ""
    if not prefix:
        raise ValueError(f"model {model!r} names no provider: write provider:name (openai:gpt-4o) or pass base_url")
    env = KEY_ENV.get(prefix)
    if env and not os.environ.get(env):
        raise ValueError(f"missing key for model {model!r}: set {env}")


def _accepts(value: str) -> str:
    """``auto``, or the comma list of kinds cleaned (ValueError naming an unknown kind)."""
    from .content import SENDABLE

    text = str(value).strip().lower()
    if text == AUTO:
        return AUTO
    kinds = [k.strip() for k in text.split(",") if k.strip()]
    unknown = sorted(set(kinds) - SENDABLE)
    if unknown:
        raise ValueError(f"accepts: unknown kind(s) {', '.join(unknown)}; use auto or some of {', '.join(sorted(SENDABLE))}")
    return ",".join(_unique(kinds))


def _unique(items: Any) -> list[str]:
    return list(dict.fromkeys(items))


def check_reachable(base_url: str, api_key: str, timeout: float) -> None:
    """Raise ValueError if nothing answers at ``base_url`` (GET /models)."""
    import urllib.error
    import urllib.request

    request = urllib.request.Request(f"{base_url}/models", headers={"Authorization": f"Bearer {api_key or 'none'}"})
    try:
        with urllib.request.urlopen(request, timeout=timeout):  # the user's own URL
            return
    except urllib.error.HTTPError:
        return  # it answered: the endpoint is there, even if /models is not offered
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise ValueError(f"unreachable endpoint {base_url}: {reason}") from None
