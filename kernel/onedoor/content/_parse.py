"""Checking what a client sent as content (see :mod:`onedoor.content`)."""

from __future__ import annotations

import binascii
import math
import re
import unicodedata
from dataclasses import replace
from typing import Any, Iterable, Sequence

from ._model import KINDS, MEDIA_KINDS, ContentError, ContentLimits, Part, text_of

_MEDIA_TYPE = re.compile(r"[a-z0-9][a-z0-9!#$&^_.+-]{0,126}/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}", re.ASCII)
_URL_SCHEMES = ("http://", "https://")
_FAMILY = {"image": ("image/",), "audio": ("audio/",), "video": ("video/",)}
# first bytes of the common types: a part that claims one of these must start so
_MAGIC: dict[str, tuple[bytes, ...]] = {
    "image/png": (b"\x89PNG\r\n\x1a\n",),
    "image/jpeg": (b"\xff\xd8\xff",),
    "image/gif": (b"GIF87a", b"GIF89a"),
    "image/webp": (b"RIFF",),
    "application/pdf": (b"%PDF-",),
    "audio/wav": (b"RIFF",),
    "audio/x-wav": (b"RIFF",),
    "audio/mpeg": (b"ID3", b"\xff\xfb", b"\xff\xf3", b"\xff\xf2"),
}


def parse_content(value: Any, limits: ContentLimits | None = None) -> tuple[str, tuple[Part, ...]]:
    """``(text, parts)`` of a message's content: a string (``parts`` empty), or a list of
    parts (JSON objects or :class:`Part`), checked under ``limits``; ContentError otherwise."""
    if isinstance(value, str):
        return value, ()
    if not isinstance(value, (list, tuple)):
        raise ContentError("invalid", "content must be text or a list of parts")
    limits = limits or ContentLimits()
    if len(value) > limits.max_parts:
        raise ContentError("too_large", f"a message holds at most {limits.max_parts} parts; got {len(value)}")
    parts = tuple(_parse_part(item, limits, index) for index, item in enumerate(value))
    total = sum(p.byte_size for p in parts)
    if total > limits.max_content_bytes:
        raise ContentError("too_large", f"the message's parts hold {total:,} bytes; the limit is {limits.max_content_bytes:,}")
    if all(p.kind == "text" for p in parts):
        return "".join(p.text or "" for p in parts), ()
    return text_of(parts), parts


def check_parts(parts: Sequence[Part], limits: ContentLimits | None = None) -> tuple[Part, ...]:
    """Parts a door built itself (or a backend returned), checked as :func:`parse_content` checks."""
    return parse_content(list(parts), limits)[1] or tuple(parts)


def _parse_part(item: Any, limits: ContentLimits | None, index: int) -> Part:
    where = f"part {index}"
    if isinstance(item, Part):
        return _checked(item, limits, where)
    if not isinstance(item, dict):
        raise ContentError("invalid", f"{where} must be an object with a type")
    kind = item.get("type")
    if kind not in KINDS:
        raise ContentError("unsupported", f"{where}: unknown part type {str(kind)[:40]!r}; expected one of {', '.join(KINDS)}")
    data = _decode_base64(item.get("data"), where) if item.get("data") is not None else None
    lines = item.get("lines")
    if lines is not None:
        if (not isinstance(lines, (list, tuple)) or len(lines) != 2 or not all(isinstance(n, int) and not isinstance(n, bool)
                                                                               for n in lines)):
            raise ContentError("invalid", f"{where}: lines must be [first, last]")
        lines = (lines[0], lines[1])
    metadata = item.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise ContentError("invalid", f"{where}: metadata must be an object")
    part = Part(
        kind, text=_string(item, "text", where), data=data, uri=_string(item, "uri", where) or _string(item, "url", where),
        media_type=_string(item, "media_type", where) or _string(item, "mimeType", where), name=_string(item, "name", where),
        value=item.get("value"), lines=lines, title=_string(item, "title", where), size=_size(item, where), metadata=metadata,
    )
    return _checked(part, limits, where)


def _string(item: dict[str, Any], key: str, where: str) -> str | None:
    value = item.get(key)
    if value is not None and not isinstance(value, str):
        raise ContentError("invalid", f"{where}: {key} must be a string")
    return value


def _size(item: dict[str, Any], where: str) -> int | None:
    value = item.get("size")
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
        raise ContentError("invalid", f"{where}: size must be a whole number of bytes")
    return value


def _decode_base64(value: Any, where: str) -> bytes:
    if not isinstance(value, str):
        raise ContentError("invalid", f"{where}: data must be a base64 string")
    try:
        # on the str itself (ASCII, else ValueError): no bytes copy of the text first
        return binascii.a2b_base64(value, strict_mode=True)
    except (binascii.Error, ValueError):
        raise ContentError("invalid", f"{where}: data is not valid base64") from None


