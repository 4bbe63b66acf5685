"""Tool approvals: a backend asks before a tool runs, the door asks the editor.

The kernel's port has no approval hook yet, so the door hands backends an
:class:`Approver` in ``RunContext.extras["approval"]``. A backend calls it BEFORE it
emits ``ToolStarted`` for the call::

    approver = context.extras.get("approval")
    if approver is not None and not await approver.request(call_id, "write_file", args):
        ...  # rejected (or the turn was cancelled): do not run the tool
    # sync backends (worker thread): approver.request_sync(call_id, name, args)

The door shows the call (``tool_call``, status pending), sends
``session/request_permission`` with allow once / allow always / reject once / reject
always, and remembers the "always" answers in the session's settings. A cancel while
the question is open ends the wait: the answer is "no".
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


class Approver:
    """One turn's approval channel to the editor."""

    def __init__(self, turn: Any, loop: asyncio.AbstractEventLoop) -> None:
        self.turn = turn
        self.loop = loop

    async def request(self, call_id: str, name: str, arguments: Any = None) -> bool:
        """True if the tool may run; False if the user rejected it or the turn was cancelled."""
        return await self.turn.ask_permission(call_id, name, arguments)

    def request_sync(self, call_id: str, name: str, arguments: Any = None) -> bool:
        """The same, from a sync backend's worker thread."""
        future = asyncio.run_coroutine_threadsafe(self.request(call_id, name, arguments), self.loop)
        while True:
            try:
                return future.result(timeout=0.5)
            except TimeoutError:
                if self.loop.is_closed():
                    return False
            except Exception:  # noqa: BLE001 - the loop went away or the request failed
                return False

    __call__ = request


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
    await turn.catch_up()
    await turn.notify(tool_start(call_id, name, arguments))
    turn.announced.add(call_id)
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
