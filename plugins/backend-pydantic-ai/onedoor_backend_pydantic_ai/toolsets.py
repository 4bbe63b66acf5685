"""Door-offered tools as pydantic-ai toolsets for one run."""

from __future__ import annotations

from typing import Any, Sequence

from onedoor import ToolSpec


def build_toolsets(tools: Sequence[ToolSpec]) -> list[Any]:
    """Door-offered tools as pydantic-ai toolsets for one run."""
    if not tools:
        return []
    from pydantic_ai import ExternalToolset, FunctionToolset, Tool
    from pydantic_ai.tools import ToolDefinition

    server = [t for t in tools if not t.client and t.handler is not None]
    client = [t for t in tools if t.client]
    out: list[Any] = []
    if server:
        out.append(FunctionToolset([
            Tool.from_schema(_caller(t), name=t.name, description=t.description or None, json_schema=_schema(t))
            for t in server
        ]))
    if client:
        out.append(ExternalToolset([
            ToolDefinition(name=t.name, description=t.description or None, parameters_json_schema=_schema(t))
            for t in client
        ]))
    return out


def _schema(tool: ToolSpec) -> dict[str, Any]:
    schema = dict(tool.parameters or {})
    schema.setdefault("type", "object")
    schema.setdefault("properties", {})
    return schema


def _caller(tool: ToolSpec) -> Any:
    async def call(**arguments: Any) -> Any:
        return await tool.handler(arguments)

    call.__name__ = tool.name
    return call


__all__ = ["build_toolsets"]
