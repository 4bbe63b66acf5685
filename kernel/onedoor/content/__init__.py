"""Content: what a message carries besides text (images, audio, video, documents,
resources, links, JSON data), checked the same way on every door.

A message's content is text, or a sequence of :class:`Part`. Plain strings stay valid
everywhere: a message of parts also has its text (:func:`text_of`), which is what a
backend written for text receives as its ``message`` and sees as ``Message.content``;
a backend that takes more reads the parts (``context.content``, ``Message.parts``).

==============  =================================================================
kind            fields
==============  =================================================================
text            ``text``
image, audio,   ``media_type`` and ``data`` (bytes, inline) or ``uri`` (a URL: it
video,          goes to the backend as a URL; the server never fetches it),
document        optional ``name`` (a file name, sanitised)
resource        ``uri`` with ``text`` (or ``data`` and a ``media_type``), optional
                ``lines`` (first and last line, 1-based: the part of the file it is)
resource_link   ``uri`` (a reference, never fetched by the server), optional ``name``,
                ``media_type``, ``size``, ``title``
data            ``value``: a JSON value (``media_type`` application/json by default)
==============  =================================================================

JSON (``Part.to_dict`` / :func:`part_from_dict`): ``{"type": kind, ...}`` with ``data`` as base64 and
``uri``, ``media_type``, ``name``, ``lines``, ``value``, ``title``, ``size``,
``metadata``. :func:`parse_content` turns what a client sent into parts under the
kernel's limits (:class:`~onedoor.limits.Limits`: ``max_parts``, ``max_part_bytes``,
``max_content_bytes``, ``media_types``), refusing with :class:`ContentError` (a clear
reason; doors answer 415 or 422) bad base64, a media type that lies about its bytes, a
URL of a scheme it cannot be, sizes over the limits, nesting.

Backends declare the kinds they take besides text (``Backend.accepts``): the kernel
refuses, before a run starts, a message with a part the backend cannot take (RunRefused
``unsupported_content``), except the kinds every backend can be given as text:
resources with text, links and JSON data (:func:`text_of` writes them out).
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_names

# The kinds of part: naming them loads nothing else.
MEDIA_KINDS = ("image", "audio", "video", "document")
TEXT_LIKE = ("resource", "resource_link", "data")  # every backend can be given these as text
KINDS = ("text", *MEDIA_KINDS, *TEXT_LIKE)
ALL_KINDS = frozenset(KINDS)

# The model and the reading of what a client sent are imported on first use: a run given
# text (``onedoor run``) loads neither.
_MODEL = ("ContentError", "ContentLimits", "Part", "kinds_of", "needs_backend", "text_of")
_PARSE = ("check_parts", "media_type_allowed", "parse_content", "part_from_dict", "safe_name")
__getattr__, __dir__ = lazy_names(__name__, {**dict.fromkeys(_MODEL, "._model"), **dict.fromkeys(_PARSE, "._parse")},
                                  globals())

if TYPE_CHECKING:  # for type checkers and editors: the same names, eagerly
    from ._model import ContentError, ContentLimits, Part, kinds_of, needs_backend, text_of
    from ._parse import check_parts, media_type_allowed, parse_content, part_from_dict, safe_name

__all__ = [
    "ALL_KINDS", "KINDS", "MEDIA_KINDS", "TEXT_LIKE", "ContentError", "ContentLimits", "Part", "check_parts", "kinds_of",
    "media_type_allowed", "needs_backend", "parse_content", "part_from_dict", "safe_name", "text_of",
]
