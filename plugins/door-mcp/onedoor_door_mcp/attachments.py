"""The ``ask`` tool's ``attachments``: images, files and resources sent with the message.

Each attachment is an MCP content block (what a client may already hold, e.g. from
another tool's result), plus what a message needs that MCP's blocks lack: a file by URL,
video and documents, a file name.

==============  ===================================================================
``type``        fields
==============  ===================================================================
image, audio,   ``data`` (base64) and ``mimeType``; or ``uri``, an http(s) URL (the
video,          agent is given the URL: this server never fetches it); optional
document        ``name`` (a file name)
resource        ``resource`` ``{uri, mimeType, text | blob}`` (MCP's embedded
                resource), or ``uri`` with ``text`` (or ``data``); optional
                ``lines`` ``[first, last]`` (the part of the file it is)
resource_link   ``uri`` (a reference, never fetched), optional ``name``,
                ``mimeType``, ``title``, ``size``
text            ``text``
==============  ===================================================================

They become onedoor parts (:mod:`onedoor.content`) after the message's text. Here only
their shape is checked (ValueError, an ``isError`` result like any bad argument); the
kernel checks the rest before any run (base64, media types that lie about their bytes,
URL schemes, the size limits, what the backend takes) and the door answers its
refusal as an ``isError`` result naming the reason (``invalid``, ``too_large``,
``unsupported_content``): input the calling model can correct (MCP 2025-11-25).
"""

from __future__ import annotations

from typing import Any, Iterable

from onedoor.content import MEDIA_KINDS

KINDS = (*MEDIA_KINDS, "resource", "resource_link", "text")
FIELDS = ("type", "data", "uri", "mimeType", "name", "text", "resource", "lines", "title", "size")
STRINGS = ("data", "uri", "mimeType", "name", "text", "title")
EMBEDDED = ("uri", "mimeType", "text", "blob", "_meta")  # MCP's TextResourceContents / BlobResourceContents


def takes(accepts: Iterable[str]) -> str:
    """What the backend takes, in words for the schema's description."""
    media = sorted(kind for kind in accepts if kind in MEDIA_KINDS)
    said = f"this agent takes {', '.join(media)}" if media else "this agent takes no images, audio, video or documents"
    if "resource" not in accepts:
        said += " and only resources with text"
    return said + " (resources with text, links and text reach it as text)"


def attachments_schema(accepts: Iterable[str]) -> dict[str, Any]:
    """The ``attachments`` property of the tool's input schema."""
    return {
        "type": "array",
        "description": "Files, images or resources to send with the message, each an MCP content block: "
        "{type: image|audio|video|document, data: base64, mimeType, name} or the same with 'uri' (an http(s) URL, "
        "handed to the agent as a URL, never fetched by this server); {type: resource, resource: {uri, mimeType, "
        "text|blob}} or {type: resource, uri, text}; {type: resource_link, uri, name}. "
        f"Now {takes(accepts)}; anything else is refused before the agent runs.",
        "items": {
            "type": "object",
            "properties": {
                "type": {"type": "string", "enum": list(KINDS)},
                "data": {"type": "string", "contentEncoding": "base64", "description": "The bytes, base64."},
                "uri": {"type": "string", "description": "Where it is: an http(s) URL for media; any URI for resources."},
                "mimeType": {"type": "string"},
                "name": {"type": "string", "description": "A file name."},
                "text": {"type": "string", "description": "The text of a resource (or of a text block)."},
                "resource": {"type": "object", "description": "An MCP embedded resource: uri, mimeType, text or blob."},
                "lines": {"type": "array", "items": {"type": "integer", "minimum": 1}, "minItems": 2, "maxItems": 2,
                          "description": "A resource's first and last line in its file."},
                "title": {"type": "string"},
                "size": {"type": "integer", "minimum": 0},
            },
            "required": ["type"],
            "additionalProperties": False,
        },
    }


def to_parts(attachments: Any) -> list[dict[str, Any]]:
    """The attachments as onedoor part dicts (:func:`onedoor.content.parse_content` checks
    them further); ValueError in words for the calling model when their shape is wrong."""
    if attachments is None:
        return []
    if not isinstance(attachments, list):
        raise ValueError("'attachments' must be an array of content blocks")
    return [_part(item, f"attachments[{index}]") for index, item in enumerate(attachments)]


def _part(item: Any, where: str) -> dict[str, Any]:
    if not isinstance(item, dict):
        raise ValueError(f"{where} must be an object with a 'type'")
    unknown = sorted(set(item) - set(FIELDS))
    if unknown:
        raise ValueError(f"{where}: unknown field(s) {', '.join(map(repr, unknown[:5]))}; expected {', '.join(FIELDS)}")
    kind = item.get("type")
    if kind not in KINDS:
        raise ValueError(f"{where}: 'type' must be one of {', '.join(KINDS)}")
    for key in STRINGS:
        if item.get(key) is not None and not isinstance(item[key], str):
            raise ValueError(f"{where}: '{key}' must be a string")
    part: dict[str, Any] = {"type": kind}
    for key, to in (("data", "data"), ("uri", "uri"), ("mimeType", "media_type"), ("name", "name"), ("text", "text"),
                    ("title", "title"), ("size", "size"), ("lines", "lines")):
        if item.get(key) is not None:
            part[to] = item[key]
    if item.get("resource") is not None:
        if kind != "resource":
            raise ValueError(f"{where}: 'resource' belongs to a block of type resource")
        part.update(_embedded(item["resource"], where))
    return part


def _embedded(resource: Any, where: str) -> dict[str, Any]:
    """MCP's embedded resource contents as part fields."""
    if not isinstance(resource, dict):
        raise ValueError(f"{where}: 'resource' must be an object with uri and text or blob")
    unknown = sorted(set(resource) - set(EMBEDDED))
    if unknown:
        raise ValueError(f"{where}.resource: unknown field(s) {', '.join(map(repr, unknown[:5]))}")
    out: dict[str, Any] = {}
    for key, to in (("uri", "uri"), ("mimeType", "media_type"), ("text", "text"), ("blob", "data")):
        value = resource.get(key)
        if value is not None:
            if not isinstance(value, str):
                raise ValueError(f"{where}.resource: '{key}' must be a string")
            out[to] = value
    return out


__all__ = ["KINDS", "attachments_schema", "takes", "to_parts"]