def _checked(part: Part, limits: ContentLimits | None, where: str) -> Part:
    kind = part.kind
    if kind not in KINDS:
        raise ContentError("unsupported", f"{where}: unknown part type {kind!r}")
    if kind == "text":
        if part.text is None:
            raise ContentError("invalid", f"{where}: a text part needs text")
        return part
    if part.media_type is not None:
        media_type = part.media_type.strip().lower().split(";")[0].strip()
        if not _MEDIA_TYPE.fullmatch(media_type):
            raise ContentError("invalid", f"{where}: {part.media_type[:60]!r} is not a media type")
        part = replace(part, media_type=media_type)
    part = _KIND_CHECKS.get(kind, _checked_media)(part, where)
    if part.name is not None:
        part = replace(part, name=safe_name(part.name))
    if limits is not None:
        _within(part, limits, where)
    return part


def _checked_resource(part: Part, where: str) -> Part:
    if not part.uri or (part.text is None) == (part.data is None):
        raise ContentError("invalid", f"{where}: a resource needs a uri and either text or data")
    if part.lines is not None and not 1 <= part.lines[0] <= part.lines[1]:
        raise ContentError("invalid", f"{where}: lines must be 1 <= first <= last")
    return part


def _checked_link(part: Part, where: str) -> Part:
    if not part.uri:
        raise ContentError("invalid", f"{where}: a resource link needs a uri")
    return part


def _checked_data(part: Part, where: str) -> Part:
    _check_json(part.value, where)
    return part if part.media_type is not None else replace(part, media_type="application/json")


def _check_json(value: Any, where: str, max_depth: int = 64) -> None:
    """A data part's value: JSON values only, nested at most ``max_depth`` deep."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > max_depth:
            raise ContentError("invalid", f"{where}: the data is nested more than {max_depth} deep")
        if isinstance(item, dict):
            if not all(isinstance(k, str) for k in item):
                raise ContentError("invalid", f"{where}: data object keys must be strings")
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend((v, depth + 1) for v in item)
        elif not (item is None or isinstance(item, (str, int, float, bool))):
            raise ContentError("invalid", f"{where}: data must be JSON (got {type(item).__name__})")
        elif isinstance(item, float) and not math.isfinite(item):
            raise ContentError("invalid", f"{where}: data numbers must be finite")


def _checked_media(part: Part, where: str) -> Part:
    kind = part.kind
    if (part.data is None) == (part.uri is None):
        raise ContentError("invalid", f"{where}: {kind} needs either data (base64) or a url, not both")
    if part.uri is not None and part.uri.startswith("data:"):
        media_type, data = _data_url(part.uri, where)
        part = replace(part, uri=None, data=data, media_type=part.media_type or media_type)
    elif part.uri is not None and not part.uri.startswith(_URL_SCHEMES):
        raise ContentError("invalid", f"{where}: a {kind} url must be http(s) or data: (got {part.uri[:40]!r})")
    if part.media_type is None:
        if part.data is not None:
            raise ContentError("invalid", f"{where}: inline {kind} data needs a media_type")
    elif kind in _FAMILY and not part.media_type.startswith(_FAMILY[kind]):
        raise ContentError("invalid", f"{where}: a {kind} part cannot be {part.media_type}")
    elif kind == "document" and part.media_type.startswith(("image/", "audio/", "video/")):
        raise ContentError("invalid", f"{where}: a document cannot be {part.media_type}; send it as its own kind")
    if part.data is not None and part.media_type in _MAGIC and not part.data.startswith(_MAGIC[part.media_type]):
        raise ContentError("invalid", f"{where}: the bytes are not {part.media_type} (the media type does not match them)")
    return part


_KIND_CHECKS = {"resource": _checked_resource, "resource_link": _checked_link, "data": _checked_data}  # else media


def _data_url(uri: str, where: str) -> tuple[str | None, bytes]:
    head, sep, payload = uri[5:].partition(",")
    if not sep or not head.endswith(";base64"):
        raise ContentError("invalid", f"{where}: a data: url must be base64 (data:TYPE;base64,...)")
    return head[: -len(";base64")] or None, _decode_base64(payload, where)


def _within(part: Part, limits: ContentLimits, where: str) -> None:
    size = part.byte_size
    if size > limits.max_part_bytes:
        raise ContentError("too_large", f"{where} holds {size:,} bytes; the limit is {limits.max_part_bytes:,}")
    if part.kind in MEDIA_KINDS and part.media_type is not None and not media_type_allowed(part.media_type, limits.media_types):
        raise ContentError("unsupported", f"{where}: {part.media_type} is not a media type this server takes "
                           f"({', '.join(limits.media_types)})")


def media_type_allowed(media_type: str, patterns: Iterable[str]) -> bool:
    family = media_type.split("/")[0] + "/*"
    return any(p in ("*/*", "*", media_type, family) for p in patterns)


def safe_name(name: str, limit: int = 200) -> str:
    """A file name a client sent, made harmless: no directories, no control characters, no
    leading dots, at most ``limit`` characters (``file`` when nothing is left)."""
    base = re.split(r"[/\\]", name)[-1]
    cleaned = "".join(c for c in unicodedata.normalize("NFC", base) if unicodedata.category(c)[0] != "C")
    cleaned = cleaned.strip().lstrip(".").strip()
    return cleaned[:limit] or "file"


def part_from_dict(data: Any) -> Part:
    """A part from its JSON form (``Part.to_dict``), checked (ContentError), without the
    server's limits: what a store or another server's journal holds."""
    return _parse_part(data, None, 0)


__all__ = ["check_parts", "media_type_allowed", "parse_content", "part_from_dict", "safe_name"]
