"""Client mistakes are not server errors: keep a2a-sdk from logging tracebacks for them.

a2a-sdk's JSON-RPC dispatcher answers a request that is not valid JSON-RPC, or whose
params do not parse, with the right error (-32600, -32602), but also logs it with
``logger.exception``: a full traceback on the server's stderr for every bad request a
client sends (its 0.3 compatibility layer too, for a 0.3 request that does not
validate, and in 1.2.3 for every A2A error it answers, such as a refusal, which that
version's 0.3 layer answers as -32603 with the error's message). This filter turns
exactly those records into one warning line (the reason, no traceback). Real failures
inside the SDK still log as they did.

The HTTP+JSON binding also logs every A2A error it answers (an ERROR line for -32603);
a kernel refusal the door answers (busy, too large… :mod:`.refusals`) is an expected
condition: those records go down to DEBUG, as the JSON-RPC binding has them.
"""

from __future__ import annotations

import logging

DISPATCHER_LOGGER = "a2a.server.routes.jsonrpc_dispatcher"
V03_LOGGER = "a2a.compat.v0_3.jsonrpc_adapter"  # the 0.3 compatibility layer (its own validation)
CLIENT_FAULTS = frozenset({"Failed to validate base JSON-RPC request", "Failed to parse request params",
                           "Failed to validate base JSON-RPC request for v0.3"})
# a2a-sdk 1.2.3's 0.3 layer logs every A2A error the handler raises (a refusal) as a traceback
V03_ERRORS = frozenset({"Unhandled exception in v0.3 JSONRPCAdapter", "Error during stream generation in v0.3 JSONRPCAdapter"})
REST_ERRORS_LOGGER = "a2a.utils.error_handlers"
REFUSAL_DATA = ", Data={'error': "  # how that logger shows the data of refusals.a2a_error


class ClientFaultsAsWarnings(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and (record.msg in CLIENT_FAULTS or (record.msg in V03_ERRORS and _is_a2a_error(record))):
            reason = record.exc_info[1]
            record.msg = f"{record.msg}: {type(reason).__name__}: {str(reason)[:200]}"
            record.args = None
            record.exc_info = None
            record.exc_text = None
            record.levelno, record.levelname = logging.WARNING, "WARNING"
        return True


def _is_a2a_error(record: logging.LogRecord) -> bool:
    from a2a.utils.errors import A2AError

    return record.exc_info is not None and isinstance(record.exc_info[1], A2AError)


class RefusalsAsDebug(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and args and isinstance(args[-1], str) and args[-1].startswith(REFUSAL_DATA):
            record.levelno, record.levelname = logging.DEBUG, "DEBUG"
            return logging.getLogger(record.name).isEnabledFor(logging.DEBUG)
        return True


def install() -> None:
    """Add the filters once (every door instance in the process shares the SDK's loggers)."""
    for name, kind in ((DISPATCHER_LOGGER, ClientFaultsAsWarnings), (V03_LOGGER, ClientFaultsAsWarnings),
                       (REST_ERRORS_LOGGER, RefusalsAsDebug)):
        logger = logging.getLogger(name)
        if not any(isinstance(f, kind) for f in logger.filters):
            logger.addFilter(kind())


__all__ = ["ClientFaultsAsWarnings", "RefusalsAsDebug", "install"]
