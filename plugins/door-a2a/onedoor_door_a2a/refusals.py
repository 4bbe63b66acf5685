"""A kernel refusal of a new task's run, in each binding's shape, before any task exists.

The refusal is the HTTP transport's one table (``onedoor_transport_http.errors.refusal``):
the same status and code REST and AG-UI answer for the same condition.

- JSON-RPC: an A2A error (``InvalidParamsError`` -32602 for the caller's mistakes,
  ``InternalError`` -32603 for busy and an unreachable store) whose data, the
  ``google.rpc.ErrorInfo`` metadata the SDK puts in ``error.data`` (and its client in
  the exception's ``data``), is ``{"error": code, "detail": ..., "status": "429"}``
  (plus ``retry_after``). ErrorInfo metadata is a map of strings: the status is text.
- HTTP+JSON binding: the SDK would answer its own ``google.rpc.Status`` body with its
  own status (400 or 500). :class:`RestRefusals`, in front of the binding, answers the
  transport's refusal instead: the table's status, ``{"error": code, "detail": ...}``
  and its headers (``Retry-After``).

A part of a type the agent does not take (``unsupported_content``, 415 on the other
doors) has an error of A2A's own, and gets it on both bindings: ``ContentTypeNotSupportedError``
(-32005; on HTTP+JSON the SDK's 400 with reason ``CONTENT_TYPE_NOT_SUPPORTED``), with the
same data, so the SDK clients raise their ``ContentTypeNotSupportedError``.

The admission notes the other refusals where :class:`RestRefusals` finds them (a list in
the ASGI scope, passed on in the SDK's call-context state by ``app.PrincipalContextBuilder``).
"""

from __future__ import annotations

from typing import Any, MutableMapping

from onedoor_transport_http.errors import Refusal, refusal, send_error

NOTED = "onedoor.a2a.refusals"  # scope key and call-context state key: the refusals of this request
UNSUPPORTED = "unsupported_content"  # the table's code for a part the agent does not take
REST_PATH = "/rest/"  # the HTTP+JSON binding, under the door's prefix


def a2a_error(exc: Exception) -> tuple[Exception, Refusal]:
    """The A2A error for a kernel refusal (RunRefused, ThreadError), and the refusal itself."""
    from a2a.utils.errors import (
        ContentTypeNotSupportedError,
        InternalError,
        InvalidParamsError,
        UnsupportedOperationError,
    )

    answer = refusal(exc)
    data = {"error": answer.code, "detail": answer.detail, "status": str(answer.status)}
    retry_after = answer.header_dict.get("retry-after")
    if retry_after:
        data["retry_after"] = retry_after
    if answer.code == UNSUPPORTED:
        kind: Any = ContentTypeNotSupportedError
    elif answer.status == 501:
        kind = UnsupportedOperationError
    elif answer.status >= 500 or answer.status == 429:
        kind = InternalError
    else:
        kind = InvalidParamsError
    return kind(message=answer.detail, data=data), answer


ELSEWHERE = "task_elsewhere"  # a message for a task whose run another server holds


def elsewhere_error(task_id: str, *, waiting: bool) -> tuple[Exception, Refusal]:
    """The refusal of a message for a task another server runs (``waiting``: whose run waits
    there, and whose open question the store did not name: its journal is not shared)."""
    from a2a.utils.errors import UnsupportedOperationError

    if waiting:
        detail = (f"task {task_id} waits for its answer on another server, whose run's question this server cannot "
                  "read: send it again (a balancer with sticky sessions sends it to the server that asked), or cancel "
                  "the task")
    else:
        detail = f"task {task_id} is running on another server; wait for it to end (GetTask, SubscribeToTask) or cancel it"
    data = {"error": ELSEWHERE, "detail": detail, "status": "409"}
    return UnsupportedOperationError(message=detail, data=data), Refusal(409, ELSEWHERE, detail)


def note(call_context: Any, answer: Refusal) -> None:
    """Keep ``answer`` where :class:`RestRefusals` looks (only HTTP+JSON requests have a
    place; a content-type refusal keeps the A2A error there too)."""
    if answer.code == UNSUPPORTED:
        return
    state = getattr(call_context, "state", None)
    noted = state.get(NOTED) if state is not None else None
    if isinstance(noted, list):
        noted.append(answer)


def is_refusal_data(data: Any) -> bool:
    """The data of an A2A error made by :func:`a2a_error`."""
    return isinstance(data, dict) and {"error", "detail", "status"} <= set(data)


class RestRefusals:
    """ASGI: an HTTP+JSON request whose new task's run the kernel refused is answered
    with the transport's refusal instead of the SDK's error body."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:
        if scope.get("type") != "http" or not _is_rest(scope):
            await self.app(scope, receive, send)
            return
        noted: list[Refusal] = []
        scope[NOTED] = noted
        replaced = False

        async def answer(message: MutableMapping[str, Any]) -> None:
            nonlocal replaced
            if replaced:
                return  # the SDK's own error body: not sent
            if message["type"] == "http.response.start" and noted:
                replaced = True
                first = noted[0]
                await send_error(send, first.status, first.code, first.detail, first.headers)
                return
            await send(message)

        await self.app(scope, receive, answer)


def door_path(scope: MutableMapping[str, Any]) -> str:
    """The request's path under the door's prefix."""
    path = scope.get("path", "")
    root = scope.get("root_path", "")
    return path[len(root):] if root and path.startswith(root) else path


def _is_rest(scope: MutableMapping[str, Any]) -> bool:
    return door_path(scope).startswith(REST_PATH)


__all__ = ["ELSEWHERE", "NOTED", "RestRefusals", "a2a_error", "door_path", "elsewhere_error", "is_refusal_data", "note"]
