"""Tool approvals: a backend asks before a tool runs, the door asks the editor.

A backend asks through the kernel's port BEFORE it emits ``ToolStarted`` for the call::

    if not await context.request_approval(call_id, "write_file", args):
        ...  # rejected (or the turn was cancelled): do not run the tool
    # sync backends (worker thread): context.request_approval_sync(call_id, name, args)

The kernel delivers every event sent before the question to the door first, pauses the
idle timeout while the question is open, and answers no on cancel. The door (``Turn``
passes ``approver=turn.ask_permission`` to ``kernel.run``) shows the call (``tool_call``,
status pending), sends ``session/request_permission`` with allow once / allow always /
reject once / reject always, and remembers the "always" answers in the session's
settings. A cancel while the question is open ends the wait: the answer is "no".
"""

from __future__ import annotations

import asyncio
from typing import Any

from .translate import tool_start

OPTIONS = [
    {"optionId": "allow_once", "name": "Allow once", "kind": "allow_once"},
    {"optionId": "allow_always", "name": "Always allow", "kind": "allow_always"},
    {"optionId": "reject_once", "name": "Reject", "kind": "reject_once"},
    {"optionId": "reject_always", "name": "Always reject", "kind": "reject_always"},
]
REJECTED = "The user rejected this tool call."


def _retrieve(future: asyncio.Future) -> None:
    if not future.cancelled():
        future.exception()


async def ask_editor(turn: Any, call_id: str, name: str, arguments: Any) -> bool:
    """The door side of one approval (called on the event loop by the Turn)."""
    session = turn.session
    settings = session.settings
    if turn.door.options.permissions == "allow" or name in settings.get("always_allow", ()):
        turn.approved.add(call_id)
        return True
    if call_id not in turn.announced:  # libraries that announce first already showed it
        turn.announced.add(call_id)
        await turn.notify(tool_start(call_id, name, arguments))
    if name in settings.get("always_reject", ()):
        await turn.reject(call_id, name, arguments)
        return False
    params = {
        "sessionId": session.id,
        "toolCall": {"toolCallId": call_id, "title": tool_start(call_id, name, arguments)["title"],
                     "kind": tool_start(call_id, name, arguments)["kind"], "status": "pending", "rawInput": arguments},
        "options": OPTIONS,
    }
    ask = asyncio.ensure_future(turn.door.conn.send_request("session/request_permission", params))
    ask.add_done_callback(_retrieve)
    stop = asyncio.ensure_future(turn.cancelled.wait())
    try:
        await asyncio.wait({ask, stop}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stop.cancel()
    if not ask.done():  # cancelled while the question was open: the answer is no
        ask.cancel()
        await turn.reject(call_id, name, arguments, reason="The turn was cancelled before the tool ran.")
        return False
    try:
        answer = ask.result()
    except Exception:  # noqa: BLE001 - the editor errored or went away
        await turn.reject(call_id, name, arguments, reason="The permission request failed.")
        return False
    outcome = (answer or {}).get("outcome") or {}
    choice = outcome.get("optionId") if outcome.get("outcome") == "selected" else None
    if choice in ("allow_always", "reject_always"):
        key = "always_allow" if choice == "allow_always" else "always_reject"
        names = list(settings.get(key, ()))
        if name not in names:
            settings[key] = names + [name]
            turn.door.sessions.save(session)
    if choice in ("allow_once", "allow_always"):
        turn.approved.add(call_id)
        return True
    await turn.reject(call_id, name, arguments)
    return False
