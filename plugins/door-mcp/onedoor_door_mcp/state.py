"""A stored thread's shared state (:mod:`onedoor.state`) as an MCP resource, and the optional tool that changes it.

The state of each of the caller's threads is the resource
``onedoor://threads/{thread_id}/state`` (``application/json``; its version in the
contents' ``_meta["onedoor/state_version"]``), offered as a resource template
(``resources/templates/list``) and listed per thread (``resources/list``, newest first,
paged). It is the document every door sees: set on AG-UI or REST, changed by the agent,
read here. A thread is its owner's: another principal's thread, an unknown one and a
malformed URI are all "resource not found" (-32002), alike.

With the door option ``state_tool`` set, a second tool of that name changes a thread's
state between calls: a JSON Patch (``patch``) or a whole new state (``state``), at the
``version`` the caller read when given (a changed state is then refused, nothing lost).
"""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import quote, unquote

from onedoor import Kernel, ServeContext, ThreadError

from .sdk import Outcome, Peer, ProtocolError

TEMPLATE = "onedoor://threads/{thread_id}/state"
MIME = "application/json"
VERSION_META = "onedoor/state_version"
RESOURCE_NOT_FOUND = -32002  # MCP's code for resources/read of an unknown resource
INVALID_PARAMS = -32602
_URI = re.compile(r"onedoor://threads/([^/?#]+)/state")
PAGE = 50


def state_uri(thread_id: str) -> str:
    return TEMPLATE.format(thread_id=quote(thread_id, safe=""))


def _principal(peer: Peer) -> str:
    return ServeContext.principal_of(peer.scope)


def _text(state: Any) -> str:
    return json.dumps(state, ensure_ascii=False, sort_keys=True)


class StateResources:
    """The caller's threads' states, as MCP resources (:class:`onedoor_door_mcp.sdk.Resources`)."""

    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel

    def templates(self) -> list[dict[str, Any]]:
        return [{
            "uriTemplate": TEMPLATE,
            "name": "thread-state",
            "title": "A thread's shared state",
            "description": "The shared state (a JSON object) of one of your stored threads: what the agent and the "
            "front ends edit together, as stored now. The 'thread' an ask call returned is its thread_id.",
            "mimeType": MIME,
        }]

    async def page(self, peer: Peer, cursor: str | None) -> tuple[list[dict[str, Any]], str | None]:
        try:
            page = await self.kernel.threads.page(_principal(peer), limit=PAGE, before=cursor)
        except ThreadError as exc:
            if exc.reason == "no_threads":
                return [], None
            raise ProtocolError(INVALID_PARAMS, f"Invalid cursor: {exc}") from None
        found = [{"uri": state_uri(t.id), "name": f"{t.id} state", "title": f"State of {t.title or t.id}",
                  "mimeType": MIME} for t in page.threads]
        return found, page.next_before

    async def read(self, uri: str, peer: Peer) -> list[dict[str, Any]]:
        match = _URI.fullmatch(uri)
        if match is None:
            raise ProtocolError(RESOURCE_NOT_FOUND, f"Resource not found: {uri[:200]!r} (this server offers {TEMPLATE})")
        thread_id = unquote(match.group(1))
        try:
            state, version = await self.kernel.threads.state(_principal(peer), thread_id)
        except ThreadError as exc:
            raise ProtocolError(RESOURCE_NOT_FOUND, f"Resource not found: {uri[:200]!r} ({_why(exc, thread_id)})") from None
        return [{"uri": uri, "mimeType": MIME, "text": _text(state), "_meta": {VERSION_META: version}}]


def _why(exc: ThreadError, thread_id: str) -> str:
    if exc.reason == "no_state":
        return "this server's thread store keeps no state"
    if exc.reason == "no_threads":
        return "this server keeps no threads"
    if exc.reason == "invalid":
        return "not a thread id"
    return f"no thread {thread_id[:128]!r} (unknown, deleted, or not yours)"


# -- the optional tool -------------------------------------------------------------------------

