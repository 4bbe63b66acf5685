"""A message's content as the kernel holds it: :class:`Part`, the kinds, :func:`text_of`
(see :mod:`onedoor.content`)."""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

from ..errors import OnedoorError
from ..wire import encode_json_text
from . import ALL_KINDS, KINDS, MEDIA_KINDS, TEXT_LIKE


class ContentError(OnedoorError, ValueError):
    """Content the kernel will not take. ``reason``: ``invalid`` (malformed: bad base64, a
    lying media type, a bad URL), ``too_large`` (over a limit), ``unsupported`` (a kind or
    media type this server or backend does not take)."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True)
class Part:
    """One part of a message's content (see the module docstring)."""

    kind: str
    text: str | None = None
    data: bytes | None = None
    uri: str | None = None
    media_type: str | None = None
    name: str | None = None
    value: Any = None
    lines: tuple[int, int] | None = None
    title: str | None = None
    size: int | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    # -- builders ------------------------------------------------------------------------
    @classmethod
    def of_text(cls, text: str) -> "Part":
        return cls("text", text=text)

    @classmethod
    def media(cls, kind: str, media_type: str, *, data: bytes | None = None, uri: str | None = None,
              name: str | None = None) -> "Part":
        """An image, audio, video or document, inline (``data``) or by URL (``uri``)."""
        return cls(kind, data=data, uri=uri, media_type=media_type, name=name)

    @classmethod
    def resource(cls, uri: str, *, text: str | None = None, data: bytes | None = None, media_type: str | None = None,
                 lines: tuple[int, int] | None = None) -> "Part":
        return cls("resource", text=text, data=data, uri=uri, media_type=media_type, lines=lines)

    @classmethod
    def link(cls, uri: str, *, name: str | None = None, media_type: str | None = None, title: str | None = None,
             size: int | None = None) -> "Part":
        return cls("resource_link", uri=uri, name=name, media_type=media_type, title=title, size=size)

    @classmethod
    def of_data(cls, value: Any, media_type: str = "application/json") -> "Part":
        return cls("data", value=value, media_type=media_type)

    # -- what it is ------------------------------------------------------------------------
    @property
    def byte_size(self) -> int:
        """Bytes it holds (inline data, or its text as UTF-8)."""
        if self.data is not None:
            return len(self.data)
        if self.text is not None:
            return len(self.text.encode("utf-8", "surrogatepass"))
        if self.kind == "data":
            return len(encode_json_text(self.value))
        return 0

    def describe(self) -> str:
        """One line naming the part (what a text-only reader is told it is)."""
        what = self.media_type or self.kind
        if self.data is not None:
            size = f"{len(self.data):,} bytes"
        elif self.uri:
            size = self.uri if len(self.uri) <= 120 else self.uri[:117] + "..."
        else:
            size = ""
        named = f" {self.name}" if self.name else ""
        return f"[{self.kind}{named}: {what}{', ' + size if size else ''}]"

    # -- JSON --------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.kind}
        if self.text is not None:
            out["text"] = self.text
        if self.data is not None:
            out["data"] = base64.b64encode(self.data).decode("ascii")
        for key in ("uri", "media_type", "name", "title", "size"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        if self.kind == "data":
            out["value"] = self.value
        if self.lines is not None:
            out["lines"] = list(self.lines)
        if self.metadata:
            out["metadata"] = self.metadata
        return out


# -- the text every backend can be given ------------------------------------------------------
def text_of(content: str | Sequence[Part]) -> str:
    """The text of a content: text parts as they are, resources with text written out
    (with their URI and lines), links and JSON data as one line each, media named by
    :meth:`Part.describe` (a text-only reader is told what it was not shown)."""
    if isinstance(content, str):
        return content
    out: list[str] = []
    for part in content:
        if part.kind == "text":
            out.append(part.text or "")
            continue
        if out and not out[-1].endswith("\n"):
            out.append("\n")  # what stands for a part that is not text goes on its own line
        if part.kind == "resource" and part.text is not None:
            where = part.uri or ""
            if part.lines is not None:
                where += f" (lines {part.lines[0]}-{part.lines[1]})"
            out.append(f"--- {where} ---\n{part.text}\n--- end of {part.uri or 'resource'} ---\n")
        elif part.kind == "data":
            out.append(encode_json_text(part.value) + "\n")
        elif part.kind == "resource_link":
            out.append(f"[file: {part.uri}]\n")
        else:
            out.append(part.describe() + "\n")
    text = "".join(out)
    return text[:-1] if content and content[-1].kind != "text" and text.endswith("\n") else text


def kinds_of(parts: Iterable[Part]) -> set[str]:
    return {part.kind for part in parts}


def needs_backend(parts: Iterable[Part]) -> set[str]:
    """The kinds of ``parts`` a backend must take itself (no text stands for them)."""
    return {p.kind for p in parts if p.kind in MEDIA_KINDS or (p.kind == "resource" and p.text is None)}


@dataclass(frozen=True)
class ContentLimits:
    max_parts: int = 32
    max_part_bytes: int = 10 * 1024 * 1024
    max_content_bytes: int = 20 * 1024 * 1024
    media_types: tuple[str, ...] = ("*/*",)  # patterns: "image/*", "application/pdf", "*/*"

    @classmethod
    def of(cls, limits: Any) -> "ContentLimits":
        """The content limits of a kernel's :class:`~onedoor.limits.Limits`."""
        return cls(limits.max_parts, limits.max_part_bytes, limits.max_content_bytes, tuple(limits.media_types))


__all__ = [
    "ALL_KINDS", "KINDS", "MEDIA_KINDS", "TEXT_LIKE", "ContentError", "ContentLimits", "Part", "kinds_of", "needs_backend",
    "text_of",
]
