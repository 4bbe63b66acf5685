"""What a request answers, in plain Python (:class:`Outcome`, :class:`ProtocolError`, dicts in
the MCP wire form), and as the SDK's objects.

The SDK's error is ``McpError(ErrorData)`` on 1.x and ``MCPError(code=, message=)`` on 2.x.
Results are built from their wire form (``model_validate`` of camelCase JSON), which both
SDKs read alike; 1.x silently ignores snake_case keywords such as ``is_error=``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import mcp.types as types

from ._version import MAJOR, SdkError, log


@dataclass
class Outcome:
    """What a tool call returns: the text for the client and whether it is an error;
    ``structured`` (the structured content, matching the tool's output schema),
    ``blocks`` (more content blocks after the text, in the MCP wire form: ``image``,
    ``audio``, ``resource``, ``resource_link``), ``notes`` (text blocks after those) and
    ``meta`` (the result's ``_meta``) when there are any."""

    text: str
    is_error: bool = False
    structured: dict[str, Any] | None = None
    notes: tuple[str, ...] = ()
    blocks: tuple[dict[str, Any], ...] = ()
    meta: dict[str, Any] | None = None


@dataclass
class InputRequired:
    """What a tool call returns when the run asks (MCP 2026-07-28, multi-round-trip): the
    questions as form-mode elicitations, ``requests`` (key -> ``(message, requestedSchema,
    _meta)``), and the ``state`` the client echoes with its answers (plaintext here: the
    server seals it on the way out and unseals it on the way back)."""

    requests: dict[str, tuple[str, dict[str, Any], dict[str, Any]]]
    state: str


class ProtocolError(Exception):
    """A JSON-RPC error answer (unknown tool and the like); ``data`` goes in the error's ``data``."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


def sdk_error(exc: ProtocolError) -> Exception:
    """``exc`` as the exception the SDK answers with a JSON-RPC error."""
    if MAJOR >= 2:
        return SdkError(code=exc.code, message=exc.message, data=exc.data)
    return SdkError(types.ErrorData(code=exc.code, message=exc.message, data=exc.data))


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


def call_result(outcome: Outcome | InputRequired) -> Any:
    """An :class:`Outcome` as the SDK's ``CallToolResult``: the text, the blocks, the notes
    (an :class:`InputRequired` as its ``InputRequiredResult``, 2.x).

    A block this SDK refuses (e.g. a URI it cannot parse) goes out as a text block that
    names it, so the rest of the result still reaches the client.
    """
    if isinstance(outcome, InputRequired):
        return input_required_result(outcome)
    wire: dict[str, Any] = {"content": [], "isError": outcome.is_error}
    if outcome.structured is not None:
        wire["structuredContent"] = outcome.structured
    if outcome.meta:
        wire["_meta"] = outcome.meta
    texts = [_text(outcome.text), *outcome.blocks, *(_text(note) for note in outcome.notes)]
    try:
        return types.CallToolResult.model_validate({**wire, "content": texts})
    except Exception:  # noqa: BLE001 - pydantic.ValidationError: find the blocks it refuses
        return types.CallToolResult.model_validate({**wire, "content": [_checked(block) for block in texts]})


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _checked(block: dict[str, Any]) -> dict[str, Any]:
    try:
        types.CallToolResult.model_validate({"content": [block]})
    except Exception as exc:  # noqa: BLE001 - pydantic.ValidationError
        kind = str(block.get("type", "?"))[:40]
        log.warning("mcp: a %s block of a result could not be sent: %.200s", kind, str(exc).splitlines()[0])
        return _text(f"[a {kind} part of the reply could not be sent over MCP]")
    return block


def input_required_result(asking: InputRequired) -> Any:
    """The SDK's ``InputRequiredResult`` (2.x): one ``elicitation/create`` (form mode) per request."""
    requests = {
        key: types.ElicitRequest(params=types.ElicitRequestFormParams(  # type: ignore[call-arg]
            message=message, requested_schema=schema, _meta=meta))
        for key, (message, schema, meta) in asking.requests.items()
    }
    return types.InputRequiredResult(input_requests=requests, request_state=asking.state)  # type: ignore[attr-defined]


def model(cls: Any, wire: dict[str, Any]) -> Any:
    """The SDK's ``cls`` from its wire form (camelCase keys, ``_meta``)."""
    return cls.model_validate(wire)


__all__ = ["InputRequired", "Outcome", "ProtocolError", "call_result", "model", "sdk_error", "tool_model"]
