"""Content between A2A and the kernel: a message's parts in, reply and tool-result parts
out, and the card's modes (what the door takes and what it sends).

In, before the task exists (:func:`message_content`):

==============================  ==========================================================
A2A part                        onedoor part
==============================  ==========================================================
``text``                        text
``data`` (JSON)                 data (whole numbers as integers again: a protobuf
                                ``Value`` holds every number as a double)
``data``, metadata              not content: the thread's shared state
``{"onedoor": "state"}``        (``kernel.run(state=...)``; ``state_version`` beside it)
``raw`` (bytes)                 image, audio, video or document, by its media type (else
                                the filename's; else ``application/octet-stream``)
``url``                         the same kinds by URL (the server never fetches it); a
                                URL of no known type is a resource link
==============================  ==========================================================

The card's input modes are ``text/plain``, ``application/json`` and the media families
of the kinds the backend takes (``kernel.backend.accepts``) within the server's media-type
allow-list (``limits.media_types``): ``image/*``, ``audio/*``, ``video/*``, and
``application/*`` + ``text/*`` for documents. A file of a type outside them is refused
(``ContentTypeNotSupportedError``, -32005: :mod:`.refusals`), but a ``text/plain`` or
``application/json`` file that is not a file the agent takes goes as text or data (both
are modes of every card). A2A 0.3's FilePart and DataPart reach the door as these parts
(the SDK converts them). The kernel checks the rest (sizes, base64, a media type that lies about
its bytes, URL schemes): :mod:`onedoor.content`.

Out (:func:`part_out`): text as text, data as data, a file as ``raw`` (inline bytes) or
``url`` with its media type and filename, a resource as text (or raw) with its URI in the
metadata. The card's output modes are its input modes: a part of a type outside them, or
outside the client's ``acceptedOutputModes``, goes as the line of text that names it.
"""

from __future__ import annotations

import json
import mimetypes
import re
from dataclasses import dataclass
from typing import Any, Sequence
from urllib.parse import urlsplit

from onedoor import RunRefused
from onedoor.content import MEDIA_KINDS, ContentLimits, Part, media_type_allowed, text_of

TEXT_MODES = ("text/plain", "application/json")
OCTETS = "application/octet-stream"
STATE = "state"  # the "onedoor" metadata of a data part that is the thread's state (both ways)
_FAMILIES = {"image": ("image/*",), "audio": ("audio/*",), "video": ("video/*",),
             "document": ("application/*", "text/*")}
_SAFE_INT = 2**53
_MEDIA_TYPE = re.compile(r"[a-z0-9][a-z0-9!#$&^_.+-]{0,126}/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}", re.ASCII)


def modes(kernel: Any) -> list[str]:
    """The card's input (and output) modes: text, JSON, and what the backend takes."""
    return list(TEXT_MODES) + [mode for mode in media_modes(kernel) if mode not in TEXT_MODES]


def media_modes(kernel: Any) -> list[str]:
    """The media types (and patterns) of the files the door takes: the families of the kinds
    the backend takes, within the server's media-type allow-list."""
    out: list[str] = []
    accepts = kernel.backend.accepts
    for pattern in ContentLimits.of(kernel.limits).media_types:
        for kind in MEDIA_KINDS:
            if kind not in accepts:
                continue
            if pattern in ("*/*", "*"):
                found: Sequence[str] = _FAMILIES[kind]
            elif pattern in _FAMILIES[kind] or (not pattern.endswith("/*") and kind_of(pattern) == kind):
                found = (pattern,)
            else:
                found = ()
            out += [mode for mode in found if mode not in out]
    return out


def kind_of(media_type: str) -> str:
    family = media_type.split("/")[0]
    return family if family in ("image", "audio", "video") else "document"


def _media_type(value: str) -> str:
    return value.split(";")[0].strip().lower()


def _guess(*names: str) -> str | None:
    for name in names:
        if name:
            guessed, _ = mimetypes.guess_type(name, strict=False)
            if guessed:
                return guessed
    return None


def json_of(value: Any) -> Any:
    """A protobuf ``Value`` read back as JSON: whole-number doubles as integers."""
    if isinstance(value, float) and value.is_integer() and abs(value) < _SAFE_INT:
        return int(value)
    if isinstance(value, dict):
        return {key: json_of(item) for key, item in value.items()}
    if isinstance(value, list):
        return [json_of(item) for item in value]
    return value


def _dict_of(message: Any) -> Any:
    from google.protobuf.json_format import MessageToDict

    return json_of(MessageToDict(message))


def metadata_of(part_or_message: Any) -> dict[str, Any]:
    if not part_or_message.HasField("metadata"):
        return {}
    found = _dict_of(part_or_message.metadata)
    return found if isinstance(found, dict) else {}


def is_state(part: Any) -> bool:
    return part.WhichOneof("content") == "data" and metadata_of(part).get("onedoor") == STATE


@dataclass
class MessageContent:
    """What a message gives a run: ``message`` (text, or the parts when there is more than
    text), its ``text``, and the ``state`` (and ``state_version``) the client sent."""

    message: str | list[Part]
    text: str
    state: Any = None
    state_version: int | None = None


