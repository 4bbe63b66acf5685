"""onedoor MCP door: the agent as an MCP tool ``ask`` (stdio, streamable HTTP, SLIM).

Light on import: the SDK loads only when the door serves.
"""

from .door import McpDoor, door
from .options import McpOptions

__all__ = ["McpDoor", "McpOptions", "door"]
