"""Structured logs: one JSON object a line on stderr (``ONEDOOR_LOG_FORMAT=json``).

Each record has ``time`` (UTC, ISO 8601), ``level``, ``logger``, ``message``, and when
known ``run_id``, ``thread_id`` and ``door`` (records logged in a run's backend, on its
worker thread or task, and the plugin's own about a run) and ``trace_id`` / ``span_id``
(whenever a span is current: inside a request, a run's backend), plus ``exception`` with
the traceback of a record that has one. The plugin logs one line per run at ``info``
(``run ended: end_turn``, or ``run failed: ...`` at ``warning``) with ``outcome``,
``duration_s``, ``backend`` and the run's ``input_tokens`` / ``output_tokens``. The handler goes on the root logger at
``ONEDOOR_LOG_LEVEL`` (``info`` unless set); uvicorn's own loggers are given the same
format when the HTTP server starts.
"""

from __future__ import annotations

import contextvars
import json
import logging
import sys
from datetime import UTC, datetime
from typing import Any

# (run_id, thread_id, door) of the run whose backend is running here
RUN: contextvars.ContextVar[tuple[str, str | None, str] | None] = contextvars.ContextVar("onedoor_otel_run", default=None)
_MARK = "_onedoor_json"
UVICORN_LOGGERS = ("uvicorn", "uvicorn.error", "uvicorn.access")


def _trace_ids() -> tuple[str, str] | None:
    trace = sys.modules.get("opentelemetry.trace")  # never imported for a log line
    if trace is None:
        return None
    context = trace.get_current_span().get_span_context()
    if not context.is_valid:
        return None
    return format(context.trace_id, "032x"), format(context.span_id, "016x")


class JsonFormatter(logging.Formatter):
    """A record as one line of JSON (see the module docstring)."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        run = getattr(record, "onedoor_run", None) or RUN.get()
        if run is not None:
            out["run_id"], thread_id, out["door"] = run
            if thread_id:
                out["thread_id"] = thread_id
        fields = getattr(record, "onedoor_fields", None)
        if isinstance(fields, dict):
            out.update(fields)
        ids = _trace_ids()
        if ids is not None:
            out["trace_id"], out["span_id"] = ids
        if record.exc_info:
            out["exception"] = self.formatException(record.exc_info)
        elif record.exc_text:
            out["exception"] = record.exc_text
        if record.stack_info:
            out["stack"] = self.formatStack(record.stack_info)
        return json.dumps(out, ensure_ascii=False, default=str)


def install(level: str) -> logging.Handler:
    """The JSON handler on the root logger (once; the root's level set to ``level``)."""
    root = logging.getLogger()
    for handler in root.handlers:
        if getattr(handler, _MARK, False):
            return handler
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    setattr(handler, _MARK, True)
    root.addHandler(handler)
    root.setLevel(level.upper())
    return handler


def reformat_uvicorn() -> None:
    """uvicorn configures its loggers' handlers when it starts: give them the JSON format."""
    formatter = JsonFormatter()
    for name in UVICORN_LOGGERS:
        for handler in logging.getLogger(name).handlers:
            handler.setFormatter(formatter)
