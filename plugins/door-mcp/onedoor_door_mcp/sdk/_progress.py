"""``notifications/progress`` for one request: the progress token a call carries, and a sender tied to that request.

Over streamable HTTP a notification must be tied to its request or it is lost (1.x
stateless mode). 1.x ``send_notification`` drops a falsy request id (0), so on 1.x the
notification is built and tagged with ``related_request_id`` here; 2.x's request-scoped
channel is chosen by passing ``related_request_id``. The token is ``ctx.meta.progressToken``
(a model, 1.x) or a ``_meta`` dict entry (2.x).
"""

from __future__ import annotations

from typing import Any

import mcp.types as types
from mcp.shared.message import ServerMessageMetadata, SessionMessage

from ._version import MAJOR


def progress_token(meta: Any) -> Any:
    """The progress token of a request's ``_meta`` (None if it has none)."""
    if meta is None:
        return None
    if isinstance(meta, dict):
        for key in ("progressToken", "progress_token"):
            if meta.get(key) is not None:
                return meta[key]
        return None
    return getattr(meta, "progressToken", None)


class Progress:
    """Sends ``notifications/progress`` for one request, tied to that request."""

    def __init__(self, session: Any, token: Any, request_id: Any) -> None:
        self.session = session
        self.token = token
        self.request_id = request_id
        self.count = 0

    async def send(self, message: str, meta: dict[str, Any] | None = None) -> None:
        self.count += 1
        params = types.ProgressNotificationParams(
            progressToken=self.token, progress=float(self.count), message=message, _meta=meta  # type: ignore[arg-type]
        )
        if MAJOR >= 2:
            await self.session.send_notification(
                types.ProgressNotification(params=params), related_request_id=self.request_id
            )
            return
        note = types.JSONRPCNotification(
            jsonrpc="2.0",
            method="notifications/progress",
            params=params.model_dump(by_alias=True, mode="json", exclude_none=True),
        )
        await self.session.send_message(
            SessionMessage(
                message=types.JSONRPCMessage(note),
                metadata=ServerMessageMetadata(related_request_id=self.request_id),
            )
        )


__all__ = ["Progress", "progress_token"]
