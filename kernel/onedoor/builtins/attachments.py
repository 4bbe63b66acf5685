"""Files the person at the terminal attaches (`onedoor run --attach FILE`, `/attach FILE` in
`onedoor chat`): each becomes a part of the message, read here and checked by the kernel.

Its media type is guessed from its name (``mimetypes``). Text (``text/*``, JSON, XML, YAML
and the like, when it is UTF-8) goes as a resource with its text and its ``file://`` URI,
which every backend can be given; images, audio and video as their kind; anything else as
a document. A file that is missing, unreadable, not a file, or over ``limits.max_part_bytes``
is one clear :class:`~onedoor.errors.OnedoorError`, before anything runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from ..content import Part
from ..errors import OnedoorError

_TEXT_TYPES = ("application/json", "application/xml", "application/yaml", "application/x-yaml", "application/toml",
               "application/javascript", "application/x-sh", "application/sql")
_KINDS = {"image": "image", "audio": "audio", "video": "video"}


def media_type_of(path: Path) -> str:
    import mimetypes

    guessed, _ = mimetypes.guess_type(path.name, strict=False)
    return guessed or "application/octet-stream"


def read_attachment(name: str, max_bytes: int) -> Part:
    """The part for the file ``name``; OnedoorError saying why it cannot be one."""
    path = Path(name).expanduser()
    try:
        info = path.stat()
    except OSError as exc:
        raise OnedoorError(f"cannot attach {name}: {exc.strerror or exc}") from None
    if not path.is_file():
        raise OnedoorError(f"cannot attach {name}: not a file")
    if info.st_size > max_bytes:
        raise OnedoorError(f"cannot attach {name}: it has {info.st_size:,} bytes; the limit is {max_bytes:,} "
                           "(limits.max_part_bytes)")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise OnedoorError(f"cannot attach {name}: {exc.strerror or exc}") from None
    if len(data) > max_bytes:  # it grew while being read
        raise OnedoorError(f"cannot attach {name}: over the limit of {max_bytes:,} bytes (limits.max_part_bytes)")
    media_type = media_type_of(path)
    if media_type.startswith("text/") or media_type in _TEXT_TYPES:
        try:
            return Part.resource(path.resolve().as_uri(), text=data.decode("utf-8"), media_type=media_type)
        except UnicodeDecodeError:
            pass  # not UTF-8 text after all: its bytes, as a document
    kind = _KINDS.get(media_type.split("/", 1)[0], "document")
    return Part.media(kind, media_type, data=data, name=path.name)


def message_with(text: str, attachments: Sequence[Part]) -> Any:
    """What ``kernel.run`` takes: the text alone, or its text part and the attachments."""
    if not attachments:
        return text
    return ([Part.of_text(text)] if text.strip() else []) + list(attachments)


def describe(part: Part) -> str:
    """How the terminal names an attachment, or a part of a reply."""
    if part.kind == "resource":
        return f"[{part.uri}: {part.media_type or 'text'}, {part.byte_size:,} bytes]"
    return part.describe()


__all__ = ["describe", "media_type_of", "message_with", "read_attachment"]
