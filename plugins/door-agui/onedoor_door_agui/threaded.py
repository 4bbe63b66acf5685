"""Runs on stored threads: the AG-UI ``threadId`` names a thread in the kernel's store.

AG-UI clients choose their thread ids, so the first run on an id creates the thread
(``kernel.threads.open(..., create=True)``) and later runs continue it. The server's copy
is the history: of the input's messages only the new part counts (:mod:`.convert`), so a
client may send the whole conversation or only its new message. An id that another
principal holds is refused (409), and their thread is never read.

Stored messages go back to clients as AG-UI messages (:func:`to_agui`): the thread
endpoint and the MESSAGES_SNAPSHOT of a threaded run use them. Their ids are ``h0``,
``h1``… (the message's place in the thread); a snapshot numbers the run's own messages on
from there, so a client merging it by id ends with the thread's order. User and tool
messages with parts go back as AG-UI parts (:mod:`.content`).

The thread's shared state: the thread endpoint shows it with its version
(``state``, ``stateVersion``); a run's input state is read against it by
:func:`run_state` (what goes to ``kernel.run(state=..., state_version=...)``).
"""

from __future__ import annotations

from typing import Any, Sequence

from onedoor import Message, RunRefused, Thread, ThreadError
from onedoor.threads import keeps_state, title_from

from .content import to_agui_parts, tool_content
from .convert import NO_USER_MESSAGE, RunRequest
from .translate import _arguments_text


def to_agui(messages: Sequence[Message], prefix: str = "h") -> list[dict[str, Any]]:
    """Stored messages as AG-UI messages (camelCase dicts, ids ``h0``, ``h1``…)."""
    out: list[dict[str, Any]] = []
    for index, message in enumerate(messages):
        content: Any = message.content
        if message.parts and message.role == "user":
            content = to_agui_parts(message.parts)
        elif message.parts and message.role == "tool":
            content = tool_content(message.content, message.parts)
        item: dict[str, Any] = {"id": f"{prefix}{index}", "role": message.role, "content": content}
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


async def open_thread(desk: Any, principal: str, request: RunRequest, store: Any = None) -> tuple[Thread, bool]:
    """The caller's thread for this run (``kernel.threads``), created when new, with the
    input's new user and tool messages (those before the prompt) added, and whether it was
    made now; a ThreadError (``taken``, ``invalid``, ``too_large``…) when it cannot be, a
    RunRefused for an input with nothing to answer or (before anything is added) a state
    based on a version the thread's state has moved on from (``state_conflict``)."""
    title = title_from([*request.history, Message("user", request.prompt)])
    try:
        thread, made = await desk.open(principal, request.thread_id, create=request.has_user, title=title)
    except ThreadError as exc:
        if exc.reason == "invalid":
            raise ThreadError("invalid", f"threadId: {exc}") from None
        if exc.reason != "not_found":
            raise
        raise RunRefused("invalid", f"{NO_USER_MESSAGE} (thread {request.thread_id!r} does not exist yet)") from None
    if made:
        added = list(request.history)
    elif request.nothing_new:
        raise RunRefused("invalid", "the messages end with an assistant message: nothing new to answer on this thread")
    else:
        added = _unanswered(thread, request.new)
    if keeps_state(store):
        run_state(thread, request)  # a stale state is refused before anything is added
    return await desk.add(thread, added), made


def run_state(thread: Thread | None, request: RunRequest) -> tuple[dict[str, Any] | None, int | None]:
    """``(state, state_version)`` for ``kernel.run``: what the client's input state means.

    None or ``{}`` without a ``stateVersion``: the client holds nothing to add (an official
    client sends ``{}`` before it has seen a state), so the thread's state is used. A state
    equal to the thread's: nothing changes (None). Any other state is the client's edit,
    kept with the thread; with ``stateVersion`` only if the thread's state is still at that
    version (RunRefused ``state_conflict`` otherwise), without it whatever the version is.
    Without a thread: the state sent (``{}`` and None: none).
    """
    state, version = request.state, request.state_version
    if state is None or (state == {} and version is None):
        return None, None
    if thread is None:
        return state, None
    if state == thread.state:
        return None, None
    if version is not None and version != thread.state_version:
        raise RunRefused("state_conflict", f"the state sent is based on version {version} of thread {thread.id!r}'s "
                         f"state, which is now at version {thread.state_version}: read it again "
                         "(GET threads/{id}) and send your change on top of it")
    return state, version


def final_state(run: Any) -> Any:
    """What a stored thread's run's translation reads at its end (``Translator(final_state=...)``):
    the thread's stored state, its version, and the state the run's events made."""

    def read() -> tuple[dict[str, Any], int, dict[str, Any] | None] | None:
        thread = run.thread
        return None if thread is None else (thread.state, thread.state_version, run.state)

    return read


def holds_history(thread: Thread, request: RunRequest) -> bool:
    """Whether the client's input shows the thread's history (as many user messages before
    the prompt as the thread holds): a client that joins a thread started elsewhere does not."""
    stored = sum(1 for m in thread.messages if m.role == "user")
    return request.held_users >= stored


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
        "state": thread.state,
        "stateVersion": thread.state_version,
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


class AguiThreadViews:
    """How the thread endpoints answer on this door (camelCase, AG-UI messages).
    ``running(principal, thread_id)``: the AG-UI run still going on a thread, or None."""

    def __init__(self, running: Any) -> None:
        self.running = running

    def page(self, page: Any) -> dict[str, Any]:
        return {"threads": [summary_view(s) for s in page.threads], "next": page.next_before}

    async def thread(self, thread: Thread, principal: str) -> dict[str, Any]:
        view = thread_view(thread)
        view["running"] = await self.running(principal, thread.id)
        return view

    def deleted(self, thread_id: str) -> tuple[int, Any]:
        return 200, {"deleted": True, "threadId": thread_id}


__all__ = [
    "AguiThreadViews", "final_state", "holds_history", "open_thread", "run_state", "snapshot_base", "summary_view", "thread_view",
    "to_agui",
]
