"""Runs on stored threads: the AG-UI ``threadId`` names a thread in the kernel's store.

AG-UI clients choose their thread ids, so the first run on an id creates the thread
(``store.create(principal, thread_id=...)``) and later runs continue it. The server's copy
is the history: of the input's messages only the new part counts (:mod:`.convert`), so a
client may send the whole conversation or only its new message. An id that another
principal holds is refused (409), and their thread is never read.

Stored messages go back to clients as AG-UI messages (:func:`to_agui`): the thread
endpoint and the MESSAGES_SNAPSHOT of a threaded run use them. Their ids are ``h0``,
``h1``… (the message's place in the thread); a snapshot numbers the run's own messages on
from there, so a client merging it by id ends with the thread's order.
"""

from __future__ import annotations

from typing import Any, Sequence

from onedoor import Message
from onedoor.threads import Thread, ThreadError, append_turn, check_thread_id, title_from

from .convert import NO_USER_MESSAGE, RunRequest
from .translate import _arguments_text


class ThreadRefused(Exception):
    """A threaded run that cannot start: an HTTP status, an error code and a detail."""

    def __init__(self, status: int, code: str, detail: str) -> None:
        super().__init__(detail)
        self.status = status
        self.code = code
        self.detail = detail


def to_agui(messages: Sequence[Message], prefix: str = "h") -> list[dict[str, Any]]:
    """Stored messages as AG-UI messages (camelCase dicts, ids ``h0``, ``h1``…)."""
    out: list[dict[str, Any]] = []
    for index, message in enumerate(messages):
        item: dict[str, Any] = {"id": f"{prefix}{index}", "role": message.role, "content": message.content}
        if message.role == "assistant" and message.tool_calls:
            item["toolCalls"] = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": _arguments_text(c.arguments)}}
                for c in message.tool_calls
            ]
        elif message.role == "tool":
            item["toolCallId"] = message.tool_call_id or ""
        out.append(item)
    return out


def _unanswered(thread: Thread, new: Sequence[Message]) -> list[Message]:
    """``new`` without tool results the thread already holds (a client retrying a refused
    run sends them again)."""
    answered = {m.tool_call_id for m in thread.messages if m.role == "tool"}
    return [m for m in new if m.role != "tool" or m.tool_call_id not in answered]


async def open_thread(store: Any, principal: str, request: RunRequest) -> Thread:
    """The caller's thread for this run, created when new, with the input's new user and
    tool messages (those before the prompt) added; :class:`ThreadRefused` when it cannot be."""
    try:
        thread_id = check_thread_id(request.thread_id)
    except ThreadError as exc:
        raise ThreadRefused(422, "invalid_request", f"threadId: {exc}") from None
    thread = await store.get(principal, thread_id)
    if thread is None:
        if not request.has_user:
            raise ThreadRefused(422, "invalid_request", f"{NO_USER_MESSAGE} (thread {thread_id!r} does not exist yet)")
        thread = await _create(store, principal, thread_id, request)
        added = list(request.history) if not thread.messages else _unanswered(thread, request.new)
    else:
        if request.nothing_new:
            raise ThreadRefused(
                422, "invalid_request", "the messages end with an assistant message: nothing new to answer on this thread"
            )
        added = _unanswered(thread, request.new)
    if added:
        try:
            thread = await append_turn(store, thread, added)
        except ThreadError as exc:
            raise _refusal(exc, thread_id) from None
    return thread


async def _create(store: Any, principal: str, thread_id: str, request: RunRequest) -> Thread:
    title = title_from([*request.history, Message("user", request.prompt)])
    try:
        return await store.create(principal, title=title, thread_id=thread_id)
    except ThreadError as exc:
        if exc.reason != "conflict":
            raise _refusal(exc, thread_id) from None
    found = await store.get(principal, thread_id)  # created a moment ago by this caller's other request?
    if found is None:
        raise ThreadRefused(
            409, "thread_taken", f"threadId {thread_id!r} is taken on this server; start the conversation with another threadId"
        )
    return found


def _refusal(exc: ThreadError, thread_id: str) -> ThreadRefused:
    if exc.reason == "too_large":
        return ThreadRefused(413, "too_large", str(exc))
    if exc.reason == "not_found":
        return ThreadRefused(404, "not_found", f"no thread {thread_id!r}")
    if exc.reason == "conflict":
        return ThreadRefused(409, "conflict", str(exc))
    if exc.reason == "unavailable":
        return ThreadRefused(503, "store_unavailable", f"the thread store cannot be reached now ({exc}); try again")
    return ThreadRefused(422, "invalid_request", str(exc))


def snapshot_base(thread: Thread, request: RunRequest) -> list[dict[str, Any]]:
    """What a threaded run's MESSAGES_SNAPSHOT starts with: the thread so far, then the
    prompt as the client sent it (the run's own messages follow)."""
    base = to_agui(thread.messages)
    if request.prompt:
        sent = next((m for m in reversed(request.new_messages) if m.get("role") == "user"), None)
        base.append({**(sent or {"role": "user", "content": request.prompt}), "id": f"h{len(base)}"})
    return base


def thread_view(thread: Thread) -> dict[str, Any]:
    """A thread as the thread endpoint shows it."""
    return {
        "threadId": thread.id,
        "title": thread.title,
        "messages": to_agui(thread.messages),
        "createdAt": thread.created_at,
        "updatedAt": thread.updated_at,
    }


def summary_view(summary: Any) -> dict[str, Any]:
    return {
        "threadId": summary.id,
        "title": summary.title,
        "messageCount": summary.message_count,
        "createdAt": summary.created_at,
        "updatedAt": summary.updated_at,
    }


__all__ = ["ThreadRefused", "open_thread", "snapshot_base", "summary_view", "thread_view", "to_agui"]
