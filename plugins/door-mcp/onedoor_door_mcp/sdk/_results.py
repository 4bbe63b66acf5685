"""What a tool call answers, in plain Python (:class:`Outcome`, :class:`ProtocolError`), and as the SDK's objects.

The SDK's error is ``McpError(ErrorData)`` on 1.x and ``MCPError(code=, message=)`` on 2.x.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import mcp.types as types

from ._version import MAJOR, SdkError


@dataclass
class Outcome:
    """What a tool call returns: the text for the client and whether it is an error;
    ``structured`` (the structured content, matching the tool's output schema) and
    ``notes`` (more text blocks after the text) when there are any."""

    text: str
    is_error: bool = False
    structured: dict[str, Any] | None = None
    notes: tuple[str, ...] = ()


class ProtocolError(Exception):
    """A JSON-RPC error answer (unknown tool and the like)."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def sdk_error(exc: ProtocolError) -> Exception:
    """``exc`` as the exception the SDK answers with a JSON-RPC error."""
    if MAJOR >= 2:
        return SdkError(code=exc.code, message=exc.message)
    return SdkError(types.ErrorData(code=exc.code, message=exc.message))


def tool_model(spec: dict[str, Any]) -> Any:
    """A tool definition (a dict in the MCP wire form) as the SDK's ``Tool``."""
    return types.Tool(
        name=spec["name"],
        title=spec.get("title"),
        description=spec.get("description"),
        inputSchema=spec["inputSchema"],
        outputSchema=spec.get("outputSchema"),
        annotations=types.ToolAnnotations(**spec["annotations"]) if spec.get("annotations") else None,
    )


def call_result(outcome: Outcome) -> Any:
    """An :class:`Outcome` as the SDK's ``CallToolResult`` (the text, then the notes, as text blocks)."""
    blocks = [types.TextContent(type="text", text=text) for text in (outcome.text, *outcome.notes)]
    return types.CallToolResult(
        content=blocks, structuredContent=outcome.structured, isError=outcome.is_error  # type: ignore[arg-type]
    )


__all__ = ["Outcome", "ProtocolError", "call_result", "sdk_error", "tool_model"]
