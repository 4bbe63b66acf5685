"""AG-UI content parts <-> onedoor's parts (:mod:`onedoor.content`).

In: a user or tool message's ``content`` list. AG-UI 1.0 parts become onedoor part
dicts, which the kernel checks (base64, media types, sizes, what the backend takes):

=========================================  ==============================================
AG-UI part                                 onedoor part
=========================================  ==============================================
``text``                                   ``text``
``image|audio|video|document`` with        the same kind with inline ``data`` (base64) and
``source: {type: "data", value, mimeType}``  ``media_type``
... with ``source: {type: "url", value}``  the same kind with ``uri`` (http(s); a ``data:``
                                           URL becomes inline bytes)
... with ``source: {type: "file"}``        refused (415 ``unsupported_content``): a
                                           provider's file handle this server cannot read
``metadata.filename``                      ``name`` (sanitised); the rest of ``metadata``
                                           is kept as the part's metadata
legacy ``binary`` (0.x)                    converted first, as the official client does:
                                           its kind from ``mimeType``, ``data`` or ``url``
                                           as the source, ``filename`` into metadata; one
                                           with only an ``id`` is refused (415)
=========================================  ==============================================

Out (:func:`to_agui_parts`): the reverse, so a thread's history and a MESSAGES_SNAPSHOT
hold the parts a client sent. Kinds AG-UI has no part for (resources, links, JSON data:
what other doors may keep in a thread) become text parts, as :func:`onedoor.content.text_of`
writes them. A part's ``id`` is not kept.
"""

from __future__ import annotations

import base64
from typing import Any, Iterable

from onedoor import RunRefused
from onedoor.content import MEDIA_KINDS, Part, text_of

AGUI_MEDIA = frozenset(MEDIA_KINDS)  # image, audio, video, document: the same names on both sides
MAX_LEGACY_SCAN = 10_000  # parts looked at for legacy ``binary`` ones (the body limit bounds it anyway)


class PartError(ValueError):
    """An AG-UI part that is not well-formed (the door answers 422)."""


def modernize(data: dict[str, Any]) -> None:
    """Rewrite legacy ``binary`` parts of the input's messages, in place, as AG-UI 1.0 parts
    (before validation: the 1.0 model refuses them)."""
    messages = data.get("messages")
    if not isinstance(messages, list):
        return
    seen = 0
    for message in messages:
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, list):
            continue
        for index, part in enumerate(content):
            seen += 1
            if seen > MAX_LEGACY_SCAN:
                return
            if isinstance(part, dict) and part.get("type") == "binary":
                content[index] = _from_binary(part)


def _from_binary(part: dict[str, Any]) -> dict[str, Any]:
    mime = part.get("mimeType")
    if not isinstance(mime, str) or not mime:
        raise PartError("a binary part needs a mimeType")
    family = mime.split("/", 1)[0]
    kind = family if family in ("image", "audio", "video") else "document"
    if part.get("data") is not None:
        source = {"type": "data", "value": part["data"], "mimeType": mime}
    elif part.get("url") is not None:
        source = {"type": "url", "value": part["url"], "mimeType": mime}
    else:
        raise RunRefused("unsupported_content", "a binary part with only an id names a file this server cannot read: "
                         "send its data or a URL")
    out: dict[str, Any] = {"type": kind, "source": source}
    if isinstance(part.get("filename"), str):
        out["metadata"] = {"filename": part["filename"]}
    return out


def from_agui(content: Any) -> str | list[dict[str, Any]]:
    """A validated message's content (a string, or a list of ag_ui part models) as onedoor's:
    the string, or a list of onedoor part dicts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return [_part(p) for p in content]


def _part(part: Any) -> dict[str, Any]:
    kind = part.type
    if kind == "text":
        return {"type": "text", "text": part.text}
    source = part.source
    out: dict[str, Any] = {"type": kind}
    mime = getattr(source, "mime_type", None)
    if source.type == "data":
        out["data"] = source.value
    elif source.type == "url":
        out["uri"] = source.value
    else:
        raise RunRefused("unsupported_content", f"a {kind} part from a provider's file handle ({source.type!r}) "
                         "cannot be read by this server: send its data or a URL")
    if mime is not None:
        out["media_type"] = mime
    metadata = part.metadata
    if metadata is not None:
        if not isinstance(metadata, dict):
            raise PartError(f"a {kind} part's metadata must be an object")
        metadata = dict(metadata)
        filename = metadata.pop("filename", None)
        if isinstance(filename, str):
            out["name"] = filename
        elif filename is not None:
            raise PartError("metadata.filename must be a string")
        if metadata:
            out["metadata"] = metadata
    return out


def to_agui_part(part: Part) -> dict[str, Any]:
    """One onedoor part as an AG-UI part (a text part for the kinds AG-UI has none for)."""
    if part.kind == "text":
        return {"type": "text", "text": part.text or ""}
    if part.kind not in AGUI_MEDIA or (part.data is None and part.uri is None):
        return {"type": "text", "text": text_of([part])}
    if part.data is not None:
        source: dict[str, Any] = {"type": "data", "value": base64.b64encode(part.data).decode("ascii"),
                                  "mimeType": part.media_type or "application/octet-stream"}
    else:
        source = {"type": "url", "value": part.uri}
        if part.media_type:
            source["mimeType"] = part.media_type
    out: dict[str, Any] = {"type": part.kind, "source": source}
    metadata = dict(part.metadata)
    if part.name:
        metadata["filename"] = part.name
    if metadata:
        out["metadata"] = metadata
    return out


def to_agui_parts(parts: Iterable[Part]) -> list[dict[str, Any]]:
    return [to_agui_part(p) for p in parts]


def tool_content(text: str, parts: Iterable[Part]) -> str | list[dict[str, Any]]:
    """A tool result's AG-UI content: its text, or (a result with parts) a text part with it
    followed by the parts."""
    extra = [to_agui_part(p) for p in parts if p.kind != "text"]
    if not extra:
        return text
    return [{"type": "text", "text": text}, *extra] if text else extra


__all__ = ["PartError", "from_agui", "modernize", "to_agui_part", "to_agui_parts", "tool_content"]
