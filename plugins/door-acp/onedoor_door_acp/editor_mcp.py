"""The editor's MCP servers (``mcpServers`` of session/new and session/load).

For a backend that can use tools (capability ``tools``), the door connects to the
session's stdio MCP servers on the first prompt, offers their tools as server-side
:class:`~onedoor.port.ToolSpec` s, and closes the connections when the session closes
or the editor goes away. Needs the ``mcp`` package (``pip install
onedoor-door-acp[mcp]``). HTTP and SSE servers are not connected (the door advertises
``mcpCapabilities.http = false``); every server left out is named in a note to the user.

Each connection lives in its own task: the MCP client's context managers must be
entered and left in one task.
"""

from __future__ import annotations

import asyncio
import logging
import re
from typing import Any

log = logging.getLogger("onedoor.door.acp")


class ToolError(RuntimeError):
    """An MCP tool answered with isError."""


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "_", name)[:40] or "server"


class _Connection:
    def __init__(self, config: Any) -> None:
        self.config = config
        self.name = config.name
        self.session: Any = None
        self.tools: list[Any] = []
        self.ready = asyncio.Event()
        self.stop = asyncio.Event()
        self.error: str | None = None
        self.task = asyncio.ensure_future(self._run())

    async def _run(self) -> None:
        try:
            from mcp import ClientSession, StdioServerParameters
            from mcp.client.stdio import stdio_client

            env = {e.name: e.value for e in (self.config.env or [])}
            params = StdioServerParameters(command=self.config.command, args=list(self.config.args or []), env=env or None)
            async with stdio_client(params) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    listed = await session.list_tools()
                    self.session, self.tools = session, list(listed.tools)
                    self.ready.set()
                    await self.stop.wait()
        except Exception as exc:  # noqa: BLE001 - reported to the user, never fatal
            self.error = f"{type(exc).__name__}: {exc}"
            log.warning("editor MCP server %r failed: %s", self.name, self.error)
        finally:
            self.session = None
            self.ready.set()

    async def call(self, tool: str, arguments: Any) -> Any:
        if self.session is None:
            raise ToolError(f"MCP server {self.name!r} is not connected")
        result = await self.session.call_tool(tool, arguments or {})
        texts = [getattr(c, "text", None) for c in getattr(result, "content", None) or ()]
        structured = getattr(result, "structuredContent", None) or getattr(result, "structured_content", None)
        if isinstance(structured, dict) and list(structured) == ["result"]:
            structured = structured["result"]  # the SDKs wrap plain return values
        value: Any = structured if structured is not None else "\n".join(t for t in texts if t is not None)
        if getattr(result, "isError", False) or getattr(result, "is_error", False):
            raise ToolError(value if isinstance(value, str) else str(value))
        return value

    async def close(self) -> None:
        self.stop.set()
        try:
            await asyncio.wait_for(asyncio.shield(self.task), 5)
        except (TimeoutError, Exception):  # noqa: BLE001
            self.task.cancel()


class EditorMcp:
    """One session's editor MCP servers."""

    def __init__(self, servers: list[Any]) -> None:
        self.servers = list(servers or [])
        self.connections: list[_Connection] = []
        self.started = False
        self.notes: list[str] = []

    @property
    def names(self) -> list[str]:
        return [s.name for s in self.servers]

    def stdio_servers(self) -> list[Any]:
        return [s for s in self.servers if getattr(s, "command", None) is not None]

    def skipped(self) -> list[str]:
        return [s.name for s in self.servers if getattr(s, "command", None) is None]

    async def tools(self, timeout: float = 30.0) -> list[Any]:
        """Connect (once) and return the servers' tools as onedoor ToolSpecs."""
        from onedoor import ToolSpec

        if not self.started:
            self.started = True
            try:
                import mcp  # noqa: F401
            except ImportError:
                self.notes.append("the editor's MCP servers are not connected: install onedoor-door-acp[mcp]")
                return []
            if self.skipped():
                self.notes.append(
                    f"MCP servers {', '.join(self.skipped())} are not connected: this agent connects stdio MCP servers only"
                )
            self.connections = [_Connection(s) for s in self.stdio_servers()]
            if self.connections:
                await asyncio.wait([asyncio.ensure_future(c.ready.wait()) for c in self.connections], timeout=timeout)
            for c in self.connections:
                if c.error or c.session is None:
                    self.notes.append(f"MCP server {c.name!r} could not be connected ({c.error or 'timed out'})")
        specs = []
        for conn in self.connections:
            if conn.session is None:
                continue
            for tool in conn.tools:
                specs.append(ToolSpec(
                    name=f"{_safe(conn.name)}__{_safe(tool.name)}",
                    description=tool.description or "",
                    parameters=getattr(tool, "inputSchema", None) or getattr(tool, "input_schema", None) or {"type": "object"},
                    client=False,
                    handler=_handler(conn, tool.name),
                ))
        return specs

    def take_notes(self) -> list[str]:
        notes, self.notes = self.notes, []
        return notes

    async def aclose(self) -> None:
        connections, self.connections = self.connections, []
        for conn in connections:
            await conn.close()


def _handler(conn: _Connection, tool: str) -> Any:
    async def call(arguments: Any) -> Any:
        return await conn.call(tool, arguments)

    return call
