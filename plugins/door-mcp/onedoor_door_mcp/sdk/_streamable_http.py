"""The SDK's streamable HTTP session manager, and quiet logs when a session ends under a request.

The manager's constructor arguments differ (2.x takes ``max_request_body_size``). Both
SDKs log a traceback when a session ends (a DELETE, the server stopping) while one of its
requests is handed over, and 1.x an error for a late answer to a request it gave up:
nothing is wrong, so :func:`quiet_session_end` turns those records into one debug line.
"""

from __future__ import annotations

import logging
from typing import Any

import anyio

from ._version import MAJOR, log


def is_session_end(exc: BaseException) -> bool:
    """``exc`` says the session's streams were closed under a request: the session ended
    (a DELETE, the server stopping) while the request was handed to it."""
    closed = (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream)
    if isinstance(exc, BaseExceptionGroup):
        return all(is_session_end(inner) for inner in exc.exceptions)
    return isinstance(exc, closed)


# What the SDKs log, as errors, of a session that ends under a request; nothing is wrong.
_STREAMABLE_LOGGER = "mcp.server.streamable_http"  # a traceback: the streams were closed (both SDKs)
_SERVER_LOGGER = "mcp.server.lowlevel.server"  # 1.x: a late answer to a request the server gave up
_LATE_ANSWER = "Received response with an unknown request ID"


class _SessionEndFilter(logging.Filter):
    """Turns the SDKs' error records of a session that ended under a request into one
    debug line on the door's logger; every other record passes."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if record.name == _STREAMABLE_LOGGER and exc is not None and is_session_end(exc):
            log.debug("mcp: %s (%s: the session ended)", record.getMessage(), type(exc).__name__)
            return False
        if record.name == _SERVER_LOGGER and _LATE_ANSWER in record.getMessage():
            log.debug("mcp: a late answer to a request the server no longer waits for was dropped")
            return False
        return True


_QUIET = _SessionEndFilter()


def quiet_session_end() -> None:
    """Install :class:`_SessionEndFilter` on the SDK's loggers (once; idempotent)."""
    for name in (_STREAMABLE_LOGGER, _SERVER_LOGGER):
        logger = logging.getLogger(name)
        if _QUIET not in logger.filters:
            logger.addFilter(_QUIET)


def session_manager(
    server: Any, *, stateless: bool, hosts: list[str], origins: list[str], protect: bool, max_body: int
) -> Any:
    """The SDK's streamable HTTP session manager (SSE responses, so progress flows)."""
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
    from mcp.server.transport_security import TransportSecuritySettings

    quiet_session_end()
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=protect, allowed_hosts=hosts, allowed_origins=origins
    )
    kwargs: dict[str, Any] = {"app": server, "json_response": False, "stateless": stateless, "security_settings": security}
    if MAJOR >= 2:
        kwargs["max_request_body_size"] = max_body
    return StreamableHTTPSessionManager(**kwargs)


def unbuffered_handler(manager: Any) -> Any:
    """The 2.x manager's request handler without its body-limit middleware in front, or
    None (1.x has none; another layout: the door keeps the middleware).

    The middleware gathers the whole body into a bytearray and copies that to bytes, and
    both are held until the request ends: for a 5 MB file, 13 MB more. Behind the HTTP
    transport's guard, which has read the body whole (under its own cap), the door checks
    ``max_body_bytes`` itself and hands the body over as it came (``asgi.McpApp``).
    """
    if MAJOR < 2:
        return None
    from mcp.server.transport_security import RequestBodyLimitMiddleware

    wrapper = getattr(manager, "asgi_app", None)
    inner = getattr(wrapper, "app", None)
    return inner if isinstance(wrapper, RequestBodyLimitMiddleware) and inner == manager._handle_request else None


__all__ = ["is_session_end", "quiet_session_end", "session_manager", "unbuffered_handler"]
