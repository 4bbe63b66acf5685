"""The kinds of part (see :mod:`onedoor.content`): constants only, so that naming them
loads nothing else."""

MEDIA_KINDS = ("image", "audio", "video", "document")
TEXT_LIKE = ("resource", "resource_link", "data")  # every backend can be given these as text
KINDS = ("text", *MEDIA_KINDS, *TEXT_LIKE)
ALL_KINDS = frozenset(KINDS)

__all__ = ["ALL_KINDS", "KINDS", "MEDIA_KINDS", "TEXT_LIKE"]
