"""The MCP Python SDK behind one interface: every difference between 1.x (1.26) and 2.x (2.3).

The rest of the door speaks plain Python: a tool definition as a dict, an
:class:`Outcome` (text, is_error), a :class:`ProtocolError`, a progress sender with
``send(message, meta)``, and JSON-RPC messages as dicts (:mod:`onedoor.wire.jsonrpc`).
This package turns those into the SDK's objects and back; nothing else in the door
imports ``mcp``. The door imports its names from here; each private module holds one
part and says what differs between the SDKs there:

- ``_version``: which SDK (``MAJOR``), its error class;
- ``_results``: :class:`Outcome`, :class:`ProtocolError`, and the SDK's tool, result and
  error objects (``McpError(ErrorData)`` on 1.x, ``MCPError(code=, message=)`` on 2.x),
  results built from their wire form;
- ``_progress``: :class:`Progress`, tied to its request (1.x drops a falsy request id);
- ``_peer``: the client of a request (:class:`Peer`: its request's ``_meta``, its
  capabilities, ``elicitation/create``, the revision: asked in the result on 2026-07-28);
- ``_rounds``: multi-round-trip requests (2.x): what a retried call carries back
  (:class:`InputRound`), and :class:`Sealing` of ``requestState`` by the SDK's boundary;
- ``_sessions``: the end of a session cancels its runs (:class:`SessionScope`; 2.x does
  it itself, 1.x lets handlers run on);
- ``_server``: :func:`build_server` (``request_handlers`` on 1.x, ``on_*`` handlers on 2.x):
  tools, and the door's :class:`Resources`; every request inside the door's ``observe``;
- ``_messages``: JSON-RPC parsing and dumping (:func:`parse_message`,
  :func:`message_dict`), and 1.x's noisy refusals checked first
  (:func:`is_unknown_method`, :func:`params_problem`);
- ``_client``: :func:`client_codec` and :func:`read_timeout` (a timedelta on 1.x, seconds
  on 2.x), used by :mod:`onedoor_door_mcp.client`;
- ``_streamable_http``: :func:`session_manager`, :func:`unbuffered_handler` (2.x: the
  manager without its body-buffering middleware), and :func:`quiet_session_end` for the
  records both SDKs log with a traceback when a session ends under a request.
"""

from __future__ import annotations

from ._client import client_codec, read_timeout
from ._messages import (
    dump_message,
    is_unknown_method,
    message_dict,
    params_problem,
    parse_message,
    request_id_of,
    response_id_of,
)
from ._peer import CLIENT_GONE, Peer, request_meta
from ._progress import Progress
from ._results import InputRequired, Outcome, ProtocolError
from ._rounds import NOT_ELICITATION, InputRound, Sealing
from ._server import CallTool, ListTools, Observe, Resources, SetLevel, build_server, run_server
from ._sessions import SessionScope, current_session
from ._streamable_http import is_session_end, quiet_session_end, session_manager, unbuffered_handler
from ._version import MAJOR, SDK_VERSION, log

__all__ = [
    "CLIENT_GONE", "MAJOR", "NOT_ELICITATION", "SDK_VERSION", "CallTool", "InputRequired", "InputRound", "ListTools",
    "Observe", "Outcome", "Peer", "Progress", "ProtocolError", "Resources", "Sealing", "SessionScope", "SetLevel", "build_server", "client_codec", "current_session",
    "dump_message", "is_session_end", "is_unknown_method", "log", "message_dict", "params_problem", "parse_message",
    "quiet_session_end", "read_timeout", "request_id_of", "request_meta", "response_id_of", "run_server",
    "session_manager", "unbuffered_handler",
]
