"""Run the ``onedoor`` CLI with two test extras, for subprocess tests of the MCP door.

- An observer hook (``onedoor_run_finished``) appends one JSON line per finished run to
  the file named by ``ONEDOOR_TEST_OUTCOMES``: stop reason or error, usage, the run's
  ``meta`` (W3C trace context), principal and thread, and how many of the kernel's run
  worker threads are still alive once they had 3 s to end. ``onedoor_request_started``
  and ``onedoor_request_finished`` append one line per request the door serves to
  ``ONEDOOR_TEST_REQUESTS``.
- A ``noisy`` backend: the scripted backend that first prints to ``sys.stdout``, writes
  to file descriptor 1 and starts a child process that writes to its stdout, so a test
  can prove the stdio door's stdout carries only JSON-RPC.

Usage: python onedoor_test_launcher.py serve --door mcp --transport stdio [-b noisy]
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading

from onedoor import plugins
from onedoor.builtins.scripted import ScriptedOptions, scripted
from onedoor.cli import main
from onedoor.hookspecs import hookimpl
from onedoor.usage import usage_to_json


def _append(variable: str, record: dict) -> None:
    path = os.environ.get(variable)
    if path:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(record) + "\n")


class Observer:
    @hookimpl
    def onedoor_run_finished(self, run, outcome):
        path = os.environ.get("ONEDOOR_TEST_OUTCOMES")
        if not path:
            return
        workers = [t for t in threading.enumerate() if t.name.startswith("onedoor-run-")]
        for thread in workers:
            thread.join(3.0)
        record = {
            "run_id": run.run_id,
            "door": run.door,
            "message": run.message,
            "outcome": type(outcome).__name__,
            "stop_reason": getattr(outcome, "stop_reason", None),
            "error": getattr(outcome, "error", None),
            "workers_alive": sum(1 for t in workers if t.is_alive()),
            "usage": usage_to_json(getattr(outcome, "usage", ())),
            "meta": dict(run.meta),
            "principal": run.principal,
            "thread_id": run.thread_id,
        }
        _append("ONEDOOR_TEST_OUTCOMES", record)

    @hookimpl
    def onedoor_request_started(self, request):
        _append("ONEDOOR_TEST_REQUESTS", {"at": "started", "door": request.door, "transport": request.transport,
                                          "method": request.method, "meta": request.meta, "principal": request.principal})

    @hookimpl
    def onedoor_request_finished(self, request, error):
        _append("ONEDOOR_TEST_REQUESTS", {"at": "finished", "door": request.door, "transport": request.transport,
                                          "method": request.method, "meta": request.meta, "principal": request.principal,
                                          "error": error})


def noisy(options: ScriptedOptions | None = None):
    inner = scripted(options or ScriptedOptions())

    class Noisy:
        def run(self, message, *, history=None, context=None):
            print("noise from print()")
            sys.stdout.flush()
            os.write(1, b"noise written to fd 1\n")
            subprocess.run(["echo", "noise from a child process"], check=False)
            yield from inner.run(message, history=history, context=context)

        def cancel(self) -> None:
            inner.cancel()

    return Noisy()


noisy.Options = ScriptedOptions  # type: ignore[attr-defined]

plugins.add_in_process_plugin("backend", "noisy", noisy)
plugins.add_in_process_plugin("hook", "test-observer", Observer())

if __name__ == "__main__":
    sys.argv[0] = "onedoor"
    main()
