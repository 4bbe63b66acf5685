"""The one JSON policy every door and transport uses, in both directions.

Input (:func:`decode_json`) is strict, so every door refuses the same hostile bytes the
same way, before anything else reads them:

==================  ==========================================================  ==========
reason              what was sent                                               example
==================  ==========================================================  ==========
``not_utf8``        bytes that are not UTF-8                                    ``b"\\xff"``
``surrogate``       a lone UTF-16 surrogate (raw, or as a ``\\uD800`` escape)    ``"\\ud800"``
``not_json``        not JSON at all, or JSON extensions (NaN, Infinity)         ``{"a":``
``too_deep``        arrays/objects nested deeper than ``max_depth``             ``[[[[…]]]]``
``number``          a number literal over 100 characters, or a float overflow   ``1e999``
``not_object``      a JSON value other than an object, where one is required    ``null``
==================  ==========================================================  ==========

Each is a :class:`WireError` (a ``ValueError``) with a one-line message: an HTTP door
answers 400 (422 for ``not_object`` where the body is well-formed JSON), a JSON-RPC door
-32700 (-32600 for ``not_object``; see :mod:`onedoor.jsonrpc`).

Output (:func:`encode_json`, :func:`encode_json_text`) never fails on text: compact JSON
as UTF-8, and where a string holds a lone surrogate (half of an emoji split across two
text deltas, say) that string's JSON falls back to ``\\u`` escapes, which is lossless: a
client that joins the deltas gets the emoji back.
"""

from ._json import (
    MAX_DEPTH,
    MAX_NUMBER_CHARS,
    WireError,
    decode_json,
    decode_json_object,
    encode_json,
    encode_json_text,
    encode_text,
    join_surrogates,
    json_type,
    nesting_depth,
)

__all__ = [
    "MAX_DEPTH",
    "MAX_NUMBER_CHARS",
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
