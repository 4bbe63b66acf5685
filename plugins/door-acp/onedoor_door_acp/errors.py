"""The ACP error replies the agent raises: JSON-RPC errors titled by their code, an unknown session, a refused run.

Each is ``acp.RequestError`` (imported when one is made), which the router answers as a
JSON-RPC error with the message ``"<title>: <detail>"``.
"""

from __future__ import annotations

from typing import Any

from onedoor import RunRefused
from onedoor.wire import jsonrpc

RESOURCE_NOT_FOUND = -32002  # ACP's code for a session id that names no session


def error(code: int, detail: str, data: Any = None, *, title: str | None = None) -> Exception:
    """An ACP error reply: "<title>: <detail>", the title being the JSON-RPC code's unless given."""
    from acp import RequestError

    message = f"{title}: {detail}" if title else jsonrpc.error_object(code, detail)["message"]
    return RequestError(code, message, data)


def not_found(exc: Exception, session_id: str) -> Exception:
    """``session_id`` names no session (or its thread was deleted)."""
    return error(RESOURCE_NOT_FOUND, str(exc), {"sessionId": session_id}, title="Resource not found")


def invalid(message: str) -> Exception:
    """Invalid params (-32602)."""
    return error(jsonrpc.INVALID_PARAMS, message)


def refused(exc: RunRefused) -> Exception:
    """The kernel refused the run: "Busy" (-32603) when it is full, else invalid params."""
    data = {"reason": exc.reason, "retryAfter": exc.retry_after}
    if exc.reason == "busy":
        return error(jsonrpc.INTERNAL_ERROR, str(exc), data, title="Busy")
    return error(jsonrpc.INVALID_PARAMS, str(exc), data)


__all__ = ["RESOURCE_NOT_FOUND", "error", "invalid", "not_found", "refused"]
