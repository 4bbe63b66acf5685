"""onedoor content parts as pydantic-ai user content, and what the configured model takes.

- media (image, audio, video, document) with inline bytes -> ``BinaryContent``; by URL ->
  ``ImageUrl`` / ``AudioUrl`` / ``VideoUrl`` / ``DocumentUrl`` (the URL goes to pydantic-ai
  as it is; some model classes download it themselves: OpenAI Chat Completions downloads
  audio and documents, refusing private addresses);
- a resource with bytes and no text -> ``BinaryContent`` of its media type;
- text, resources with text, links and JSON data -> text (:func:`onedoor.content.text_of`),
  neighbours joined into one string.
"""

from __future__ import annotations

from typing import Any, Iterable, Sequence

from onedoor.content import MEDIA_KINDS, Part, text_of

# The kinds besides text this backend can hand pydantic-ai (``accepts`` picks among them).
SENDABLE = frozenset({*MEDIA_KINDS, "resource"})
_PROFILE_FLAGS = {
    "image": "supports_image_input",
    "document": "supports_document_input",
    "audio": "supports_audio_file_input",
    "video": "supports_video_input",
}
# What OpenAI Chat Completions takes as input_audio (pydantic-ai asserts it without a message).
_OPENAI_AUDIO = frozenset({"audio/wav", "audio/mpeg"})


def user_content(parts: Sequence[Part], accepts: Iterable[str] = SENDABLE) -> list[Any]:
    """A message's parts as a pydantic-ai user prompt (a list of strings and content objects).
    A part of a kind not in ``accepts`` (history from another backend or model) goes as the
    text that names it."""
    taken = frozenset(accepts)
    out: list[Any] = []
    texts: list[Part] = []
    for part in parts:
        item = _media(part) if part.kind in taken else None
        if item is None:
            texts.append(part)
            continue
        if texts:
            out.append(text_of(texts))
            texts.clear()
        out.append(item)
    if texts:
        out.append(text_of(texts))
    return [item for item in out if item != ""]


def _media(part: Part) -> Any:
    from pydantic_ai.messages import AudioUrl, BinaryContent, DocumentUrl, ImageUrl, VideoUrl

    if part.kind == "resource" and part.text is None and part.data is not None:
        name = part.name or (part.uri or "").rsplit("/", 1)[-1] or None
        return BinaryContent(data=part.data, media_type=part.media_type or "application/octet-stream", identifier=name)
    if part.kind not in MEDIA_KINDS:
        return None
    if part.data is not None:
        return BinaryContent(data=part.data, media_type=part.media_type or "application/octet-stream", identifier=part.name)
    url_type = {"image": ImageUrl, "audio": AudioUrl, "video": VideoUrl, "document": DocumentUrl}[part.kind]
    return url_type(url=part.uri or "", media_type=part.media_type, identifier=part.name)


def kinds_of_profile(profile: Any) -> frozenset[str]:
    """The kinds a pydantic-ai model profile says its model reads (advisory flags: pydantic-ai
    sends a user-prompt part either way, so onedoor refuses the others before a run)."""
    kinds = {kind for kind, flag in _PROFILE_FLAGS.items() if _flag(profile, flag)}
    if kinds & {"image", "document"}:
        kinds.add("resource")  # a binary resource goes as BinaryContent of its media type
    return frozenset(kinds)


def _flag(profile: Any, name: str) -> bool:
    if isinstance(profile, dict):
        return bool(profile.get(name))
    return bool(getattr(profile, name, False))


def unsendable(model: Any, parts: Iterable[Part]) -> str:
    """Why ``model`` cannot be sent ``parts`` (empty: it can), for what pydantic-ai would
    otherwise reject without a useful message."""
    try:
        from pydantic_ai.models.openai import OpenAIChatModel
    except ImportError:  # pragma: no cover - the openai extra is a dependency
        return ""
    if not isinstance(model, OpenAIChatModel):
        return ""
    for part in parts:
        if part.kind == "audio" and part.data is not None and (part.media_type or "").lower() not in _OPENAI_AUDIO:
            return f"this model (OpenAI Chat Completions) takes audio as WAV or MP3 only, not {part.media_type}"
    return ""


__all__ = ["SENDABLE", "kinds_of_profile", "unsendable", "user_content"]