def message_content(message: Any, kernel: Any) -> MessageContent:
    """The run input of an A2A ``message``; RunRefused ``unsupported_content`` for a file
    of a type the card does not take (the door answers ``ContentTypeNotSupportedError``),
    ``invalid`` for a part that is not one."""
    takes = media_modes(kernel)
    parts: list[Part] = []
    state: Any = None
    version: int | None = None
    for index, part in enumerate(message.parts):
        if is_state(part):
            state = _dict_of(part.data)
            raw_version = metadata_of(part).get("state_version")
            if raw_version is not None and (isinstance(raw_version, bool) or not isinstance(raw_version, int)):
                raise RunRefused("invalid", f"part {index}: state_version must be a whole number")
            version = raw_version
            continue
        parts.append(_part_in(part, index, takes))
    if all(p.kind == "text" for p in parts):
        text = "".join(p.text or "" for p in parts)
        return MessageContent(text, text, state, version)
    return MessageContent(parts, text_of(parts), state, version)


def _part_in(part: Any, index: int, takes: list[str]) -> Part:
    which = part.WhichOneof("content")
    name = part.filename or None
    if which == "text":
        return Part.of_text(part.text)
    if which == "data":
        return Part.of_data(_dict_of(part.data), _media_type(part.media_type) or "application/json")
    if which not in ("raw", "url"):
        raise RunRefused("invalid", f"part {index} has no content: send text, raw, url or data")
    source = part.raw if which == "raw" else part.url
    if part.media_type and not _MEDIA_TYPE.fullmatch(_media_type(part.media_type)):
        raise RunRefused("invalid", f"part {index}: {part.media_type[:60]!r} is not a media type")
    media_type = _media_type(part.media_type) or _guess(name or "", urlsplit(part.url).path if which == "url" else "")
    if media_type is None:
        if which == "url":  # a reference of no known type: every backend gets it as text
            return Part.link(part.url, name=name)
        media_type = OCTETS
    kind = kind_of(media_type)
    if not media_type_allowed(media_type, takes):
        if media_type in TEXT_MODES:  # not a file this agent takes: its text, or its data
            return _as_text(source, which, media_type, name, index)
        raise RunRefused("unsupported_content", f"part {index}: {media_type} is not a type this agent takes "
                         f"(it takes: {', '.join([*TEXT_MODES, *takes])})")
    if which == "raw":
        return Part.media(kind, media_type, data=source, name=name)
    return Part.media(kind, media_type, uri=source, name=name)


def _as_text(source: Any, which: str, media_type: str, name: str | None, index: int) -> Part:
    """A text or JSON file the agent does not take as a file: its text, or its data."""
    if which == "url":
        return Part.link(source, name=name, media_type=media_type)
    try:
        text = source.decode("utf-8")
        if media_type == "application/json":
            return Part.of_data(json.loads(text))
    except (UnicodeDecodeError, ValueError):
        raise RunRefused("invalid", f"part {index}: the bytes are not {media_type} (UTF-8)") from None
    if name:
        return Part.of_text(f"--- {name} ---\n{text}\n--- end of {name} ---\n")
    return Part.of_text(text)


def part_out(part: Part, sends: Sequence[str]) -> Any:
    """The A2A part for a reply or tool-result part; the text naming it when ``sends``
    (media types, patterns) does not cover its type."""
    from a2a.helpers import new_data_part, new_raw_part, new_text_part, new_url_part

    kind = part.kind
    if kind == "text":
        return new_text_part(part.text or "")
    media_type = part.media_type or ("application/json" if kind == "data" else "")
    if media_type and not media_type_allowed(media_type, sends):
        return new_text_part(text_of([part]))
    try:
        if kind == "data":
            return new_data_part(part.value)
        if kind == "resource":
            if part.text is not None:
                out = new_text_part(part.text, part.media_type)
            else:
                out = new_raw_part(part.data or b"", part.media_type, None)
            where: dict[str, Any] = {"uri": part.uri}
            if part.lines is not None:
                where["lines"] = list(part.lines)
            out.metadata.update({"onedoor": "resource", **where})
            return out
        if part.data is not None:
            return new_raw_part(part.data, part.media_type, part.name)
        return new_url_part(part.uri or "", part.media_type, part.name)
    except (TypeError, ValueError, AttributeError):  # a value protobuf cannot hold (a backend's, unchecked)
        return new_text_part(text_of([part]))


def sent_modes(card_modes: Sequence[str], accepted: Sequence[str]) -> list[str]:
    """What a task's parts may be: the card's output modes, within the client's
    ``acceptedOutputModes`` when it names any."""
    wanted = [_media_type(m) for m in accepted if m and m.strip()]
    if not wanted:
        return list(card_modes)
    return [mode for mode in card_modes if any(_covers(w, mode) for w in wanted)] + [
        w for w in wanted if not w.endswith("/*") and w not in card_modes and media_type_allowed(w, card_modes)]


def _covers(wanted: str, mode: str) -> bool:
    """Whether the client's ``wanted`` (a type or pattern) takes everything of ``mode``."""
    if wanted in ("*/*", "*", mode):
        return True
    return wanted.endswith("/*") and mode.split("/")[0] == wanted.split("/")[0]


__all__ = [
    "STATE", "TEXT_MODES", "MessageContent", "is_state", "json_of", "kind_of", "message_content", "metadata_of", "modes",
    "media_modes", "part_out", "sent_modes",
]
