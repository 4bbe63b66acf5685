"""ACP content blocks and onedoor parts (:mod:`onedoor.content`), both ways.

In: ``text``, ``image``, ``audio``, ``resource`` (embedded text or blob) and
``resource_link`` blocks become part dicts for ``kernel.run``, which checks them under
its limits and refuses what the backend cannot take. A ``resource_link`` to a ``file://``
URI is read through the editor (``fs/read_text_file``) when the client declared
``fs.readTextFile``, a ``#L5-L10`` (or Zed's ``#L5:10``) range sent as ``line`` and
``limit``: the agent never reads its own disk. A file outside the session's directories
(its cwd and additional directories) is refused; without the capability, or for any
other scheme, a link stays a link (the backend is given its URI).

Out: a onedoor :class:`~onedoor.content.Part` as an ACP content block: images and audio
inline, resources embedded, links and media by URL as ``resource_link``; what ACP has
no block for (inline video or documents, JSON data) is named as text.
"""

from __future__ import annotations

import base64
import os
import posixpath
import re
from typing import Any, Awaitable, Callable, Sequence
from urllib.parse import unquote, urlsplit

from onedoor.content import MEDIA_KINDS, Part
from onedoor.wire import encode_json_text

from .errors import invalid

_RANGE = re.compile(r"L(\d{1,9})(?:(?::|-L?)(\d{1,9}))?")  # L5, L5-L10, L5-10, L5:10 (Zed)
Reader = Callable[[dict[str, Any]], Awaitable[Any]]  # sends fs/read_text_file params, returns the result


def as_dict(block: Any) -> dict[str, Any]:
    """A prompt block as its wire JSON (the router hands pydantic models)."""
    dump = getattr(block, "model_dump", None)
    if dump is not None:
        return dump(mode="json", by_alias=True, exclude_none=True)
    return block if isinstance(block, dict) else {}


def plain_text(blocks: Sequence[dict[str, Any]]) -> str | None:
    """The prompt's text when every block is text (blocks joined by a blank line), else None."""
    if any(b.get("type") != "text" for b in blocks):
        return None
    return "\n\n".join(b.get("text") or "" for b in blocks if b.get("text"))


def line_range(uri: str) -> tuple[str, tuple[int, int] | None]:
    """``(uri without the range, (first, last))`` for a ``#L…`` fragment; other URIs as they are."""
    base, sep, fragment = uri.partition("#")
    match = _RANGE.fullmatch(fragment) if sep else None
    if match is None:
        return uri, None
    first = int(match[1])
    last = int(match[2]) if match[2] else first
    if not 1 <= first <= last:
        raise invalid(f"bad line range #{fragment[:40]} in {_short(uri)}: lines are 1-based, first <= last")
    return base, (first, last)


def file_path(uri: str) -> str | None:
    """The absolute path a ``file://`` URI names (normalised, nothing read), else None."""
    parts = urlsplit(uri)
    if parts.scheme.lower() != "file":
        return None
    if parts.netloc not in ("", "localhost"):
        raise invalid(f"{_short(uri)} names a file on another host")
    path = unquote(parts.path)
    if "\x00" in path or not path.startswith("/"):
        raise invalid(f"{_short(uri)} is not a file URI with an absolute path")
    if re.match(r"/[A-Za-z]:/", path):  # file:///C:/x on Windows
        path = path[1:]
        return os.path.normpath(path)
    return posixpath.normpath(path)


def inside(path: str, roots: Sequence[str]) -> bool:
    """Whether ``path`` is one of ``roots`` or under one (compared as text, no disk access)."""
    norm = os.path.normpath if re.match(r"[A-Za-z]:", path) else posixpath.normpath
    for root in roots:
        if not root:
            continue
        root = norm(root)
        try:
            if os.path.commonpath([root, path]) == root:
                return True
        except ValueError:  # different drives, or one relative
            continue
    return False


def _short(uri: str) -> str:
    return repr(uri if len(uri) <= 120 else uri[:117] + "...")


def _name_of(uri: str | None) -> str | None:
    if not uri:
        return None
    tail = unquote(urlsplit(uri).path).rstrip("/").rsplit("/", 1)[-1]
    return tail or None


def _resource(block: dict[str, Any], where: str) -> dict[str, Any]:
    resource = block.get("resource")
    if not isinstance(resource, dict) or not isinstance(resource.get("uri"), str):
        raise invalid(f"{where}: a resource block needs a resource with a uri")
    uri, lines = line_range(resource["uri"])
    part: dict[str, Any] = {"type": "resource", "uri": uri, "media_type": resource.get("mimeType")}
    if "text" in resource:
        part["text"] = resource["text"]
    else:
        part["data"] = resource.get("blob")
    if lines is not None:
        part["lines"] = list(lines)
    return part


def _link(block: dict[str, Any]) -> dict[str, Any]:
    part = {"type": "resource_link", "uri": block.get("uri"), "name": block.get("name"),
            "media_type": block.get("mimeType"), "title": block.get("title"), "size": block.get("size")}
    if block.get("description"):
        part["metadata"] = {"description": block["description"]}
    return {k: v for k, v in part.items() if v is not None}


