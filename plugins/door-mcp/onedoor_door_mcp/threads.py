"""Stored threads for the ``ask`` tool: its ``thread`` and ``new_thread`` arguments.

``{"thread": ID}`` continues the caller's stored thread (the kernel's thread store,
owned by the caller's principal: the token's over HTTP, ``local`` over stdio and SLIM);
``{"new_thread": true}`` starts one. Either way the reply's structured content names the
thread (``{"reply": …, "thread": ID}``) and a second text block says the same as JSON,
for clients that show only text, so a calling agent can go on with the next call.
Without either argument the call is stateless (the caller sends ``history``).

A thread the caller cannot use (a malformed id, another principal's or an unknown
thread, a server without a store) is a tool error the calling model can read and act on,
never a protocol error: the session goes on.
"""

from __future__ import annotations

import json
from typing import Any

from onedoor.threads import Thread, ThreadError, check_thread_id

THREAD_PROPERTIES: dict[str, Any] = {
    "thread": {
        "type": "string",
        "minLength": 1,
        "maxLength": 128,
        "pattern": "^[A-Za-z0-9_.:-]+$",
        "description": "Continue this stored conversation (the id a previous call returned as 'thread'). "
        "The agent sees the thread's earlier turns; do not send 'history' with it.",
    },
    "new_thread": {
        "type": "boolean",
        "description": "Start a stored conversation with this message; the result names its id in 'thread'. "
        "Pass that id as 'thread' in later calls to continue it.",
    },
}


def output_schema() -> dict[str, Any]:
    """The structured content of a successful call; ``thread`` only on a stored thread."""
    return {
        "type": "object",
        "properties": {
            "reply": {"type": "string", "description": "The agent's final reply (the same as the first text block)."},
            "thread": {"type": "string", "description": "The stored thread this call used; pass it as 'thread' to continue."},
        },
        "required": ["reply"],
    }


def check_thread_arguments(arguments: dict[str, Any]) -> tuple[str | None, bool]:
    """``(thread id or None, new_thread)`` from the call's arguments; ValueError if unusable."""
    thread = arguments.get("thread")
    new = arguments.get("new_thread", False)
    if not isinstance(new, bool):
        raise ValueError("'new_thread' must be true or false")
    if thread is None and not new:
        return None, False
    if arguments.get("history"):
        raise ValueError("pass either 'history' or a thread, not both: a thread keeps its own history")
    if thread is None:
        return None, True
    if new:
        raise ValueError("pass either 'thread' (to continue one) or 'new_thread': true (to start one), not both")
    try:
        return check_thread_id(thread), False
    except ThreadError as exc:
        raise ValueError(f"'thread': {exc}") from None


async def open_thread(desk: Any, principal: str, thread_id: str | None, new: bool) -> Thread:
    """The caller's thread to run the call on (``kernel.threads``): read (``thread_id``) or
    created (``new``); ValueError in words for the calling model when it cannot be used."""
    try:
        if new:
            return await desk.create(principal)
        return await desk.get(principal, thread_id)
    except ThreadError as exc:
        raise ValueError(_unusable(exc, thread_id)) from None
    except Exception as exc:  # noqa: BLE001 - the store failed (disk, database): say so, keep serving
        raise ValueError(f"the thread store failed: {type(exc).__name__}: {exc}") from None


def _unusable(exc: ThreadError, thread_id: str | None) -> str:
    if exc.reason == "no_threads":
        return "this server keeps no threads (it runs with --store none); call without 'thread'"
    if exc.reason == "not_found":
        return f"no thread {thread_id!r} (unknown, deleted, or not yours); start one with \"new_thread\": true"
    return f"the thread could not be used: {exc}"


async def discard_unused(desk: Any, principal: str, thread: Thread) -> None:
    """Delete a thread created for a call that never ran (refused), so none is left empty."""
    try:
        await desk.delete(principal, thread.id)
    except Exception:  # noqa: BLE001 - best effort: an empty thread is harmless
        pass


def thread_note(thread_id: str) -> str:
    """The second text block of a call on a thread."""
    return json.dumps({"thread": thread_id})
