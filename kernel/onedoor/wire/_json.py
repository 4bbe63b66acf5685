"""The JSON policy (see :mod:`onedoor.wire`)."""


from __future__ import annotations

import json
import re
from typing import Any

from .._lazy import LazyPattern

MAX_DEPTH = 64  # nesting a protocol message may have; JSON-RPC and AG-UI need far less
MAX_NUMBER_CHARS = 100  # digits in one number literal (Python refuses ints over 4300 digits anyway)


class WireError(ValueError):
    """Hostile or malformed input. ``reason`` is one of the keys in this module's table."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


# Patterns, compiled on first use (start-up compiles none).
_SURROGATE_ESCAPE = LazyPattern(rb"\\u[dD][89a-fA-F]")
_SURROGATE_ESCAPE_TEXT = LazyPattern(r"\\u[dD][89a-fA-F]")
_SURROGATE = LazyPattern("[\ud800-\udfff]")  # (never in an ASCII text: str.isascii() is O(1), tried first)
_STRINGS = LazyPattern(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_BRACKETS = LazyPattern(r"[^\[\]{}]+")


def _reject_constant(name: str) -> Any:
    raise WireError("not_json", f"{name} is not valid JSON")


def _parse_int(literal: str) -> int:
    if len(literal) > MAX_NUMBER_CHARS:
        raise WireError("number", f"a number has {len(literal)} digits; the limit is {MAX_NUMBER_CHARS}")
    return int(literal)


def _parse_float(literal: str) -> float:
    if len(literal) > MAX_NUMBER_CHARS:
        raise WireError("number", f"a number has {len(literal)} characters; the limit is {MAX_NUMBER_CHARS}")
    value = float(literal)
    if value in (float("inf"), float("-inf")):
        raise WireError("number", f"the number {literal[:20]} is too large")
    return value


_decoder = json.JSONDecoder(parse_int=_parse_int, parse_float=_parse_float, parse_constant=_reject_constant)


def nesting_depth(text: str) -> int:
    """How deeply arrays and objects nest in JSON ``text`` (brackets inside strings ignored)."""
    brackets = _BRACKETS.sub("", _STRINGS.sub("", text) if '"' in text else text)
    depth = deepest = 0
    for char in brackets:
        if char in "[{":
            depth += 1
            if depth > deepest:
                deepest = depth
        else:
            depth -= 1
    return deepest


def _deeper_than(value: Any, limit: int) -> bool:
    """Whether arrays and objects in a parsed value nest deeper than ``limit`` (as
    :func:`nesting_depth` counts them in its text)."""
    stack = [(value, 1)] if type(value) in (dict, list) else []
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return True
        for child in node.values() if type(node) is dict else node:
            if type(child) in (dict, list):
                stack.append((child, depth + 1))
    return False


def _has_surrogate(value: Any) -> bool:
    if isinstance(value, str):
        return not value.isascii() and _SURROGATE.search(value) is not None
    if isinstance(value, dict):
        return any(_has_surrogate(k) or _has_surrogate(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_surrogate(v) for v in value)
    return False


def _surrogate_error(text: str) -> WireError:
    """Lone surrogates in text. A transport that decodes bytes with ``surrogateescape``
    (stdio, SLIM) leaves them where the bytes were not UTF-8: report that as ``not_utf8``."""
    try:
        text.encode("utf-8", "surrogateescape").decode("utf-8")
    except UnicodeEncodeError:
        pass
    except UnicodeDecodeError as exc:
        return WireError("not_utf8", f"the input is not UTF-8 (byte {exc.start})")
    return WireError("surrogate", "the input holds a lone UTF-16 surrogate")


def decode_json(data: bytes | bytearray | str, *, max_depth: int = MAX_DEPTH) -> Any:
    """Parse one JSON value under this module's policy; raise :class:`WireError`."""
    if isinstance(data, (bytes, bytearray)):
        escaped = b"\\u" in data and _SURROGATE_ESCAPE.search(data) is not None
        try:
            text = bytes(data).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise WireError("not_utf8", f"the input is not UTF-8 (byte {exc.start})") from None
    else:
        text = data
        if not text.isascii() and _SURROGATE.search(text):
            raise _surrogate_error(text)
        escaped = "\\u" in text and _SURROGATE_ESCAPE_TEXT.search(text) is not None
    if text.startswith("\ufeff"):
        text = text[1:]
    try:
        value = _decoder.decode(text)  # a runaway nesting stops it with RecursionError
    except WireError:
        raise
    except RecursionError:
        raise WireError("too_deep", "the JSON nests too deeply") from None
    except ValueError as exc:  # JSONDecodeError, or int() over Python's digit limit
        detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise WireError("not_json", f"not valid JSON: {detail}") from None
    # Only a text with more brackets than the limit can nest deeper; walking the parsed
    # containers is several times cheaper than scanning the text for them.
    if text.count("[") + text.count("{") > max_depth and _deeper_than(value, max_depth):
        raise WireError("too_deep", f"the JSON nests deeper than {max_depth} levels")
    # A "\\uD83D" escape is legal JSON; alone (not followed by its low half) it makes a
    # string no UTF-8 writer can write. Only walk the value when the text had such an escape.
    if escaped and _has_surrogate(value):
        raise WireError("surrogate", "a string holds a lone UTF-16 surrogate")
    return value


def decode_json_object(data: bytes | bytearray | str, *, max_depth: int = MAX_DEPTH) -> dict[str, Any]:
    """:func:`decode_json`, and the value must be a JSON object."""
    value = decode_json(data, max_depth=max_depth)
    if not isinstance(value, dict):
        raise WireError("not_object", f"expected a JSON object, got {json_type(value)}")
    return value


def json_type(value: Any) -> str:
    """The JSON name of a decoded value's type, for error messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


_dumps_utf8 = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=str).encode
_dumps_ascii = json.JSONEncoder(ensure_ascii=True, separators=(",", ":"), default=str).encode


def encode_json(value: Any) -> bytes:
    """Compact JSON as UTF-8 bytes; lone surrogates come out as ``\\u`` escapes."""
    try:
        return _dumps_utf8(value).encode("utf-8")
    except UnicodeEncodeError:
        return _dumps_ascii(value).encode("ascii")


def encode_json_text(value: Any) -> str:
    """Compact JSON as text that always encodes to UTF-8 (for channels that take text)."""
    text = _dumps_utf8(value)
    if not text.isascii() and _SURROGATE.search(text):
        return _dumps_ascii(value)
    return text


def join_surrogates(text: str) -> str:
    """``text`` with each pair of surrogates (an emoji split across two deltas, joined back
    to back) made the one character it stands for; a lone surrogate stays as it is."""
    if text.isascii() or _SURROGATE.search(text) is None:
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


def encode_text(text: str) -> bytes:
    """Plain text (not JSON: the terminal door's output) as UTF-8; never fails on a lone
    surrogate, which becomes ``?``."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace")


__all__ = [
    "MAX_DEPTH",
    "WireError",
    "decode_json",
    "decode_json_object",
    "encode_json",
    "encode_json_text",
    "encode_text",
    "join_surrogates",
    "json_type",
    "nesting_depth",
]
