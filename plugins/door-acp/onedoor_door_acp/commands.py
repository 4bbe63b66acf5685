"""Slash commands the door answers itself, without the model.

Advertised to the editor with ``available_commands_update``. A ``/word`` that is not
one of these goes to the agent unchanged.
"""

from __future__ import annotations

from typing import Any

COMMANDS: list[dict[str, Any]] = [
    {"name": "help", "description": "list the commands this agent answers itself"},
    {"name": "reset", "description": "forget this session's conversation (keeps the session)"},
    {"name": "backend", "description": "show or switch the backend that answers",
     "input": {"hint": "backend name"}},
    {"name": "model", "description": "show or switch the model that answers (the model picker does the same)",
     "input": {"hint": "model id"}},
    {"name": "version", "description": "show onedoor, door, protocol and backend versions"},
]
NAMES = {c["name"] for c in COMMANDS}


def parse(text: str) -> tuple[str, str] | None:
    """(command, argument) if ``text`` is one of our commands, else None."""
    stripped = text.strip()
    if not stripped.startswith("/"):
        return None
    word, _, rest = stripped[1:].partition(" ")
    if word not in NAMES or "\n" in word:
        return None
    return word, rest.strip()


def help_text() -> str:
    lines = ["Commands answered by onedoor itself (anything else goes to the agent):"]
    for c in COMMANDS:
        hint = f" <{c['input']['hint']}>" if "input" in c else ""
        lines.append(f"  /{c['name']}{hint}: {c['description']}")
    return "\n".join(lines)


async def run(door: Any, session: Any, name: str, arg: str) -> str:
    """Execute a command; return the text to show."""
    if name == "help":
        return help_text()
    if name == "reset":
        count = await door.sessions.reset(session)
        return f"Conversation reset ({count} messages forgotten)."
    if name == "backend":
        choices = door.backends.choices()
        if not arg:
            return f"Backend: {session.backend}. Available: {', '.join(choices)}. Switch with /backend NAME."
        await door.switch_backend(session, arg)
        return f"Backend switched to {arg}."
    if name == "model":
        return await _model(door, session, arg)
    if name == "version":
        from importlib.metadata import PackageNotFoundError, version

        def v(dist: str) -> str:
            try:
                return version(dist)
            except PackageNotFoundError:
                return "?"

        return (
            f"onedoor {v('onedoor')}, onedoor-door-acp {v('onedoor-door-acp')}, "
            f"agent-client-protocol {v('agent-client-protocol')} (ACP protocol version 1), backend {session.backend}"
        )
    return f"unknown command /{name}"


async def _model(door: Any, session: Any, arg: str) -> str:
    models = await door.backends.models(session.backend)
    if not arg:
        if not models:
            return f"Backend {session.backend} offers no model choice. Switch the backend with /backend NAME."
        ids = ", ".join(m["id"] for m in models)
        return f"Model: {await door.backends.model_of(session)}. Available: {ids}. Switch with /model ID."
    await door.switch_model(session, arg)
    return f"Model switched to {arg}."
