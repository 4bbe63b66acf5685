"""Reading a chat request's body: JSON (the request model), or a ``multipart/form-data``
upload (a text field and files).

Either way the door gets a :class:`ChatInput`, whose message is text or parts checked
under the kernel's content limits (:func:`onedoor.content.parse_content`: base64 decoded
once, media types checked against the bytes, sizes): what the kernel refuses is refused
here the same way, before any run, as a ``RunRefused`` (415 ``unsupported_content``, 413
``too_large``, 422 ``invalid_request``, the transport's one table).

The upload's fields (:data:`FORM_FIELDS`): ``message`` (text) and ``file`` (repeatable: each
file a part, its media type the part's ``Content-Type``, else guessed from its name; the
kernel checks it against the bytes and keeps a safe base name). Files are images, audio
or video by their media type, documents otherwise. History and state come in JSON bodies.
"""

from __future__ import annotations

import mimetypes
from dataclasses import dataclass
from typing import Any

from onedoor import RunRefused
from onedoor.content import ContentError, ContentLimits, Part, parse_content
from onedoor.wire import WireError, decode_json
from onedoor_transport_http.body import JSON_BODY
from pydantic import ValidationError

from .responses import RequestRefused, describe_validation

MULTIPART = "multipart/form-data"
FILE_FIELD = "file"
_REASONS = {"too_large": "too_large", "unsupported": "unsupported_content"}
_KIND_OF = {"image": "image", "audio": "audio", "video": "video"}


@dataclass
class ChatInput:
    """What a chat request asks for, however it came."""

    message: Any  # text, or a tuple of checked Parts
    history: list[dict[str, Any]] | None = None
    state: dict[str, Any] | None = None
    state_version: int | None = None

    @property
    def parts(self) -> tuple[Part, ...]:
        return () if isinstance(self.message, str) else self.message


def media_type_of(request: Any) -> str:
    return request.headers.get("content-type", "").split(";", 1)[0].strip().lower()


async def read_chat(request: Any, model: Any, limits: Any, *, thread: bool) -> ChatInput:
    """The chat request in ``request`` (``model``: its JSON body's model); RequestRefused or
    RunRefused for what cannot be one."""
    if media_type_of(request) == MULTIPART:
        return await _read_form(request, limits)
    body = model_validated(model, await json_body(request))
    message = body.message if isinstance(body.message, str) else checked_message([p.to_kernel() for p in body.message],
                                                                                limits)
    history = [m.to_kernel() for m in body.history] if not thread else None
    return ChatInput(message, history, body.state, getattr(body, "state_version", None))


async def json_body(request: Any) -> Any:
    """The request's JSON body: decoded by the transport's guard, or read and decoded here."""
    if JSON_BODY in request.scope:
        return request.scope[JSON_BODY]
    raw = await request.body()
    if not raw:
        raise RequestRefused(422, "invalid_request", "the request body is required")
    try:
        return decode_json(raw)
    except WireError as exc:
        raise RequestRefused(400, "bad_json", f"the request body is not valid JSON: {exc}") from None


def model_validated(model: Any, value: Any) -> Any:
    try:
        return model.model_validate(value)
    except ValidationError as exc:
        raise RequestRefused(*describe_validation([dict(e) for e in exc.errors()])) from None


def checked_message(parts: list[Any], limits: Any) -> str | tuple[Part, ...]:
    """The message as the kernel will take it: its text when it is only text, else its
    checked parts (RunRefused as the kernel refuses them)."""
    try:
        text, checked = parse_content(parts, ContentLimits.of(limits))
    except ContentError as exc:
        raise RunRefused(_REASONS.get(exc.reason, "invalid"), str(exc)) from None
    return checked or text


# -- multipart/form-data ------------------------------------------------------------------
FORM_FIELDS = ("message", FILE_FIELD)


async def _read_form(request: Any, limits: Any) -> ChatInput:
    text: str | None = None
    files: list[Part] = []
    form = await _form(request, limits)
    try:
        for key, value in form.multi_items():
            if key not in FORM_FIELDS:
                raise RequestRefused(422, "invalid_request", f"unknown field {key[:60]!r}; an upload has a message "
                                     "and files (JSON bodies carry the history and the state)")
            if isinstance(value, str) != (key == "message"):
                what = "a text field, not a file" if key == "message" else "send a file (a part with a filename)"
                raise RequestRefused(422, "invalid_request", f"{key}: {what}")
            if key == "message":
                if text is not None:
                    raise RequestRefused(422, "invalid_request", "message: sent twice")
                text = str(value)
            else:
                files.append(await _file_part(value))
    finally:
        await form.close()  # the uploads' spooled files
    return ChatInput(_form_message(text or "", files, limits))


async def _form(request: Any, limits: Any) -> Any:
    from starlette.exceptions import HTTPException

    try:
        return await request.form(max_files=limits.max_parts, max_fields=len(FORM_FIELDS),
                                  max_part_size=limits.max_message_chars * 4 + 4)
    except HTTPException as exc:  # starlette's MultiPartException
        detail = str(exc.detail)
        if detail.startswith("Too many files"):  # over the schema's maxItems, as a message over its maxLength
            raise RequestRefused(422, "too_large", f"a message holds at most {limits.max_parts} parts "
                                 "(limits.max_parts)") from None
        if detail.startswith(("Field exceeded", "Part exceeded")):
            raise RequestRefused(422, "too_large", f"the message is over the limit of {limits.max_message_chars} "
                                 "characters") from None
        if detail.startswith("Too many fields"):
            raise RequestRefused(422, "invalid_request", "an upload has one message field and files") from None
        raise RequestRefused(400, "bad_multipart", f"the multipart/form-data body is malformed: {detail}") from None
    except ValueError as exc:  # an older starlette passes python-multipart's own parse error on
        raise RequestRefused(400, "bad_multipart", f"the multipart/form-data body is malformed: {exc}") from None


async def _file_part(upload: Any) -> Part:
    data = await upload.read()
    name = upload.filename or None
    media_type = (upload.content_type or "").split(";", 1)[0].strip().lower()
    if media_type in ("", "application/octet-stream") and name:
        media_type = mimetypes.guess_type(name, strict=False)[0] or media_type
    media_type = media_type or "application/octet-stream"
    kind = _KIND_OF.get(media_type.split("/", 1)[0], "document")
    return Part.media(kind, media_type, data=data, name=name)


def _form_message(text: str, files: list[Part], limits: Any) -> str | tuple[Part, ...]:
    if not text.strip() and not files:
        raise RequestRefused(422, "invalid_request", "the message is empty: send a message, a file, or both")
    if len(text) > limits.max_message_chars:
        raise RequestRefused(422, "too_large", f"the message is over the limit of {limits.max_message_chars} characters")
    if not files:
        return text
    return checked_message(([Part.of_text(text)] if text.strip() else []) + files, limits)


__all__ = [
    "FILE_FIELD", "FORM_FIELDS", "MULTIPART", "ChatInput", "checked_message", "json_body", "media_type_of",
    "model_validated", "read_chat",
]
