"""Run the ``onedoor`` CLI with a test backend that makes its own spans, as a library would.

Backend ``traced`` (``-o mode=sync`` on a worker thread, ``-o mode=async`` in a task):
opens span ``backend work`` with the global OpenTelemetry tracer, logs ``backend says
hello`` (a warning, logger ``test.backend``) inside it, replies ``traced: MESSAGE`` and
reports usage (model ``traced-model``: 7 in, 5 out).

Usage: python otel_launcher.py serve --door rest -b traced -o mode=sync …
"""

from __future__ import annotations

import logging
import sys
from dataclasses import dataclass, field
from typing import Literal

from onedoor import plugins
from onedoor.cli import main
from onedoor.events import RunFinished, RunStarted, TextDelta
from onedoor.usage import ModelUsage

USAGE = (ModelUsage("traced-model", "test-provider", 7, 5, requests=1),)
log = logging.getLogger("test.backend")


@dataclass
class TracedOptions:
    mode: Literal["sync", "async"] = field(default="sync", metadata={"help": "sync (worker thread) or async"})


def _tracer():
    from opentelemetry import trace

    return trace.get_tracer("test-backend")


class SyncTraced:
    def run(self, message, history=None, context=None):
        run_id = context.run_id if context else "traced"
        yield RunStarted(run_id)
        with _tracer().start_as_current_span("backend work"):
            log.warning("backend says hello")
            yield TextDelta(f"traced: {message}")
        yield RunFinished(run_id, f"traced: {message}", usage=USAGE)


class AsyncTraced:
    async def run(self, message, history=None, context=None):
        run_id = context.run_id if context else "traced"
        yield RunStarted(run_id)
        with _tracer().start_as_current_span("backend work"):
            log.warning("backend says hello")
            yield TextDelta(f"traced: {message}")
        yield RunFinished(run_id, f"traced: {message}", usage=USAGE)


def traced(options: TracedOptions | None = None):
    return AsyncTraced() if options is not None and options.mode == "async" else SyncTraced()


traced.Options = TracedOptions  # type: ignore[attr-defined]

plugins.add_in_process_plugin("backend", "traced", traced)

if __name__ == "__main__":
    sys.argv[0] = "onedoor"
    main()