def block_part(block: dict[str, Any], index: int) -> dict[str, Any]:
    """One prompt block as a onedoor part dict (a ``resource_link`` stays a link here)."""
    kind = block.get("type")
    where = f"prompt block {index}"
    if kind == "text":
        return {"type": "text", "text": block.get("text")}
    if kind in ("image", "audio"):
        # ACP's image uri says where the image came from; the bytes are the image
        return {k: v for k, v in {"type": kind, "data": block.get("data"), "media_type": block.get("mimeType"),
                                  "name": _name_of(block.get("uri"))}.items() if v is not None}
    if kind == "resource":
        return _resource(block, where)
    if kind == "resource_link":
        return _link(block)
    raise invalid(f"{where}: content block type {str(kind)[:40]!r} is not supported "
                  "(this agent takes text, image, audio, resource and resource_link)")


async def prompt_parts(
    blocks: Sequence[dict[str, Any]], *, read: Reader | None, roots: Sequence[str], max_bytes: int,
) -> list[dict[str, Any]]:
    """The prompt as onedoor part dicts; ``file://`` links read through ``read`` (the
    client's ``fs/read_text_file``; None: the client cannot, links stay links)."""
    parts = []
    for index, block in enumerate(blocks):
        part = block_part(block, index)
        if part["type"] == "resource_link" and read is not None and isinstance(part.get("uri"), str):
            part = await _read_link(part, read, roots, max_bytes) or part
        parts.append(part)
    return parts


async def _read_link(link: dict[str, Any], read: Reader, roots: Sequence[str], max_bytes: int) -> dict[str, Any] | None:
    """A ``file://`` link as a resource with the editor's text of it (None: not a file link)."""
    uri = link["uri"]
    base, lines = line_range(uri)
    path = file_path(base)
    if path is None:
        return None
    if not inside(path, roots):
        raise invalid(f"{_short(uri)} is outside this session's directories ({', '.join(r for r in roots if r)}); "
                      "the agent reads files there only")
    size = link.get("size")
    if lines is None and isinstance(size, int) and size > max_bytes:
        raise invalid(f"{_short(uri)} holds {size:,} bytes; the limit is {max_bytes:,}")
    params: dict[str, Any] = {"path": path}
    if lines is not None:
        params["line"], params["limit"] = lines[0], lines[1] - lines[0] + 1
    result = await read(params)
    text = result.get("content") if isinstance(result, dict) else None
    if not isinstance(text, str):
        raise invalid(f"the editor's fs/read_text_file reply for {_short(uri)} has no text content")
    part: dict[str, Any] = {"type": "resource", "uri": base, "text": text}
    for key in ("media_type", "name", "title"):
        if key in link:
            part[key] = link[key]
    if lines is not None:
        count = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
        if count:
            part["lines"] = [lines[0], lines[0] + count - 1]
    return part


# -- out: parts as ACP content blocks ------------------------------------------------------------
def part_block(part: Part) -> dict[str, Any]:
    """A onedoor part as an ACP ``ContentBlock`` (text where ACP has no block for it)."""
    kind = part.kind
    if kind == "text":
        return {"type": "text", "text": part.text or ""}
    if kind in ("image", "audio") and part.data is not None:
        return {"type": kind, "data": base64.b64encode(part.data).decode("ascii"),
                "mimeType": part.media_type or "application/octet-stream"}
    if kind == "resource" and part.uri:
        uri = part.uri
        if part.lines is not None and "#" not in uri:
            uri += f"#L{part.lines[0]}-L{part.lines[1]}"
        resource: dict[str, Any] = {"uri": uri}
        if part.text is not None:
            resource["text"] = part.text
        else:
            resource["blob"] = base64.b64encode(part.data or b"").decode("ascii")
        if part.media_type:
            resource["mimeType"] = part.media_type
        return {"type": "resource", "resource": resource}
    if part.uri and (kind == "resource_link" or kind in MEDIA_KINDS):
        link: dict[str, Any] = {"type": "resource_link", "uri": part.uri, "name": part.name or _name_of(part.uri) or kind}
        for key, value in (("mimeType", part.media_type), ("title", part.title), ("size", part.size)):
            if value is not None:
                link[key] = value
        return link
    if kind == "data":
        return {"type": "text", "text": encode_json_text(part.value)}
    return {"type": "text", "text": part.describe()}


def blocks_of(parts: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Stored part dicts (``Part.to_dict``) as content blocks; a part that no longer reads is named as text."""
    from onedoor.content import ContentError, part_from_dict

    out = []
    for raw in parts:
        try:
            out.append(part_block(part_from_dict(raw)))
        except ContentError:
            kind = raw.get("type") if isinstance(raw, dict) else None
            out.append({"type": "text", "text": f"[a {str(kind or 'part')[:40]} that could not be read]"})
    return out


__all__ = ["as_dict", "block_part", "blocks_of", "file_path", "inside", "line_range", "part_block", "plain_text",
           "prompt_parts"]
