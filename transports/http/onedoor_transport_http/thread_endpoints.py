"""Thread endpoints for a plain-ASGI door, shaped by the door's own views.

=============================  ==================================================
GET    {prefix}/threads        a page of the caller's threads, newest first
                               (``?limit=1..MAX``, ``?before=ID`` for the next page)
GET    {prefix}/threads/{id}   one thread
DELETE {prefix}/threads/{id}   delete it (its runs stop, their journals go)
=============================  ==================================================

The calls are ``kernel.threads`` (:class:`onedoor.ThreadDesk`); every refusal is the one
table of :mod:`.errors` (404 ``unknown_thread`` for another principal's thread as for an
unknown one, 422 for a bad id or query, 501 without a store). A door passes a
:class:`ThreadViews` saying how its protocol writes each answer.
"""

from __future__ import annotations

from typing import Any, Callable, Protocol
from urllib.parse import parse_qs

from onedoor import ThreadError, ThreadPage
from onedoor.threads import check_thread_id

from .errors import REFUSED, send_error, send_json, send_refusal

MAX_LIMIT = 200


class ThreadViews(Protocol):
    """How a door writes its thread answers (JSON-able values)."""

    def page(self, page: ThreadPage) -> Any: ...

    async def thread(self, thread: Any, principal: str) -> Any: ...

    def deleted(self, thread_id: str) -> tuple[int, Any]:
        """Status and body (None: no body) of a delete's answer."""
        ...


def query_values(scope: dict[str, Any]) -> dict[str, str]:
    """The query string's values (the last of each name)."""
    raw = scope.get("query_string", b"").decode("latin-1")
    return {key: values[-1] for key, values in parse_qs(raw, keep_blank_values=True).items()}


def page_query(query: dict[str, str], *, default: int = 50, maximum: int = MAX_LIMIT) -> tuple[int, str | None]:
    """``limit`` and ``before`` of a listing; ThreadError ``invalid`` (422) for anything else."""
    raw = query.get("limit", str(default))
    if not (raw.isascii() and raw.isdigit() and len(raw) <= 6) or not 1 <= int(raw) <= maximum:
        raise ThreadError("invalid", f"limit must be a whole number from 1 to {maximum}")
    before = query.get("before") or None
    if before is not None:
        try:
            check_thread_id(before)
        except ThreadError as exc:
            raise ThreadError("invalid", f"before: {exc}") from None
    return int(raw), before


class ThreadEndpoints:
    """``/threads`` and ``/threads/{id}`` under a door's prefix (see the module docstring)."""

    def __init__(self, kernel: Any, principal_of: Callable[[Any], str], views: ThreadViews) -> None:
        self.kernel = kernel
        self.principal_of = principal_of
        self.views = views

    async def __call__(self, scope: dict[str, Any], path: str, send: Any) -> None:
        """``path`` is ``/threads`` or ``/threads/...`` (the door's prefix removed)."""
        try:
            await self._answer(scope, path, send)
        except REFUSED as exc:
            await send_refusal(send, exc)

    async def _answer(self, scope: dict[str, Any], path: str, send: Any) -> None:
        method = scope["method"]
        desk = self.kernel.threads
        principal = self.principal_of(scope)
        rest = path[len("/threads"):].lstrip("/")
        if not rest:
            if method not in ("GET", "HEAD"):
                await send_error(send, 405, "method_not_allowed", f"{method} is not allowed on /threads; GET lists them")
                return
            limit, before = page_query(query_values(scope))
            await send_json(send, 200, self.views.page(await desk.page(principal, limit=limit, before=before)))
        elif method in ("GET", "HEAD"):
            thread = await desk.view(principal, rest)
            await send_json(send, 200, await self.views.thread(thread, principal))
        elif method == "DELETE":
            await desk.delete(principal, rest)
            status, body = self.views.deleted(rest)
            if body is None:
                await send({"type": "http.response.start", "status": status, "headers": []})
                await send({"type": "http.response.body", "body": b""})
            else:
                await send_json(send, status, body)
        else:
            await send_error(send, 405, "method_not_allowed", f"{method} is not allowed on a thread; GET or DELETE it")



__all__ = ["MAX_LIMIT", "ThreadEndpoints", "ThreadViews", "page_query", "query_values"]
