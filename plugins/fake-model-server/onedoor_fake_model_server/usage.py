"""The token usage the fake model reports: small numbers a test can work out from the request.

- ``prompt_tokens``: for every message, the words of its text (string content, or its
  ``text`` parts) plus :data:`MEDIA_TOKENS` for each other content part (an image, audio,
  a file); tool-call arguments do not count.
- ``prompt_tokens_details.cached_tokens``: the tokens of every message but the last (the
  prefix a provider would have cached from the previous request).
- ``completion_tokens``: one per streamed text or reasoning chunk, 10 per tool call.
- ``completion_tokens_details.reasoning_tokens``: one per reasoning chunk (part of
  ``completion_tokens``, as OpenAI counts them).

:func:`usage_for` computes it from a request body and its :class:`~.script.Plan`;
``RecordedRequest.usage`` is what the server sent.
"""

from __future__ import annotations

from typing import Any

MEDIA_TOKENS = 85  # what one image, audio clip or file counts as


def content_parts(content: Any) -> list[dict[str, Any]]:
    """The parts of a message's content when it is a list of parts (none for a string)."""
    if isinstance(content, list):
        return [p for p in content if isinstance(p, dict)]
    return []


def message_tokens(message: Any) -> int:
    """What one message counts as (see the module docstring)."""
    if not isinstance(message, dict):
        return 0
    content = message.get("content")
    if isinstance(content, str):
        return len(content.split())
    tokens = 0
    for part in content_parts(content):
        if part.get("type") == "text":
            tokens += len(str(part.get("text") or "").split())
        else:
            tokens += MEDIA_TOKENS
    return tokens


def usage_for(body: dict[str, Any], plan: Any) -> dict[str, Any]:
    """The ``usage`` object of the reply to ``body`` that follows ``plan``."""
    counts = [message_tokens(m) for m in body.get("messages") or []]
    prompt = sum(counts)
    cached = sum(counts[:-1])
    reasoning = len(plan.reasoning)
    completion = len(plan.text) + reasoning + 10 * len(plan.tool_calls)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": cached, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": reasoning, "audio_tokens": 0},
    }


__all__ = ["MEDIA_TOKENS", "content_parts", "message_tokens", "usage_for"]
