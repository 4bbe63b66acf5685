"""pydantic-ai files in what the agent gives back (a tool's result, a file the model made)
as onedoor parts."""

from __future__ import annotations

from typing import Any

from onedoor.content import Part

_URL_KINDS = {"image-url": "image", "audio-url": "audio", "video-url": "video", "document-url": "document"}


def part_of_file(item: Any) -> Part | None:
    """A ``BinaryContent`` or ``*Url`` as a media part (None for anything else)."""
    kind = getattr(item, "kind", None)
    if kind in _URL_KINDS and isinstance(getattr(item, "url", None), str) and item.url.startswith(("http://", "https://")):
        return Part.media(_URL_KINDS[kind], _media_type(item), uri=item.url, name=_name(item))
    data = getattr(item, "data", None)
    if kind != "binary" or not isinstance(data, bytes):
        return None
    for flag, media in (("is_image", "image"), ("is_audio", "audio"), ("is_video", "video"), ("is_document", "document")):
        if getattr(item, flag, False):
            return Part.media(media, item.media_type, data=data, name=_name(item))
    return None


def parts_of_result(content: Any) -> tuple[Part, ...]:
    """The files in a tool's result (it may be one, or a list holding some)."""
    items = content if isinstance(content, (list, tuple)) else [content]
    found = (part_of_file(item) for item in items)
    return tuple(part for part in found if part is not None)


def _media_type(item: Any) -> str:
    try:
        return str(item.media_type)
    except Exception:  # noqa: BLE001 - a URL whose type pydantic-ai cannot tell
        return "application/octet-stream"


def _name(item: Any) -> str | None:
    try:
        return str(item.identifier) or None
    except Exception:  # noqa: BLE001
        return None


__all__ = ["part_of_file", "parts_of_result"]
