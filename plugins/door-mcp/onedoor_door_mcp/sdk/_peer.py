"""The client of one request (:class:`Peer`): its request's ``_meta``, whether it can be asked, and asking it by
form-mode elicitation.

A request's ``_meta`` is a model with extra fields on 1.x and a dict on 2.x
(:func:`request_meta` makes both a plain dict).

The client's capabilities are ``client_params`` on 1.x and ``client_capabilities`` on
2.x, where a 2026-07-28 connection has no back-channel for server requests: its client
is asked in the call's result instead (``input_required``, multi-round-trip; ``rounds``
says so, and ``retry`` holds what a retried call carries back, :mod:`._rounds`).
``elicitation/create`` is tied to the tool call's request (a ``ServerRequest`` wrapper on
1.x, snake_case fields on 2.x); on 1.x the session's pending requests are iterated over a
snapshot when it ends (:class:`_PendingRequests`).
"""

from __future__ import annotations

from typing import Any

import mcp.types as types
from mcp.shared.message import ServerMessageMetadata

from ._rounds import InputRound
from ._version import MAJOR

CLIENT_GONE = "onedoor.mcp.client_gone"  # ASGI scope key: an anyio.Event set on http.disconnect


class Peer:
    """The client of one ``tools/call``: can it be asked (form-mode elicitation), and asking it.

    The request goes out tied to the tool call (``related_request_id``), so over
    streamable HTTP it rides the call's own response stream, and over stdio and SLIM the
    session's one channel.
    """

    def __init__(self, session: Any, request_id: Any, request: Any = None, meta: dict[str, Any] | None = None) -> None:
        self.session = session
        self.request_id = request_id
        self.request = request  # the HTTP request that carried the call (Starlette), if any
        self.meta = meta or {}  # the request's ``_meta`` as a plain dict (e.g. W3C ``traceparent``)
        self.retry: InputRound | None = None  # a retried call (2026-07-28): its input responses and state

    @property
    def protocol_version(self) -> str:
        """The MCP revision of this request ("" when the SDK does not say, 1.x)."""
        return str(getattr(self.session, "protocol_version", "") or "") if MAJOR >= 2 else ""

    @property
    def rounds(self) -> bool:
        """This request's revision has no server-to-client requests: the client is asked in the
        call's result (``input_required``) and answers in a retried call (2026-07-28 on)."""
        return MAJOR >= 2 and self.protocol_version in _modern_versions()

    @property
    def scope(self) -> Any:
        """The ASGI scope of the HTTP request that carried the call (None off HTTP)."""
        return getattr(self.request, "scope", None)

    @property
    def gone(self) -> Any:
        """An event set when the HTTP client of this call disconnects (None off HTTP);
        the door's ASGI app puts it in the request's scope (:data:`CLIENT_GONE`)."""
        scope = self.scope
        return scope.get(CLIENT_GONE) if isinstance(scope, dict) else None

    def capabilities(self) -> Any:
        """The capabilities the client declared (None if it declared none, e.g. 1.x stateless HTTP)."""
        if MAJOR >= 2:
            return getattr(self.session, "client_capabilities", None)
        params = getattr(self.session, "client_params", None)
        return getattr(params, "capabilities", None)

    @property
    def can_elicit(self) -> bool:
        """The client declared form-mode elicitation, and it can be asked on this connection (a
        request from the server, or, see :attr:`rounds`, an input request in the result)."""
        return self.why_not_asked is None

    @property
    def why_not_asked(self) -> str | None:
        """Why this client cannot be asked (None when it can), in words for the tool result."""
        caps = self.capabilities()
        if caps is None:  # no initialize on this connection: stateless HTTP keeps no session
            return "a stateless HTTP connection keeps no session, so the client's capabilities are unknown"
        elicitation = getattr(caps, "elicitation", None)
        if elicitation is None:
            return "the client did not declare the elicitation capability"
        # ``elicitation: {}`` (before 2025-11-25) means form mode; ``{url: {}}`` alone does not.
        if getattr(elicitation, "form", None) is None and getattr(elicitation, "url", None) is not None:
            return "the client declared URL-mode elicitation only, and the questions are forms"
        if MAJOR >= 2 and not self.rounds:
            if not getattr(self.session, "can_send_request", True):
                return "the connection cannot carry a request from the server to the client"
        return None

    @property
    def client_name(self) -> str:
        params = getattr(self.session, "client_params", None)
        info = getattr(params, "clientInfo", None) or getattr(params, "client_info", None)
        return str(getattr(info, "name", "") or "")

    async def elicit(self, message: str, schema: dict[str, Any], meta: dict[str, Any] | None = None) -> tuple[str, Any]:
        """Send ``elicitation/create`` (form mode) and return the client's ``(action, content)``.

        Raises what the SDK raises: an error response, a result its model refuses, a
        closed connection.
        """
        if MAJOR >= 2:
            params = types.ElicitRequestFormParams(message=message, requested_schema=schema, _meta=meta)  # type: ignore[call-arg]
            request: Any = types.ElicitRequest(params=params)
        else:
            params = types.ElicitRequestFormParams(message=message, requestedSchema=schema, _meta=meta)  # type: ignore[arg-type]
            request = types.ServerRequest(types.ElicitRequest(params=params))
            _snapshot_pending(self.session)
        result = await self.session.send_request(
            request, types.ElicitResult, metadata=ServerMessageMetadata(related_request_id=self.request_id)
        )
        return result.action, result.content


class _PendingRequests(dict):  # type: ignore[type-arg]
    """A 1.x session's pending server requests, iterated over a snapshot.

    When a 1.x session's input ends, it fails each pending request while iterating this
    dict, and a request whose task wakes meanwhile (a cancelled elicitation) removes its
    entry: "dictionary changed size during iteration" crashes the session with a traceback.
    """

    def items(self) -> Any:
        return list(super().items())


def _snapshot_pending(session: Any) -> None:
    pending = getattr(session, "_response_streams", None)
    if type(pending) is dict:  # swapped before any await: no entry can be lost
        session._response_streams = _PendingRequests(pending)


def request_meta(meta: Any) -> dict[str, Any]:
    """A request's ``_meta`` as a plain dict (empty when it has none)."""
    if meta is None:
        return {}
    if isinstance(meta, dict):
        return dict(meta)
    try:
        dumped = meta.model_dump(by_alias=True, mode="json", exclude_none=True)
    except Exception:  # noqa: BLE001 - not a model: nothing to read
        return {}
    return dumped if isinstance(dumped, dict) else {}


def _modern_versions() -> tuple[str, ...]:
    try:
        from mcp.shared.inbound import MODERN_PROTOCOL_VERSIONS  # type: ignore[import-not-found]  # 2.x (from mcp-types)
    except ImportError:  # 1.x, or a 2.x without the 2026-07-28 era
        return ()
    return tuple(MODERN_PROTOCOL_VERSIONS)


__all__ = ["CLIENT_GONE", "Peer", "request_meta"]