STATE_OUTPUT = {
    "type": "object",
    "properties": {
        "thread": {"type": "string"},
        "state": {"type": "object", "description": "The thread's state as stored after the change."},
        "state_version": {"type": "integer", "minimum": 0},
    },
    "required": ["thread", "state", "state_version"],
}

_REASONS = {
    "stale": "the state changed since that version; read it again (the resource {uri}) and retry",
    "invalid": "the change does not apply",
    "too_large": "the state would be too large",
    "no_state": "this server's thread store keeps no state",
    "no_threads": "this server keeps no threads",
    "conflict": "the state kept changing while saving; try again",
}


class StateTool:
    """``NAME {thread, patch | state, version?}``: change a stored thread's shared state."""

    def __init__(self, kernel: Kernel, name: str) -> None:
        self.kernel = kernel
        self.name = name

    def definition(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "title": "Change a thread's shared state",
            "description": "Change the shared state of a stored thread (the 'thread' an ask call returned) between "
            "calls: 'patch' is a JSON Patch (RFC 6902: add, remove, replace, move, copy, test), applied atomically; "
            "'state' replaces the whole state. With 'version' (the state_version you read) the change is refused if "
            "someone changed the state since. The result is the state as stored.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "thread": {"type": "string", "minLength": 1, "maxLength": 128},
                    "patch": {"type": "array", "items": {"type": "object"}, "description": "JSON Patch operations."},
                    "state": {"type": "object", "description": "The whole new state."},
                    "version": {"type": "integer", "minimum": 0, "description": "The state_version it is based on."},
                },
                "required": ["thread"],
                "additionalProperties": False,
            },
            "outputSchema": STATE_OUTPUT,
            "annotations": {"title": "Change a thread's shared state", "readOnlyHint": False, "idempotentHint": False,
                            "openWorldHint": False},
        }

    async def call(self, arguments: Any, peer: Peer | None) -> Outcome:
        try:
            thread_id, patch, state, version = _checked(arguments)
        except ValueError as exc:
            return Outcome(f"Invalid arguments for {self.name!r}: {exc}", is_error=True)
        principal = ServeContext.principal_of(peer.scope if peer is not None else None)
        desk = self.kernel.threads
        try:
            if patch is not None:
                thread = await desk.patch_state(principal, thread_id, patch, expected_version=version)
            else:
                thread = await desk.set_state(principal, thread_id, state, expected_version=version)
        except ThreadError as exc:
            why = _REASONS.get(exc.reason, "no such thread (unknown, deleted, or not yours)").format(uri=state_uri(thread_id))
            return Outcome(f"The state was not changed ({exc.reason}): {why}: {exc}", is_error=True,
                           meta={"onedoor/refused": exc.reason})
        structured = {"thread": thread.id, "state": thread.state, "state_version": thread.state_version}
        return Outcome(_text(thread.state), structured=structured)


def _checked(arguments: Any) -> tuple[str, Any, Any, int | None]:
    if not isinstance(arguments, dict):
        raise ValueError("arguments must be an object with a 'thread'")
    unknown = sorted(set(arguments) - {"thread", "patch", "state", "version"})
    if unknown:
        raise ValueError(f"unknown argument(s): {', '.join(unknown)}; expected 'thread', 'patch' or 'state', 'version'")
    thread_id = arguments.get("thread")
    if not isinstance(thread_id, str) or not thread_id:
        raise ValueError("'thread' is required: the id of a stored thread")
    patch, state = arguments.get("patch"), arguments.get("state")
    if (patch is None) == (state is None):
        raise ValueError("pass either 'patch' (a JSON Patch) or 'state' (the whole state)")
    if state is not None and not isinstance(state, dict):
        raise ValueError("'state' must be an object")
    version = arguments.get("version")
    if version is not None and (isinstance(version, bool) or not isinstance(version, int) or version < 0):
        raise ValueError("'version' must be a whole number (a state_version you read)")
    return thread_id, patch, state, version


__all__ = ["TEMPLATE", "StateResources", "StateTool", "state_uri"]
