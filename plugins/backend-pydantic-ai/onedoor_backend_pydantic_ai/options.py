"""Options of the pydantic-ai backend, validated once at start-up (no pydantic_ai import)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from urllib.parse import urlparse

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
        "help": "model: 'openai:gpt-4o', 'anthropic:claude-sonnet-4-5', … or, with base_url, the server's model name"})
    agent: str = field(default="", metadata={"help": "an existing pydantic-ai Agent as module:attribute (instead of model)"})
    base_url: str = field(default="", metadata={
        "help": "OpenAI-compatible server, e.g. http://127.0.0.1:11434/v1 (Ollama) or a vLLM URL"})
    api_key: str = field(default="", metadata={"help": "API key for base_url (default: $OPENAI_API_KEY)", "secret": True})
    instructions: str = field(default="", metadata={"help": "system instructions for an agent built from model"})
    retries: int = field(default=2, metadata={"help": "HTTP retries of the OpenAI client (base_url only)"})
    timeout: float = field(default=600.0, metadata={"help": "seconds one model request may take (base_url only)"})
    preflight: bool = field(default=False, metadata={"help": "at start-up, check base_url answers GET /models"})

    def __post_init__(self) -> None:
        self.model = self.model.strip()
        self.agent = self.agent.strip()
        self.base_url = self.base_url.strip().rstrip("/")
        if not self.model and not self.agent:
            raise ValueError("name a model (-o model=openai:gpt-4o) or an agent (-o agent=module:attribute)")
        if self.model and self.agent:
            raise ValueError("give either model or agent, not both")
        if self.agent:
            module, _, attr = self.agent.partition(":")
            if not module or not attr:
                raise ValueError(f"agent must look like module:attribute, got {self.agent!r}")
            if self.base_url:
                raise ValueError("base_url applies to model, not to an agent you build yourself")
            from .loading import load_agent  # imports pydantic_ai: fine at start-up, not at import

            try:
                load_agent(self.agent)
            except RuntimeError as exc:
                raise ValueError(str(exc)) from None
        if self.retries < 0:
            raise ValueError("retries must be 0 or more")
        if self.timeout <= 0:
            raise ValueError("timeout must be more than 0")
        if self.base_url:
            parsed = urlparse(self.base_url)
            if parsed.scheme not in ("http", "https") or not parsed.netloc:
                raise ValueError(f"base_url must be an http(s) URL, got {self.base_url!r}")
        elif self.model:
            prefix = self.model.partition(":")[0] if ":" in self.model else ""
            env = KEY_ENV.get(prefix)
            if not prefix:
                raise ValueError(
                    f"model {self.model!r} names no provider: write provider:name (openai:gpt-4o) or pass base_url"
                )
            if env and not os.environ.get(env):
                raise ValueError(f"missing key for model {self.model!r}: set {env}")
        if self.preflight and self.base_url:
            check_reachable(self.base_url, self.api_key, min(self.timeout, 5.0))


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
