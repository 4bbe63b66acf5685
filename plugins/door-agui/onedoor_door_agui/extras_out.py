"""The AG-UI shapes of what a run carries besides its messages: token usage, a reply's
non-text parts (activity), and this door's metadata on events."""

from __future__ import annotations

from typing import Any, Iterable

from onedoor import ModelUsage, Part

from .content import to_agui_part

PART_ACTIVITY = "onedoor.part"  # activityType of a reply's part (an image the agent made)


def token_usage(usage: Iterable[ModelUsage]) -> list[dict[str, Any]]:
    """The kernel's usage as AG-UI ``TokenUsage`` entries, one per (provider, model):
    ``inputTokens`` / ``outputTokens`` are totals (cached input is part of the input,
    reasoning part of the output); counts the backend did not report (zero) are left out."""
    out = []
    for entry in usage:
        item: dict[str, Any] = {}
        if entry.provider:
            item["provider"] = entry.provider
        if entry.model:
            item["model"] = entry.model
        item["inputTokens"] = entry.input_tokens
        item["outputTokens"] = entry.output_tokens
        item["totalTokens"] = entry.total_tokens
        for key, value in (("reasoningTokens", entry.reasoning_tokens), ("cachedInputTokens", entry.cache_read_tokens),
                           ("cacheWriteInputTokens", entry.cache_write_tokens)):
            if value:
                item[key] = value
        out.append(item)
    return out


def part_activity(message_id: str, part: Part, reply_id: str) -> dict[str, Any]:
    """An ACTIVITY_SNAPSHOT carrying one non-text part of the reply (AG-UI's assistant
    messages hold text only; the reply's text names the part, this event carries it)."""
    return {
        "type": "ACTIVITY_SNAPSHOT",
        "messageId": message_id,
        "activityType": PART_ACTIVITY,
        "content": {"part": to_agui_part(part), "replyMessageId": reply_id},
    }


def with_version(event: dict[str, Any], version: int) -> dict[str, Any]:
    """``event`` carrying the thread's state version (``metadata.onedoor.stateVersion``)."""
    event["metadata"] = {"onedoor": {"stateVersion": version}}
    return event


__all__ = ["PART_ACTIVITY", "part_activity", "token_usage", "with_version"]
