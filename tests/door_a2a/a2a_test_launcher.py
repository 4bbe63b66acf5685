"""Run the ``onedoor`` CLI with an observer hook, for subprocess tests of the A2A door.

The hook (``onedoor_run_finished``) appends one JSON line per finished run to the file
named by ``ONEDOOR_TEST_OUTCOMES``: the outcome, stop reason or error, its usage (the
kernel's JSON) and the ``meta`` the door passed (W3C trace context), and how many of the
kernel's run worker threads are still alive once they had 3 s to end. That is how a test
sees, from outside the server, that a cancelled backend really stopped, and what the
kernel counted. The request hooks (``onedoor_request_started`` / ``_finished``) append one
line per request the door served to ``ONEDOOR_TEST_REQUESTS``, with the runs started
inside it (``onedoor_run_started`` while the request is current).

Usage: python a2a_test_launcher.py serve --door a2a [...]
"""

from __future__ import annotations

import contextvars
import json
import os
import sys
import threading

from onedoor import plugins
from onedoor.cli import main
from onedoor.hookspecs import hookimpl
from onedoor.usage import usage_to_json

CURRENT = contextvars.ContextVar("a2a_test_request", default=None)  # the request being served, if any


def _append(variable: str, record: dict) -> None:
    path = os.environ.get(variable)
    if path:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(record) + "\n")


class Observer:
    @hookimpl
    def onedoor_request_started(self, request):
        CURRENT.set(request)
        request.scratch["runs"] = []

    @hookimpl
    def onedoor_request_finished(self, request, error):
        _append("ONEDOOR_TEST_REQUESTS", {
            "door": request.door, "transport": request.transport, "method": request.method, "meta": request.meta,
            "principal": request.principal, "error": error, "runs": request.scratch.get("runs", []),
        })

    @hookimpl
    def onedoor_run_started(self, run):
        request = CURRENT.get()
        if request is not None:
            request.scratch.setdefault("runs", []).append(run.run_id)

    @hookimpl
    def onedoor_run_finished(self, run, outcome):
        path = os.environ.get("ONEDOOR_TEST_OUTCOMES")
        if not path:
            return
        workers = [t for t in threading.enumerate() if t.name.startswith("onedoor-run-")]
        for thread in workers:
            if thread is not threading.current_thread():
                thread.join(3.0)
        record = {
            "run_id": run.run_id,
            "door": run.door,
            "message": run.message,
            "outcome": type(outcome).__name__,
            "stop_reason": getattr(outcome, "stop_reason", None),
            "error": getattr(outcome, "error", None),
            "workers_alive": sum(1 for t in workers if t.is_alive() and t is not threading.current_thread()),
            "usage": usage_to_json(getattr(outcome, "usage", ()) or ()),
            "meta": dict(getattr(run, "meta", None) or {}),
        }
        _append("ONEDOOR_TEST_OUTCOMES", record)


plugins.add_in_process_plugin("hook", "a2a-test-observer", Observer())

if __name__ == "__main__":
    sys.argv[0] = "onedoor"
    main()
