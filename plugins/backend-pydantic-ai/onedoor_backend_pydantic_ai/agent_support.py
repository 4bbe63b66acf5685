"""Small helpers of the pydantic-ai backend: tool-call arguments, JSON values, error messages."""

from __future__ import annotations

import json
from typing import Any


def args_of(call: Any) -> Any:
    try:
        return call.args_as_dict()
    except Exception:  # noqa: BLE001 - malformed JSON from the model: pass it on as text
        return call.args


def jsonable(value: Any) -> Any:
    try:
        json.dumps(value)
        return value
    except (TypeError, ValueError):
        pass
    try:
        from pydantic_core import to_jsonable_python

        return to_jsonable_python(value)
    except Exception:  # noqa: BLE001
        return str(value)


def env_key() -> str:
    import os

    return os.environ.get("OPENAI_API_KEY", "")


def describe_error(exc: BaseException) -> str:
    """A one-line, useful message for a failed run (never the API key)."""
    from pydantic_ai import ModelAPIError, ModelHTTPError

    if isinstance(exc, ModelHTTPError):
        detail = _body_message(exc.body) or str(exc)
        return f"the model provider answered HTTP {exc.status_code} ({exc.model_name}): {detail}"
    if isinstance(exc, ModelAPIError):
        return f"the model provider failed ({exc.model_name}): {exc.message}"
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _body_message(body: Any) -> str:
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return error["message"]
        if isinstance(body.get("message"), str):
            return body["message"]
    if isinstance(body, str):
        return body
    return ""


__all__ = ["args_of", "describe_error", "env_key", "jsonable"]
