"""The agent's output parts (``ReplyPart``, ``ToolFinished.parts``) as MCP content blocks.

=======================  ===============================================================
part                     block
=======================  ===============================================================
image, audio (inline)    ``image`` / ``audio`` (``data``, ``mimeType``; the file name in
                         ``_meta["onedoor/name"]``)
video, document (inline) ``resource`` with ``blob`` (MCP has no block of their own)
any media by URL         ``resource_link`` (the URL; the server never fetches it)
resource                 ``resource`` with ``text`` or ``blob`` (lines in
                         ``_meta["onedoor/lines"]``)
resource_link            ``resource_link``
data (JSON)              ``resource``, ``application/json`` text
text                     ``text``
=======================  ===============================================================

A part without a URI of its own (inline video, documents, JSON data) is named
``onedoor://runs/{run_id}/parts/{n}`` (with its file name after it): an identifier, not
a resource this server serves.
"""

from __future__ import annotations

import base64
import json
from typing import Any
from urllib.parse import quote

from onedoor.content import Part

NAME_META = "onedoor/name"
LINES_META = "onedoor/lines"


def part_uri(run_id: str, index: int, name: str | None) -> str:
    base = f"onedoor://runs/{quote(run_id, safe='')}/parts/{index}"
    return f"{base}/{quote(name, safe='')}" if name else base


def block_of(part: Part, run_id: str, index: int) -> dict[str, Any]:
    """The MCP content block (wire form) of one output part."""
    kind = part.kind
    if kind == "text":
        return {"type": "text", "text": part.text or ""}
    if kind == "resource_link" or (part.uri is not None and part.data is None and part.text is None):
        return _link(part)
    if kind in ("image", "audio") and part.data is not None and part.media_type:
        block: dict[str, Any] = {"type": kind, "data": _b64(part.data), "mimeType": part.media_type}
        if part.name:
            block["_meta"] = {NAME_META: part.name}
        return block
    uri = part.uri if kind == "resource" and part.uri else part_uri(run_id, index, part.name)
    contents: dict[str, Any] = {"uri": uri}
    if kind == "data":
        contents.update(mimeType=part.media_type or "application/json", text=json.dumps(part.value, ensure_ascii=False))
    elif part.text is not None:
        contents.update(mimeType=part.media_type or "text/plain", text=part.text)
    else:
        contents.update(mimeType=part.media_type or "application/octet-stream", blob=_b64(part.data or b""))
    if part.lines is not None:
        contents["_meta"] = {LINES_META: list(part.lines)}
    return {"type": "resource", "resource": contents}


def _link(part: Part) -> dict[str, Any]:
    uri = part.uri or ""
    block: dict[str, Any] = {"type": "resource_link", "uri": uri, "name": part.name or uri.rstrip("/").rsplit("/", 1)[-1] or uri}
    for key, value in (("mimeType", part.media_type), ("title", part.title), ("size", part.size)):
        if value is not None:
            block[key] = value
    return block


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


__all__ = ["LINES_META", "NAME_META", "block_of", "part_uri"]
