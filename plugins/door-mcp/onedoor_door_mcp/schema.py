"""The ``ask`` tool's input and output schemas.

``structuredContent`` of a successful call: ``reply``; ``usage`` (token usage per model);
``thread``, ``state`` and ``state_version`` on a stored thread (``state`` also when the
agent set a state on a call without one); ``answers`` when the agent asked questions.
"""

from __future__ import annotations

from typing import Any, Iterable

from .answers import ANSWERS_SCHEMA
from .attachments import attachments_schema
from .threads import THREAD_PROPERTIES
from .threads import output_schema as thread_output_schema

ROLES = ["user", "assistant", "system"]

USAGE_SCHEMA: dict[str, Any] = {
    "type": "array",
    "description": "Token usage of the run, one entry per model. input_tokens and output_tokens are totals: cached "
    "input is part of the input, reasoning part of the output. The same list is in the result's _meta['onedoor/usage'].",
    "items": {
        "type": "object",
        "properties": {
            "model": {"type": "string"},
            "provider": {"type": "string"},
            **{name: {"type": "integer", "minimum": 0} for name in (
                "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens", "requests")},
            "cost": {"type": "number", "description": "In 'currency', where the model's price is known."},
            "currency": {"type": "string"},
        },
        "required": ["model", "provider", "input_tokens", "output_tokens"],
    },
}

STATE_PROPERTIES: dict[str, Any] = {
    "state": {
        "type": "object",
        "description": "The thread's shared state after the call, as stored (the same document every door sees; "
        "readable as the resource onedoor://threads/{thread}/state). Also present when the agent set a state "
        "on a call without a thread.",
    },
    "state_version": {"type": "integer", "minimum": 0, "description": "The stored state's version (on a thread)."},
}


def input_schema(accepts: Iterable[str] = ()) -> dict[str, Any]:
    """The tool's arguments; ``accepts``: the content kinds the backend takes besides text."""
    return {
        "type": "object",
        "properties": {
            "message": {
                "type": "string",
                "minLength": 1,
                "description": "What to ask or tell the agent, in plain language.",
            },
            "attachments": attachments_schema(accepts),
            "history": {
                "type": "array",
                "description": "Earlier turns of this conversation, oldest first, to continue it. "
                "Omit for a fresh conversation.",
                "items": {
                    "type": "object",
                    "properties": {
                        "role": {"type": "string", "enum": ROLES},
                        "content": {"type": "string"},
                    },
                    "required": ["role", "content"],
                },
            },
            **THREAD_PROPERTIES,
        },
        "required": ["message"],
        "additionalProperties": False,
    }


def output_schema() -> dict[str, Any]:
    """The structured content of a successful call (see the module docstring)."""
    schema = thread_output_schema()
    schema["properties"]["usage"] = USAGE_SCHEMA
    schema["properties"].update(STATE_PROPERTIES)
    schema["properties"]["answers"] = ANSWERS_SCHEMA
    return schema


__all__ = ["ROLES", "STATE_PROPERTIES", "USAGE_SCHEMA", "input_schema", "output_schema"]
