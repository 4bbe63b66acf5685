"""Which MCP SDK is installed (``MAJOR``: 1 or 2), the SDK's error class, and the door's logger."""

from __future__ import annotations

import logging
from importlib.metadata import version as _dist_version

SDK_VERSION = _dist_version("mcp")
MAJOR = int(SDK_VERSION.split(".")[0])
LOGGER = "onedoor.door.mcp"  # the door's logger
log = logging.getLogger(LOGGER)

if MAJOR >= 2:
    from mcp.shared.exceptions import MCPError as SdkError  # type: ignore[attr-defined]
else:
    from mcp.shared.exceptions import McpError as SdkError

__all__ = ["LOGGER", "MAJOR", "SDK_VERSION", "SdkError", "log"]
