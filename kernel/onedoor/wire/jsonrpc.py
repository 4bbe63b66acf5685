"""JSON-RPC 2.0 for the doors that speak it (MCP, ACP, A2A): codes, the shape check, replies.

A door reads each incoming message through :func:`parse_message`, which applies the
:mod:`onedoor.wire` policy and the JSON-RPC shape rules, and tells the door what to do:

* ``Incoming.message`` — a well-formed request, notification or response: handle it;
* ``Incoming.reply``   — an error response to send back (parse error, invalid request);
* neither              — drop it (a malformed *notification*: JSON-RPC never answers one).

Replies are built with :func:`error_response` and written with :func:`dumps`, which never
fails on text (lone surrogates are escaped). Protocols differ in small ways, which are
parameters of :func:`shape_problem` rather than copies of it: MCP forbids a null id and
array params; ACP allows both.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ._json import MAX_DEPTH, WireError, decode_json, encode_json_text

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603

TITLES = {
    PARSE_ERROR: "Parse error",
    INVALID_REQUEST: "Invalid Request",
    METHOD_NOT_FOUND: "Method not found",
    INVALID_PARAMS: "Invalid params",
    INTERNAL_ERROR: "Internal error",
}


def usable_id(value: Any) -> str | int | None:
    """``value`` if it can be echoed as a JSON-RPC id (a string or a whole number), else None."""
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        return None
    return value


def error_object(code: int, detail: str = "", data: Any = None) -> dict[str, Any]:
    """``{"code", "message"[, "data"]}``; the message is the code's title and the detail."""
    title = TITLES.get(code, "Error")
    error: dict[str, Any] = {"code": code, "message": f"{title}: {detail}" if detail else title}
    if data is not None:
        error["data"] = data
    return error


def error_response(request_id: Any, code: int, detail: str = "", data: Any = None) -> dict[str, Any]:
    """A JSON-RPC error response; an id that cannot be echoed becomes null."""
    return {"jsonrpc": "2.0", "id": usable_id(request_id), "error": error_object(code, detail, data)}


def shape_problem(message: Any, *, null_id: bool = False, array_params: bool = False) -> str | None:
    """Why ``message`` is not one JSON-RPC 2.0 request, notification or response (None if it is).

    ``null_id`` allows ``"id": null`` on requests; ``array_params`` allows positional params.
    """
    if isinstance(message, list):
        return "batches are not supported; send one message at a time"
    if not isinstance(message, dict):
        return "a JSON-RPC message must be a JSON object"
    if message.get("jsonrpc") != "2.0":
        return '"jsonrpc" must be "2.0"'
    if "id" in message and usable_id(message["id"]) is None and not (null_id and message["id"] is None):
        return '"id" must be a string or a whole number'
    if "method" in message:
        method = message["method"]
        if not isinstance(method, str) or not method:
            return '"method" must be a non-empty string'
        if "params" in message:
            params = message["params"]
            allowed = (dict, list) if array_params else (dict,)
            if not isinstance(params, allowed) and not (params is None and array_params):
                return '"params" must be an object'
        return None
    if "id" not in message or ("result" in message) == ("error" in message):
        return 'a message needs a "method", or an "id" with exactly one of "result" and "error"'
    return None  # a response's "error" is checked by the door that waits for it (it must fail that request)


@dataclass(frozen=True)
class Incoming:
    """What :func:`parse_message` made of one incoming message (see the module docstring)."""

    message: dict[str, Any] | None = None
    reply: dict[str, Any] | None = None
    problem: str | None = None  # why it was refused or dropped, for logs

    @property
    def dropped(self) -> bool:
        return self.message is None and self.reply is None


def parse_message(
    data: bytes | str, *, null_id: bool = False, array_params: bool = False, max_depth: int = MAX_DEPTH
) -> Incoming:
    """Decode one JSON-RPC message under the wire policy and check its shape."""
    try:
        value = decode_json(data, max_depth=max_depth)
    except WireError as exc:
        return Incoming(reply=error_response(None, PARSE_ERROR, str(exc)), problem=str(exc))
    problem = shape_problem(value, null_id=null_id, array_params=array_params)
    if problem is None:
        return Incoming(message=value)
    if isinstance(value, dict) and "id" not in value and isinstance(value.get("method"), str):
        return Incoming(problem=f"dropped an invalid notification: {problem}")  # never answer a notification
    request_id = value.get("id") if isinstance(value, dict) else None
    return Incoming(reply=error_response(request_id, INVALID_REQUEST, problem), problem=problem)


def dumps(message: dict[str, Any]) -> str:
    """One message as compact JSON text, safe to write as UTF-8 whatever its strings hold."""
    return encode_json_text(message)


__all__ = [
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "PARSE_ERROR",
    "Incoming",
    "dumps",
    "error_object",
    "error_response",
    "parse_message",
    "shape_problem",
    "usable_id",
]
