"""``GET /agui/capabilities``: what this agent does, in AG-UI 1.0's ``AgentCapabilities``
shape (camelCase JSON; every field optional, and left out where the door cannot know).

The official client (``@ag-ui/client`` 1.0.0) declares ``getCapabilities()`` on its
abstract agent but ``HttpAgent`` does not implement it and calls no URL: the path is this
door's (the one ADK and hermes-agent use too), and a client subclass can read it (the chat
page does). What it says, and where it comes from:

==================  =========================================================================
transport           streaming SSE; ``resumable``: a run is followed again from a cursor
                    (``GET runs/{id}/events`` with ``Last-Event-ID``)
tools               the backend's client tools (``client_tools`` capability): frontend
                    tools offered in the input are called and the run ends pending them
state               snapshots and JSON Patch deltas; ``persistentState`` when threads keep
                    the state between runs (a store that keeps state)
reasoning           ``streaming``: the backend's reasoning streams as REASONING_* events (no
                    ``supported``: whether a backend reasons is its own)
multimodal.input    the kinds the backend takes (``kernel.backend.accepts``) under the
                    server's media types: ``image``, ``audio``, ``video``, ``pdf`` (documents
                    of application/pdf), ``file`` (documents of any other type)
humanInTheLoop      approvals and questions as interrupts; frontend tools
custom.onedoor      door, protocol version, threads, the content limits and media types
==================  =========================================================================
"""

from __future__ import annotations

from typing import Any

from onedoor.content import media_type_allowed
from onedoor.threads import keeps_state


def capabilities(kernel: Any, door: str, protocol_version: str) -> dict[str, Any]:
    backend = kernel.backend
    store = getattr(kernel, "store", None)
    limits = kernel.limits
    accepts = frozenset(getattr(backend, "accepts", ()) or ())
    types = tuple(limits.media_types)
    documents = "document" in accepts
    client_tools = "client_tools" in (getattr(backend, "capabilities", ()) or ())
    from onedoor import __version__

    return {
        "identity": {"name": backend.name, "type": "onedoor", "version": __version__,
                     "description": f"the {backend.name!r} backend behind onedoor's AG-UI door"},
        "transport": {"streaming": True, "websocket": False, "httpBinary": False, "pushNotifications": False,
                      "resumable": True},
        "tools": {"supported": True, "clientProvided": client_tools},
        "state": {"snapshots": True, "deltas": True, "persistentState": keeps_state(store)},
        "reasoning": {"streaming": True, "encrypted": False},
        "multimodal": {"input": {
            "image": "image" in accepts and _family(types, "image"),
            "audio": "audio" in accepts and _family(types, "audio"),
            "video": "video" in accepts and _family(types, "video"),
            "pdf": documents and media_type_allowed("application/pdf", types),
            "file": documents and any(_other_file(p) for p in types),
        }},
        "humanInTheLoop": {"supported": True, "approvals": True, "interrupts": True, "feedback": False,
                           "approveWithEdits": False, "interventions": client_tools},
        "custom": {"onedoor": {
            "door": door,
            "protocolVersion": protocol_version,
            "threads": store is not None,
            "accepts": sorted(accepts),
            "mediaTypes": list(types),
            "maxParts": limits.max_parts,
            "maxPartBytes": limits.max_part_bytes,
            "maxContentBytes": limits.max_content_bytes,
            "maxStateChars": limits.max_state_chars,
        }},
    }


def _family(patterns: tuple[str, ...], family: str) -> bool:
    """Whether some media type of ``family`` (``image``…) is allowed."""
    return any(p in ("*/*", "*") or p.startswith(family + "/") for p in patterns)


def _other_file(pattern: str) -> bool:
    """A pattern allowing a document that is not a PDF (any file as a ``document`` part)."""
    return pattern in ("*/*", "*") or (pattern.split("/")[0] not in ("image", "audio", "video") and pattern != "application/pdf")


__all__ = ["capabilities"]
