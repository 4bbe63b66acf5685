"""The shared hostile-input corpus: one list every door runs over every transport.

Two parts:

* :data:`RAW` — whole messages as bytes: what arrives as an HTTP body, a stdio line or a
  SLIM message. Each must get a protocol-correct error (or, for a JSON-RPC notification,
  silence), and the server must keep serving.
* :func:`mutations` — a valid request of the door's own protocol with one field at a time
  replaced by a hostile value (:data:`VALUES`). Each must get an error or a normal answer;
  never a crash, a 5xx, a traceback, or a run that nobody asked for.

A door test does, for each case, send it; check the reply is the protocol's error shape;
send a normal request and check it still works; check stderr holds no ``Traceback`` (and,
on stdio, that stdout holds only protocol bytes). ``RAW`` messages hold no newline, so
they can be sent as one NDJSON line as they are; :data:`RAW_LINE_BREAKING` has the few that
must not travel on a line-framed transport.

A third part, :data:`CONTENT`, is for the doors that take content parts (images, files):
messages a server must refuse before any run, each with the reason the kernel gives
(:class:`ContentCase`), under :data:`CONTENT_LIMITS`.
"""

from __future__ import annotations

import base64
import copy
import json
from dataclasses import dataclass
from typing import Any, Iterator


@dataclass(frozen=True)
class Case:
    """One hostile input: a name for test ids, and the bytes to send."""

    name: str
    payload: bytes

    def __str__(self) -> str:
        return self.name


def _nested(depth: int, opener: str = "[", closer: str = "]") -> bytes:
    return (opener * depth + closer * depth).encode()


def _nested_objects(depth: int) -> bytes:
    return ('{"a":' * depth + "1" + "}" * depth).encode()


RAW: list[Case] = [
    Case("empty", b""),
    Case("spaces", b"   "),
    Case("not-json", b"hello"),
    Case("truncated-object", b'{"jsonrpc":"2.0","id":1,'),
    Case("two-values", b"{}{}"),
    Case("trailing-garbage", b'{"a":1} x'),
    Case("invalid-utf8", b"\xff\xfe\xfd"),
    Case("invalid-utf8-in-string", b'{"text":"\xc3\x28"}'),
    Case("overlong-utf8", b'{"text":"\xc0\xaf"}'),
    Case("lone-surrogate-escape", b'{"text":"\\ud800"}'),
    Case("lone-low-surrogate-escape", b'{"text":"a\\udc00b"}'),
    Case("lone-surrogate-in-key", b'{"\\udfff":1}'),
    Case("raw-control-char", b'{"text":"a\x01b"}'),
    Case("nul-byte", b'{"text":"\x00"}'),
    Case("bom-then-garbage", b"\xef\xbb\xbfnope"),
    Case("deep-arrays-2kb", _nested(1000)),
    Case("deep-arrays-20kb", _nested(10_000)),
    Case("deep-objects", _nested_objects(3000)),
    Case("deep-but-legal", _nested(60)),
    Case("huge-integer", b"1" * 5000),
    Case("huge-integer-in-object", b'{"id":' + b"9" * 5000 + b"}"),
    Case("float-overflow", b"1e999"),
    Case("nan", b"NaN"),
    Case("infinity", b'{"x":Infinity}'),
    Case("negative-infinity", b"-Infinity"),
    Case("null", b"null"),
    Case("true", b"true"),
    Case("number", b"42"),
    Case("string", b'"hello"'),
    Case("empty-array", b"[]"),
    Case("array-of-objects", b"[{},{}]"),
    Case("empty-object", b"{}"),
    Case("long-key", b'{"' + b"k" * 100_000 + b'":1}'),
    Case("many-keys", b"{" + b",".join(b'"k%d":%d' % (i, i) for i in range(5000)) + b"}"),
    Case("proto-pollution", b'{"__proto__":{"admin":true},"constructor":{"prototype":{}}}'),
]

# Messages that are hostile *because* of a line break: on NDJSON framing they are two lines.
RAW_LINE_BREAKING: list[Case] = [
    Case("json-over-two-lines", b'{"jsonrpc":\n"2.0"}'),
    Case("crlf-inside", b'{"a":\r\n1}'),
]

