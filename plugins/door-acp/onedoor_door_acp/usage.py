"""A run's token usage (:mod:`onedoor.usage`) the ACP way.

* The prompt response's ``usage`` (an *unstable* part of ACP: ``PromptResponse.usage`` in
  agent-client-protocol 0.12.1 and in schema.unstable.json of @agentclientprotocol/sdk
  2.4.0): the turn's ``totalTokens``, ``inputTokens``, ``outputTokens`` summed over its
  models, ``thoughtTokens``, ``cachedReadTokens`` and ``cachedWriteTokens`` when there are
  any. Per model, with the cost where known, in the response's ``_meta`` under
  :data:`META_KEY` (onedoor's usage JSON).
* ``usage_update`` (stable): how full the context window is (``used`` of ``size``) and the
  session's cost so far. Sent only when the window's size is known (the ``context_window``
  option): ACP requires ``size`` and a made-up one would mislead the editor's gauge.
  ``used`` is the turn's input plus output tokens: the context the model holds now when
  the turn made one model request, more than that after a tool loop (each request's input
  is counted).
"""

from __future__ import annotations

from typing import Any, Iterable, Sequence

from onedoor.usage import ModelUsage, usage_from_json, usage_to_json

META_KEY = "onedoor.dev/usage"


def prompt_usage(usage: Sequence[ModelUsage]) -> dict[str, Any] | None:
    """``PromptResponse.usage`` for a run's usage (None when it reported none)."""
    if not usage:
        return None
    inputs = sum(u.input_tokens for u in usage)
    outputs = sum(u.output_tokens for u in usage)
    out: dict[str, Any] = {"totalTokens": inputs + outputs, "inputTokens": inputs, "outputTokens": outputs}
    for key, name in (("thoughtTokens", "reasoning_tokens"), ("cachedReadTokens", "cache_read_tokens"),
                      ("cachedWriteTokens", "cache_write_tokens")):
        count = sum(getattr(u, name) for u in usage)
        if count:
            out[key] = count
    return out


def prompt_reply(stop_reason: str, usage: Sequence[ModelUsage]) -> dict[str, Any]:
    """The prompt's response: its stop reason, and the turn's usage when it has one."""
    reply: dict[str, Any] = {"stopReason": stop_reason}
    summed = prompt_usage(usage)
    if summed is not None:
        reply["usage"] = summed
        reply["_meta"] = {META_KEY: usage_to_json(usage)}
    return reply


def session_cost(history: Iterable[dict[str, Any]]) -> tuple[float, str] | None:
    """The cost of every turn of a history (``usage`` on its messages), if the turns have
    one and in one currency."""
    total, currency, seen = 0.0, "", False
    for message in history:
        try:
            entries = usage_from_json(message.get("usage")) if isinstance(message, dict) else ()
        except ValueError:
            continue
        for entry in entries:
            if entry.cost is None:
                continue
            if seen and entry.currency != currency:
                return None
            total, currency, seen = total + entry.cost, entry.currency, True
    return (total, currency) if seen and currency else None


def usage_update(usage: Sequence[ModelUsage], size: int, cost: tuple[float, str] | None) -> dict[str, Any]:
    used = sum(u.input_tokens + u.output_tokens for u in usage)
    update: dict[str, Any] = {"sessionUpdate": "usage_update", "used": used, "size": size}
    if cost is not None:
        update["cost"] = {"amount": cost[0], "currency": cost[1]}
    return update


__all__ = ["META_KEY", "prompt_reply", "prompt_usage", "session_cost", "usage_update"]
