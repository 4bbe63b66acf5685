"""Client mistakes are not server errors: keep a2a-sdk from logging tracebacks for them.

a2a-sdk's JSON-RPC dispatcher answers a request that is not valid JSON-RPC, or whose
params do not parse, with the right error (-32600, -32602), but also logs it with
``logger.exception``: a full traceback on the server's stderr for every bad request a
client sends. This filter turns exactly those records into one warning line (the
reason, no traceback). Real failures inside the SDK still log as they did.
"""

from __future__ import annotations

import logging

DISPATCHER_LOGGER = "a2a.server.routes.jsonrpc_dispatcher"
CLIENT_FAULTS = frozenset({"Failed to validate base JSON-RPC request", "Failed to parse request params"})


class ClientFaultsAsWarnings(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if record.msg in CLIENT_FAULTS and record.exc_info:
            reason = record.exc_info[1]
            record.msg = f"{record.msg}: {type(reason).__name__}: {str(reason)[:200]}"
            record.args = None
            record.exc_info = None
            record.exc_text = None
            record.levelno, record.levelname = logging.WARNING, "WARNING"
        return True


def install() -> None:
    """Add the filter once (every door instance in the process shares the SDK's logger)."""
    logger = logging.getLogger(DISPATCHER_LOGGER)
    if not any(isinstance(f, ClientFaultsAsWarnings) for f in logger.filters):
        logger.addFilter(ClientFaultsAsWarnings())


__all__ = ["ClientFaultsAsWarnings", "install"]
