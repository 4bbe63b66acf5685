"""JSON-RPC messages between plain dicts and the SDK's ``SessionMessage``, and what 1.x would refuse noisily.

Parsing is ``JSONRPCMessage`` on 1.x and ``jsonrpc_message_adapter`` on 2.x; dumping is
``exclude_none`` on 1.x and ``exclude_unset`` on 2.x. The dicts come from, and go to,
:mod:`onedoor.wire.jsonrpc`. 1.x answers a request method outside its request union with
-32602 and logs every refusal with the whole pydantic report, so on 1.x the door checks
methods (:func:`is_unknown_method`) and params (:func:`params_problem`) first.
"""

from __future__ import annotations

import typing
from typing import Any

import mcp.types as types
from mcp.shared.message import SessionMessage
from onedoor.wire import jsonrpc

from ._version import MAJOR


def parse_message(data: dict[str, Any]) -> SessionMessage:
    """A SessionMessage from a JSON-RPC message already checked by :mod:`onedoor.wire.jsonrpc`;
    ValueError if the SDK's own model refuses it (e.g. an ``error`` that is not an object)."""
    try:
        if MAJOR >= 2:
            message = types.jsonrpc_message_adapter.validate_python(data, by_name=False)  # type: ignore[attr-defined]
        else:
            message = types.JSONRPCMessage.model_validate(data)
    except Exception:  # noqa: BLE001 - pydantic.ValidationError, or anything the model raises
        raise ValueError("not a JSON-RPC 2.0 request, notification or response MCP accepts") from None
    return SessionMessage(message)


def _root(item: SessionMessage) -> Any:
    message = item.message
    return getattr(message, "root", message)  # 1.x wraps messages in a RootModel


def request_id_of(item: SessionMessage) -> Any:
    """The id of a request (None for notifications and responses)."""
    root = _root(item)
    return root.id if isinstance(root, types.JSONRPCRequest) else None


def response_id_of(item: SessionMessage) -> Any:
    """The id a response or error answers (None for anything else)."""
    root = _root(item)
    return root.id if isinstance(root, (types.JSONRPCResponse, types.JSONRPCError)) else None


def as_dict(message: Any) -> dict[str, Any]:
    """One of the SDK's JSON-RPC messages as a plain dict."""
    if MAJOR >= 2:
        return message.model_dump(by_alias=True, mode="json", exclude_unset=True)
    return message.model_dump(by_alias=True, mode="json", exclude_none=True)


def message_dict(item: SessionMessage) -> dict[str, Any]:
    """An outgoing SessionMessage as a plain JSON-RPC dict (written with ``jsonrpc.dumps``)."""
    return as_dict(item.message)


def dump_message(item: SessionMessage) -> str:
    """An outgoing SessionMessage as one line of JSON that always encodes to UTF-8."""
    return jsonrpc.dumps(message_dict(item))


def _models_by_method(union: Any) -> dict[str, Any]:
    """``{method: model}`` for the members of a 1.x RootModel union (ClientRequest, …)."""
    models: dict[str, Any] = {}
    for cls in typing.get_args(union.model_fields["root"].annotation):
        field = getattr(cls, "model_fields", {}).get("method")
        if field is not None:
            models.update((a, cls) for a in typing.get_args(field.annotation) if isinstance(a, str))
    return models


# 2.x answers unknown methods (-32601) and invalid params (-32602) itself, quietly: these
# tables exist on 1.x only.
_REQUESTS = _models_by_method(types.ClientRequest) if MAJOR < 2 else None
_NOTIFICATIONS = _models_by_method(types.ClientNotification) if MAJOR < 2 else None


def is_unknown_method(method: str) -> bool:
    """True when this SDK would not answer the request method with -32601 itself."""
    return _REQUESTS is not None and method not in _REQUESTS


def params_problem(data: dict[str, Any]) -> str | None:
    """Why this SDK would refuse a request's or notification's params, in one line (1.x;
    None on 2.x, which answers such requests quietly itself). An unknown notification
    method is a problem too: 1.x logs it at length."""
    table = _REQUESTS if "id" in data else _NOTIFICATIONS
    if table is None:
        return None
    model = table.get(data["method"])
    if model is None:
        return None if "id" in data else f"unknown notification {data['method']!r}"
    try:
        model.model_validate({key: data[key] for key in ("method", "params") if key in data})
    except Exception as exc:  # noqa: BLE001 - pydantic.ValidationError
        return _first_error(exc)
    return None


def _first_error(exc: Exception) -> str:
    errors = getattr(exc, "errors", None)
    if callable(errors):
        try:
            first = errors()[0]
            where = ".".join(str(part) for part in first.get("loc", ()))
            return f"{where}: {first.get('msg')}" if where else str(first.get("msg"))
        except Exception:  # noqa: BLE001 - fall back on the text
            pass
    text = str(exc)
    return text.splitlines()[0] if text else type(exc).__name__


__all__ = [
    "as_dict", "dump_message", "is_unknown_method", "message_dict", "params_problem", "parse_message",
    "request_id_of", "response_id_of",
]
