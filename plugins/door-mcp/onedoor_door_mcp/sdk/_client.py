"""What a client of the door (:mod:`onedoor_door_mcp.client`) needs from the SDK: the message codec, the read timeout."""

from __future__ import annotations

from typing import Any, Callable

from ._messages import as_dict, parse_message
from ._version import MAJOR


def client_codec() -> tuple[Callable[[dict[str, Any]], Any], Callable[[Any], dict[str, Any]]]:
    """``(parse, dump)`` for a client: a checked JSON-RPC dict to the SDK's message
    (ValueError if the SDK refuses it), and the SDK's message back to a dict."""

    def parse(data: dict[str, Any]) -> Any:
        return parse_message(data).message

    return parse, as_dict


def read_timeout(seconds: float) -> Any:
    """A ``ClientSession`` read timeout in the form this SDK takes (timedelta on 1.x)."""
    if MAJOR >= 2:
        return seconds
    from datetime import timedelta

    return timedelta(seconds=seconds)


__all__ = ["client_codec", "read_timeout"]
