"""A2A 0.3 file parts whose bytes are not base64: the protocol's error, not a server error.

a2a-sdk's 0.3 compatibility layer (1.2.3 to 1.3) turns a 0.3 ``FilePart``'s base64
``bytes`` into a 1.0 ``raw`` part with ``base64.b64decode``: bytes that are not base64
make it answer -32603 (an internal error) and log a traceback, and bytes with stray
characters are decoded to something else than was meant. :class:`V03Files`, in front of
the JSON-RPC endpoint, answers a ``message/send`` or ``message/stream`` whose file bytes
are not base64 (ASCII whitespace aside) with -32602, the data as every refusal of the
door has it (``{"error": "invalid_request", "detail": ..., "status": "422"}``), before
the SDK sees it. The body is the one the HTTP transport's guard decoded.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any, MutableMapping

from onedoor_transport_http.body import JSON_BODY

from .refusals import REST_PATH, door_path

SENDS = frozenset({"message/send", "message/stream"})
_WHITESPACE = str.maketrans("", "", " \t\r\n")


def bad_file_bytes(body: Any) -> str | None:
    """Why a 0.3 send's file part is not base64, or None."""
    if not isinstance(body, dict) or not isinstance(body.get("method"), str) or body["method"] not in SENDS:
        return None
    params = body.get("params")
    message = params.get("message") if isinstance(params, dict) else None
    parts = message.get("parts") if isinstance(message, dict) else None
    if not isinstance(parts, list):
        return None  # the SDK's own validation says what is wrong
    for index, part in enumerate(parts):
        file = part.get("file") if isinstance(part, dict) else None
        data = file.get("bytes") if isinstance(file, dict) else None
        if not isinstance(data, str):
            continue
        try:
            base64.b64decode(data.translate(_WHITESPACE), validate=True)
        except (binascii.Error, ValueError):
            return f"part {index}: the file's bytes are not valid base64"
    return None


class V03Files:
    """ASGI: the door's app; a 0.3 send with file bytes that are not base64 is answered here."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:
        jsonrpc = scope.get("type") == "http" and not door_path(scope).startswith(REST_PATH)
        body = scope.get(JSON_BODY) if jsonrpc else None
        why = bad_file_bytes(body) if body is not None else None
        if why is None or not isinstance(body, dict):
            await self.app(scope, receive, send)
            return
        error = {"code": -32602, "message": why, "data": {"error": "invalid_request", "detail": why, "status": "422"}}
        payload = json.dumps({"jsonrpc": "2.0", "id": _request_id(body), "error": error}).encode()
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]})
        await send({"type": "http.response.body", "body": payload})


def _request_id(body: dict[str, Any]) -> Any:
    request_id = body.get("id")
    return request_id if isinstance(request_id, (str, int)) and not isinstance(request_id, bool) else None


__all__ = ["V03Files", "bad_file_bytes"]