# JSON-RPC-shaped hostile messages: for the doors that speak JSON-RPC (MCP, ACP, A2A).
JSONRPC: list[Case] = [
    Case("rpc-batch", b'[{"jsonrpc":"2.0","id":1,"method":"ping"}]'),
    Case("rpc-empty-batch", b"[]"),
    Case("rpc-no-version", b'{"id":1,"method":"ping"}'),
    Case("rpc-wrong-version", b'{"jsonrpc":"1.0","id":1,"method":"ping"}'),
    Case("rpc-object-id", b'{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}'),
    Case("rpc-array-id", b'{"jsonrpc":"2.0","id":[1],"method":"ping"}'),
    Case("rpc-bool-id", b'{"jsonrpc":"2.0","id":true,"method":"ping"}'),
    Case("rpc-float-id", b'{"jsonrpc":"2.0","id":1.5,"method":"ping"}'),
    Case("rpc-surrogate-id", b'{"jsonrpc":"2.0","id":"\\ud800","method":"ping"}'),
    Case("rpc-huge-id", b'{"jsonrpc":"2.0","id":' + b"9" * 400 + b',"method":"ping"}'),
    Case("rpc-method-number", b'{"jsonrpc":"2.0","id":2,"method":7}'),
    Case("rpc-method-empty", b'{"jsonrpc":"2.0","id":2,"method":""}'),
    Case("rpc-method-surrogate", b'{"jsonrpc":"2.0","id":2,"method":"tools/\\udc00call"}'),
    Case("rpc-unknown-method", b'{"jsonrpc":"2.0","id":3,"method":"no/such/method"}'),
    Case("rpc-params-string", b'{"jsonrpc":"2.0","id":4,"method":"ping","params":"x"}'),
    Case("rpc-params-deep", b'{"jsonrpc":"2.0","id":5,"method":"ping","params":{"a":' + _nested(500) + b"}}"),
    Case("rpc-result-and-error", b'{"jsonrpc":"2.0","id":6,"result":{},"error":{"code":1,"message":"x"}}'),
    Case("rpc-response-unknown-id", b'{"jsonrpc":"2.0","id":"never-sent","result":{}}'),
    Case("rpc-error-not-object", b'{"jsonrpc":"2.0","id":7,"error":"nope"}'),
    Case("rpc-notification-bad-params", b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":"x"}'),
    Case("rpc-notification-unknown", b'{"jsonrpc":"2.0","method":"no/such/notification"}'),
    Case("rpc-cancel-unknown-request", b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"zz"}}'),
]

# Values put in place of one field of a valid request by :func:`mutations`.
VALUES: list[tuple[str, Any]] = [
    ("null", None),
    ("true", True),
    ("zero", 0),
    ("negative", -1),
    ("float", 1.5),
    ("big-int", 2**70),
    ("empty-string", ""),
    ("lone-surrogate", "\ud800"),
    ("half-emoji", "a\ud83d"),
    ("nul-char", "a\x00b"),
    ("rtl-and-zero-width", "\u202e\u200b\ufeff"),
    ("long-string", "x" * 200_000),
    ("empty-array", []),
    ("array", [1, "two", None]),
    ("empty-object", {}),
    ("object", {"unexpected": "field"}),
    ("nested", json.loads(_nested(40).decode())),
]


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield prefix + (key,)
            yield from _paths(item, prefix + (key,))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield prefix + (index,)
            yield from _paths(item, prefix + (index,))


def _encode(value: Any) -> bytes:
    """JSON bytes for a mutated request; lone surrogates travel as ``\\u`` escapes."""
    return json.dumps(value, ensure_ascii=True, separators=(",", ":")).encode()


def mutations(template: dict[str, Any], *, keep: tuple[str, ...] = ()) -> Iterator[Case]:
    """``template`` with one field at a time replaced by each hostile value, then removed.

    ``keep`` names top-level keys left alone (e.g. ``("jsonrpc",)``, already covered by
    :data:`JSONRPC`). Yields :class:`Case` objects named ``field.path=value-name``.
    """
    for path in _paths(template):
        if path[0] in keep:
            continue
        label = ".".join(str(p) for p in path)
        for name, hostile in VALUES:
            mutated = copy.deepcopy(template)
            target = mutated
            for step in path[:-1]:
                target = target[step]
            target[path[-1]] = copy.deepcopy(hostile)
            yield Case(f"{label}={name}", _encode(mutated))
        if isinstance(path[-1], str):
            removed = copy.deepcopy(template)
            target = removed
            for step in path[:-1]:
                target = target[step]
            del target[path[-1]]
            yield Case(f"{label}=missing", _encode(removed))


