"""Typed models of content, usage and state (pydantic), shown in the OpenAPI docs.

A part is onedoor's part JSON (:mod:`onedoor.content`): ``{"type": kind, ...}`` with
``data`` as base64. The door checks only its shape; the kernel checks the rest (base64,
the media type against the bytes, sizes, the kinds the backend takes) before a run.
"""

# No `from __future__ import annotations`: pydantic builds the field types when a model is made.
from typing import Annotated, Any, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Discriminator, Field, RootModel, Tag

PartKind = Literal["text", "image", "audio", "video", "document", "resource", "resource_link", "data"]
# union tags of "text or a list of parts": validation errors name them after the field (describe_validation drops them)
UNION_TAGS = ("text", "parts")

_PART_FIELDS = {
    "type": "text; image, audio, video, document (inline `data` or a `uri`); resource (a `uri` with `text` or "
            "`data`, optional `lines`); resource_link (a `uri`); data (a JSON `value`)",
    "data": "the bytes, base64 (inline media; a resource's bytes)",
    "uri": "media: an http(s) URL (given to the model as a URL, never fetched by the server) or a data: URL; "
           "a resource's or a link's URI",
}


BASE64 = r"^([A-Za-z0-9+/]{4})*([A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$"
MEDIA_TYPE = r"^[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}$"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PartIn(_Strict):
    """One part of a message: onedoor's part JSON (``data`` is base64)."""

    type: PartKind = Field(description=_PART_FIELDS["type"])
    text: Optional[str] = None
    # the pattern is the schema's only: the kernel checks the base64 as it decodes it (once, not twice)
    data: Optional[str] = Field(default=None, description=_PART_FIELDS["data"],
                                json_schema_extra={"pattern": BASE64, "contentEncoding": "base64"})
    uri: Optional[str] = Field(default=None, description=_PART_FIELDS["uri"])
    media_type: Optional[str] = Field(default=None, pattern=MEDIA_TYPE,
                                      description="e.g. image/png; checked against the bytes")
    name: Optional[str] = Field(default=None, description="a file name (the server keeps only a safe base name)")
    title: Optional[str] = None
    size: Optional[int] = Field(default=None, ge=0, description="resource_link: its size in bytes")
    lines: Optional[list[int]] = Field(
        default=None, min_length=2, max_length=2, description="resource: [first, last] line (1-based) of the file"
    )
    value: Any = Field(default=None, description="data: the JSON value")
    metadata: Optional[dict[str, Any]] = None

    def to_kernel(self) -> dict[str, Any]:
        return self.model_dump(exclude_unset=True)


class PartOut(BaseModel):
    """A part of a reply, a tool's result or a stored message (onedoor's part JSON)."""

    type: PartKind
    text: Optional[str] = None
    data: Optional[str] = Field(default=None, description="base64")
    uri: Optional[str] = None
    media_type: Optional[str] = None
    name: Optional[str] = None
    title: Optional[str] = None
    size: Optional[int] = None
    lines: Optional[list[int]] = None
    value: Any = None
    metadata: Optional[dict[str, Any]] = None


def _content_kind(value: Any) -> str | None:
    if isinstance(value, str):
        return "text"
    return "parts" if isinstance(value, list) else None


def content_type(text: Any, description: str) -> Any:
    """The type of a field that is text (``text``: its constrained str type) or a list of parts."""
    parts = Annotated[list[PartIn], Field(min_length=1)]
    return Annotated[
        Union[Annotated[text, Tag("text")], Annotated[parts, Tag("parts")]],
        Discriminator(_content_kind, custom_error_type="content_kind",
                      custom_error_message="must be text or a list of parts"),
        Field(description=description),
    ]


class UsageOut(BaseModel):
    """What a run cost, for one model: input and output are totals (cached input is part of
    the input, reasoning part of the output); ``cost`` where the model's price is known."""

    model: str = ""
    provider: str = ""
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0
    requests: int = 0
    cost: Optional[float] = None
    currency: Optional[str] = None


class StateEventOut(BaseModel):
    """A change of the run's shared state: the whole document (``state_snapshot``) or an
    RFC 6902 JSON Patch (``state_delta``) that applies to the state before it."""

    type: Literal["state_snapshot", "state_delta"]
    state: Optional[dict[str, Any]] = None
    ops: Optional[list[dict[str, Any]]] = None


class StateOut(BaseModel):
    """A thread's shared state and its version (also the response's ``ETag``)."""

    state: dict[str, Any]
    version: int = Field(description="grows with every change; send it back in If-Match")


class StateReplace(_Strict):
    """A thread's new shared state (replaces the whole document)."""

    state: dict[str, Any]


POINTER = r"^(/[\s\S]*)?$"  # a JSON Pointer (RFC 6901): empty, or starting with /


class _PatchOp(BaseModel):
    model_config = ConfigDict(extra="allow")  # RFC 6902: members an operation does not define are ignored

    path: str = Field(pattern=POINTER, description="a JSON Pointer into the state, e.g. /todos/0")


class ValueOp(_PatchOp):
    """add, replace or test ``value`` at ``path``."""

    op: Literal["add", "replace", "test"]
    value: Any = Field(description="the value (any JSON)")


class RemoveOp(_PatchOp):
    """remove what is at ``path``."""

    op: Literal["remove"]


class MoveOp(_PatchOp):
    """move or copy what is at ``from`` to ``path``."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    op: Literal["move", "copy"]
    from_: str = Field(alias="from", pattern=POINTER, description="a JSON Pointer: where the value is now")


JsonPatchOp = Annotated[Union[ValueOp, RemoveOp, MoveOp], Field(discriminator="op")]


class JsonPatch(RootModel[list[JsonPatchOp]]):
    """RFC 6902 JSON Patch operations, applied to the state in order: all of them, or none."""

__all__ = [
    "POINTER", "UNION_TAGS", "JsonPatch", "JsonPatchOp", "MoveOp", "PartIn", "RemoveOp", "ValueOp", "PartKind", "PartOut", "StateEventOut", "StateOut", "StateReplace", "UsageOut",
    "content_type",
]
