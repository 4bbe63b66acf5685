"""Options of the hermes backend, validated once at start-up (hermes itself is not imported)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlparse

# Toolsets whose tools act on this machine (shell, files, code, browser, desktop...).
MACHINE_TOOLSETS = frozenset({
    "terminal", "file", "code_execution", "coding", "debugging", "browser", "computer_use", "project",
    "cronjob", "delegation", "skills", "memory", "image_gen", "video_gen", "tts", "kanban",
})
# Toolsets whose tools stay off this machine: subtracted from the machine tools above (the
# composite ones, e.g. coding, include them).
HARMLESS_TOOLSETS = ("todo", "clarify", "web", "search", "session_search")
ASK = "ask"

# Providers hermes can reach without base_url, and the key each needs.
PROVIDER_KEYS = {
    "openrouter": "OPENROUTER_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "openai": "OPENAI_API_KEY",
    "nous": "NOUS_API_KEY",
}


def default_home() -> Path:
    """onedoor's data directory for hermes: $ONEDOOR_DATA_DIR/hermes or ~/.local/share/onedoor/hermes."""
    base = os.environ.get("ONEDOOR_DATA_DIR")
    if base:
        return Path(base).expanduser() / "hermes"
    xdg = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(xdg) / "onedoor" / "hermes"


@dataclass
class HermesOptions:
    model: str = field(metadata={"help": "model name, e.g. the name your OpenAI-compatible server serves"})
    base_url: str = field(default="", metadata={"help": "OpenAI-compatible endpoint (vLLM, Ollama, llama.cpp…)"})
    api_key: str = field(default="", metadata={"help": "API key for base_url or the provider", "secret": True})
    provider: str = field(default="", metadata={"help": "hermes provider when there is no base_url (openrouter, anthropic…)"})
    toolsets: list[str] = field(default_factory=list, metadata={
        "help": "allow-list of hermes toolsets, comma-separated (default: none; 'todo' is in-memory)"})
    allow_machine_tools: bool | Literal["ask"] = field(default=False, metadata={
        "help": "toolsets that act on this machine (terminal, file, code_execution, browser…): false, true, "
                "or ask (every call of such a tool asks a person first; no answer means no)"})
    home: str = field(default="", metadata={"help": "hermes home directory (default: onedoor's data dir /hermes)"})
    max_iterations: int = field(default=20, metadata={"help": "most model calls in one run"})
    context_length: int = field(default=128_000, metadata={"help": "the model's context window (saves probing)"})
    system_prompt: str = field(default="", metadata={"help": "extra system prompt for every run"})
    preflight: bool = field(default=False, metadata={"help": "at start-up, check base_url answers GET /models"})
    vision: bool | Literal["auto"] = field(default="auto", metadata={
        "help": "does the model read images: true (images go to it as they are), false (images are refused), or "
                "auto (hermes decides from its config and models.dev, and describes images to a model without vision)"})
    models: list[str] = field(default_factory=list, metadata={
        "help": "other models a client may switch to (e.g. ACP's model picker), comma-separated: a model name on the "
                "same endpoint or provider, or provider:model for another hermes provider"})
    # Filled in by validation: the tools of the chosen toolsets that act on this machine.
    machine_tools: frozenset[str] = field(default=frozenset(), init=False, repr=False)

    def __post_init__(self) -> None:
        self.model = self.model.strip()
        self.base_url = self.base_url.strip().rstrip("/")
        self.provider = self.provider.strip()
        if not self.model:
            raise ValueError("model must not be empty")
        if self.max_iterations < 1:
            raise ValueError("max_iterations must be 1 or more")
        if self.context_length < 1024:
            raise ValueError("context_length must be at least 1024")
        if self.base_url:
            parsed = urlparse(self.base_url)
            if parsed.scheme not in ("http", "https") or not parsed.netloc:
                raise ValueError(f"base_url must be an http(s) URL, got {self.base_url!r}")
        elif not self.provider:
            raise ValueError("give base_url (an OpenAI-compatible server) or provider (e.g. openrouter)")
        else:
            env = PROVIDER_KEYS.get(self.provider)
            if env and not self.api_key and not os.environ.get(env):
                raise ValueError(f"missing key for provider {self.provider!r}: set {env} or pass -o api_key=…")
        self.allow_machine_tools = machine_tools_mode(self.allow_machine_tools)
        self.vision = vision_mode(self.vision)
        self.models = list(dict.fromkeys(m.strip() for m in self.models if m.strip() and m.strip() != self.model))
        self.toolsets = [t.strip() for t in self.toolsets if t.strip()]
        self.home = str(Path(self.home).expanduser().resolve() if self.home else default_home())
        touching, self.machine_tools = _machine_reach(self.toolsets, self.home)
        if touching and not self.allow_machine_tools:
            raise ValueError(
                f"toolset(s) {', '.join(touching)} act on this machine; add -o allow_machine_tools=true to allow "
                "them, or -o allow_machine_tools=ask to ask a person before each call"
            )
        if self.models:
            from .models import resolve

            for choice in self.models:
                resolve(self, choice)
        if self.preflight and self.base_url:
            _check_reachable(self.base_url, self.api_key)


def machine_tools_mode(value: Any) -> bool | Literal["ask"]:
    """``allow_machine_tools`` as True, False or "ask" (text as in flags and files too)."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text == ASK:
        return "ask"
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off", ""):
        return False
    raise ValueError(f"allow_machine_tools must be true, false or ask, got {value!r}")


def vision_mode(value: Any) -> bool | Literal["auto"]:
    """``vision`` as True, False or "auto" (text as in flags and files too)."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("auto", ""):
        return "auto"
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"vision must be true, false or auto, got {value!r}")


def _machine_reach(names: list[str], home: str) -> tuple[list[str], frozenset[str]]:
    """The chosen toolsets that act on this machine, and their tools that do (names checked)."""
    if not names:
        return [], frozenset()
    os.environ["HERMES_HOME"] = home  # before any hermes module is imported
    try:
        import toolsets  # hermes-agent's registry of toolsets: a light import
    except ImportError:
        raise ValueError("hermes-agent is not installed: pip install onedoor-backend-hermes") from None
    known = set(toolsets.get_toolset_names())
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ValueError(f"unknown hermes toolset {unknown[0]!r}; known: {', '.join(sorted(known))}")

    def tools_of(sets: Any) -> set[str]:
        return {tool for name in sets if name in known for tool in toolsets.resolve_toolset(name)}

    acting = tools_of(MACHINE_TOOLSETS) - tools_of(HARMLESS_TOOLSETS)
    touching = sorted(n for n in names if n in MACHINE_TOOLSETS or tools_of([n]) & acting)
    return touching, frozenset(tools_of(names) & acting)


def _check_reachable(base_url: str, api_key: str) -> None:
    import urllib.error
    import urllib.request

    request = urllib.request.Request(f"{base_url}/models", headers={"Authorization": f"Bearer {api_key or 'none'}"})
    try:
        with urllib.request.urlopen(request, timeout=5):  # the user's own URL
            return
    except urllib.error.HTTPError:
        return  # it answered
    except (urllib.error.URLError, OSError) as exc:
        raise ValueError(f"unreachable endpoint {base_url}: {getattr(exc, 'reason', exc)}") from None
