"""onedoor content parts as the OpenAI-style content parts hermes-agent takes.

hermes' ``run_conversation`` takes a user message that is a list of OpenAI content parts
and keeps it as it is (history items too). What it does with each (hermes-agent 0.19.0):

- ``image_url`` (a ``data:`` URI or an http(s) URL): sent to the model as it is when hermes
  thinks the model has vision; otherwise hermes swaps each image for a description it asks
  for in an extra request (``vision=auto``). ``vision=true`` tells hermes the model has it.
- ``input_audio`` (WAV or MP3, base64) and ``file`` (``file_data`` as a data URI): passed
  through unchanged on the Chat Completions path (``base_url``); hermes neither converts nor
  checks them, and its other API modes drop or break them, so they are offered only with
  ``base_url``. Audio and documents go inline only (a URL is refused: hermes cannot send one).
- text, resources with text, links and JSON data: text parts (:func:`onedoor.content.text_of`).
"""

from __future__ import annotations

import base64
from typing import Any, Iterable, Sequence

from onedoor.content import Part, text_of

_AUDIO_FORMATS = {"audio/wav": "wav", "audio/x-wav": "wav", "audio/mpeg": "mp3", "audio/mp3": "mp3"}


class ContentRefused(ValueError):
    """A part hermes cannot pass to its model (the run fails, saying why)."""


def accepted(vision: Any, base_url: str) -> frozenset[str]:
    """The kinds besides text the backend takes with these options."""
    kinds = set() if vision is False else {"image"}
    if base_url:
        kinds |= {"audio", "document"}
    return frozenset(kinds)


def hermes_content(parts: Sequence[Part], accepts: Iterable[str]) -> list[dict[str, Any]]:
    """The parts as OpenAI content parts; kinds not in ``accepts`` go as the text naming them.
    ContentRefused for a part that cannot go at all."""
    taken = frozenset(accepts)
    out: list[dict[str, Any]] = []
    texts: list[Part] = []
    for part in parts:
        item = _media(part) if part.kind in taken else None
        if item is None:
            texts.append(part)
            continue
        if texts:
            out.append({"type": "text", "text": text_of(texts)})
            texts.clear()
        out.append(item)
    if texts:
        out.append({"type": "text", "text": text_of(texts)})
    return [item for item in out if item.get("type") != "text" or item["text"]]


def _media(part: Part) -> dict[str, Any] | None:
    media_type = (part.media_type or "").lower()
    if part.kind == "image":
        url = part.uri if part.data is None else _data_uri(media_type, part.data)
        return {"type": "image_url", "image_url": {"url": url or ""}}
    if part.kind not in ("audio", "document"):
        return None
    if part.data is None:
        raise ContentRefused(f"hermes takes {part.kind} inline only, not by URL ({part.uri})")
    if part.kind == "audio":
        fmt = _AUDIO_FORMATS.get(media_type)
        if fmt is None:
            raise ContentRefused(f"hermes passes audio to the model as WAV or MP3 only, not {part.media_type}")
        return {"type": "input_audio", "input_audio": {"data": base64.b64encode(part.data).decode("ascii"), "format": fmt}}
    if media_type.startswith("text/"):
        name = part.name or "document"
        return {"type": "text", "text": f"--- {name} ---\n{part.data.decode('utf-8', 'replace')}\n--- end of {name} ---"}
    return {"type": "file", "file": {"file_data": _data_uri(media_type, part.data), "filename": part.name or "document"}}


def _data_uri(media_type: str, data: bytes) -> str:
    return f"data:{media_type or 'application/octet-stream'};base64,{base64.b64encode(data).decode('ascii')}"


__all__ = ["ContentRefused", "accepted", "hermes_content"]