def all_raw(*, jsonrpc: bool = False, line_framed: bool = False) -> list[Case]:
    """The raw corpus for a door: :data:`RAW`, plus :data:`JSONRPC` for JSON-RPC doors,
    plus :data:`RAW_LINE_BREAKING` unless the transport frames messages by lines."""
    cases = list(RAW)
    if jsonrpc:
        cases += JSONRPC
    if not line_framed:
        cases += RAW_LINE_BREAKING
    return cases


@dataclass(frozen=True)
class ContentCase:
    """A message's content a server must refuse before any run starts (nothing stored):
    ``parts`` in onedoor's part JSON (``Part.to_dict``; a door sends them its protocol's
    way, or, for a part its protocol cannot express, as the protocol's own malformed
    input), and the kernel's ``reason``: ``invalid``, ``too_large`` or ``unsupported``
    (HTTP doors: 422, 413, 415)."""

    name: str
    parts: tuple[Any, ...]
    reason: str

    def __str__(self) -> str:
        return self.name


# Run :data:`CONTENT` on a kernel with these limits (onedoor.Limits fields): small enough
# that the oversize cases stay under an HTTP body limit of 64 KiB.
CONTENT_LIMITS: dict[str, Any] = {
    "max_parts": 16, "max_part_bytes": 16 * 1024, "max_content_bytes": 32 * 1024,
    "media_types": ("image/*", "application/pdf", "text/plain"),
}

_PNG = b"\x89PNG\r\n\x1a\n"


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _image(data: bytes, media_type: str = "image/png", **extra: Any) -> dict[str, Any]:
    return {"type": "image", "data": _b64(data), "media_type": media_type, **extra}


CONTENT: list[ContentCase] = [
    ContentCase("bad-base64", ({"type": "image", "data": "not*base64!", "media_type": "image/png"},), "invalid"),
    ContentCase("base64-with-spaces", ({"type": "image", "data": "iVBO Rw0K", "media_type": "image/png"},), "invalid"),
    ContentCase("lying-media-type", (_image(b"\xff\xd8\xff\xe0 a jpeg"),), "invalid"),
    ContentCase("empty-image", (_image(b""),), "invalid"),
    ContentCase("pdf-that-is-text", ({"type": "document", "data": _b64(b"hello"), "media_type": "application/pdf"},),
                "invalid"),
    ContentCase("image-of-audio-type", ({"type": "image", "data": _b64(b"RIFF1234WAVE"), "media_type": "audio/wav"},),
                "invalid"),
    ContentCase("not-a-media-type", (_image(_PNG, "png"),), "invalid"),
    ContentCase("inline-without-media-type", ({"type": "image", "data": _b64(_PNG)},), "invalid"),
    ContentCase("file-url", ({"type": "image", "uri": "file:///etc/passwd", "media_type": "image/png"},), "invalid"),
    ContentCase("javascript-url", ({"type": "document", "uri": "javascript:alert(1)"},), "invalid"),
    ContentCase("data-url-not-base64", ({"type": "image", "uri": "data:image/png,abc"},), "invalid"),
    ContentCase("part-not-an-object", ("an image",), "invalid"),
    ContentCase("nested-part-lists", ([[[[[{"type": "text", "text": "deep"}]]]]],), "invalid"),
    ContentCase("unknown-kind", ({"type": "hologram", "data": _b64(b"x")},), "unsupported"),
    ContentCase("media-type-not-allowed", ({"type": "audio", "data": _b64(b"RIFF\x00\x00WAVE"), "media_type": "audio/wav"},),
                "unsupported"),
    ContentCase("oversize-part", (_image(_PNG + bytes(20 * 1024)),), "too_large"),
    ContentCase("oversize-message", tuple(_image(_PNG + bytes(12 * 1024), name=f"p{i}.png") for i in range(3)), "too_large"),
    ContentCase("too-many-parts", tuple({"type": "text", "text": "x"} for _ in range(17)), "too_large"),
    ContentCase("long-part-list", tuple({"type": "text", "text": ""} for _ in range(5000)), "too_large"),
]


TRACEBACK_MARKERS = ("Traceback (most recent call last)", "Exception in ASGI application", "Task exception was never retrieved")


def traceback_in(text: str) -> str | None:
    """The first line of ``text`` that shows a traceback or an unhandled error, or None."""
    for line in text.splitlines():
        if any(marker in line for marker in TRACEBACK_MARKERS):
            return line
    return None


__all__ = [
    "CONTENT", "CONTENT_LIMITS", "Case", "ContentCase", "JSONRPC", "RAW", "RAW_LINE_BREAKING", "VALUES", "all_raw",
    "mutations", "traceback_in",
]
