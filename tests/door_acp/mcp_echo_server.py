"""A tiny stdio MCP server standing in for an editor-provided one (mcp 1.x or 2.x)."""

from __future__ import annotations

try:
    from mcp.server.mcpserver import MCPServer as Server
except ImportError:  # mcp 1.x
    from mcp.server.fastmcp import FastMCP as Server

server = Server("echo-tools")


@server.tool()
def shout(text: str) -> str:
    """Return the text in capitals."""
    return text.upper()


@server.tool()
def refuse(text: str) -> str:
    """Always fails."""
    raise ValueError("refused on purpose")


if __name__ == "__main__":
    server.run()
