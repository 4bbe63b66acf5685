"""The thread endpoints the chat page uses (only when the server keeps threads).

=============================  =====================================================
GET    /agui/threads           the caller's threads, newest first: ``{"threads": [...],
                               "next": ID | null}`` (``?limit=1..200``, ``?before=ID``
                               for the next page)
GET    /agui/threads/{id}      one thread: ``{"threadId", "title", "messages": [AG-UI
                               messages], "createdAt", "updatedAt", "running": RUN |
                               null}`` (``running``: a run still going on it, see
                               :mod:`.reattach`)
DELETE /agui/threads/{id}      delete it: ``{"deleted": true, "threadId": ...}``
=============================  =====================================================

Every path acts for the caller's principal; another principal's thread is a 404 like
one that does not exist. Errors are JSON ``{"error", "detail"}``: 404 ``not_found``
(also: the server keeps no threads), 422 ``invalid_request`` (a bad id or query), 405.
"""

from __future__ import annotations

from typing import Any, Awaitable, Callable
from urllib.parse import parse_qs

from onedoor.threads import ThreadError, check_thread_id
from onedoor_transport_http.errors import send_error, send_json

from .threaded import summary_view, thread_view

MAX_LIST = 200
Running = Callable[[str, str], Awaitable[dict[str, Any] | None]]


def _query(scope: dict[str, Any]) -> dict[str, str]:
    raw = scope.get("query_string", b"").decode("latin-1")
    return {key: values[-1] for key, values in parse_qs(raw, keep_blank_values=True).items()}


class ThreadRoutes:
    """``/threads`` and ``/threads/{id}`` under the door's prefix."""

    def __init__(self, kernel: Any, principal_of: Callable[[Any], str], running: Running) -> None:
        self.kernel = kernel
        self.principal_of = principal_of
        self.running = running  # (principal, thread id) -> the run still going on it, or None

    async def __call__(self, scope: dict[str, Any], path: str, send: Any) -> None:
        """``path`` is ``/threads`` or ``/threads/...`` (the prefix removed)."""
        method = scope["method"]
        store = getattr(self.kernel, "store", None)
        if store is None:
            await send_error(send, 404, "not_found", "this server keeps no threads (it runs with --store none)")
            return
        principal = self.principal_of(scope)
        rest = path[len("/threads") :].lstrip("/")
        if not rest:
            if method in ("GET", "HEAD"):
                await self.list(scope, send, store, principal)
            else:
                await send_error(send, 405, "method_not_allowed", f"{method} is not allowed on /threads; GET lists them")
            return
        try:
            thread_id = check_thread_id(rest)
        except ThreadError as exc:
            await send_error(send, 422, "invalid_request", f"thread id: {exc}")
            return
        if method in ("GET", "HEAD"):
            thread = await store.get(principal, thread_id)
            if thread is None:
                await send_error(send, 404, "not_found", f"no thread {thread_id!r}")
                return
            view = thread_view(thread)
            view["running"] = await self.running(principal, thread_id)
            await send_json(send, 200, view)
        elif method == "DELETE":
            if not await store.delete(principal, thread_id):
                await send_error(send, 404, "not_found", f"no thread {thread_id!r}")
                return
            self.kernel.forget_thread(thread_id, principal)  # its runs stop, their journals (its text) go
            await send_json(send, 200, {"deleted": True, "threadId": thread_id})
        else:
            await send_error(send, 405, "method_not_allowed", f"{method} is not allowed on a thread; GET or DELETE it")

    async def list(self, scope: dict[str, Any], send: Any, store: Any, principal: str) -> None:
        query = _query(scope)
        raw_limit = query.get("limit", "50")
        if not (raw_limit.isascii() and raw_limit.isdigit()) or not 1 <= int(raw_limit) <= MAX_LIST:
            await send_error(send, 422, "invalid_request", f"limit must be a whole number from 1 to {MAX_LIST}")
            return
        limit = int(raw_limit)
        before = query.get("before") or None
        if before is not None:
            try:
                check_thread_id(before)
            except ThreadError as exc:
                await send_error(send, 422, "invalid_request", f"before: {exc}")
                return
        summaries = await store.list(principal, limit=limit + 1, before=before)
        page = summaries[:limit]
        more = len(summaries) > limit
        await send_json(
            send, 200, {"threads": [summary_view(s) for s in page], "next": page[-1].id if more and page else None}
        )


__all__ = ["ThreadRoutes"]
