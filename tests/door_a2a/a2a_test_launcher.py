"""Run the ``onedoor`` CLI with an observer hook, for subprocess tests of the A2A door.

The hook (``onedoor_run_finished``) appends one JSON line per finished run to the file
named by ``ONEDOOR_TEST_OUTCOMES``: the outcome, stop reason or error, and how many of
the kernel's run worker threads are still alive once they had 3 s to end. That is how a
test sees, from outside the server, that a cancelled backend really stopped.

Usage: python a2a_test_launcher.py serve --door a2a [...]
"""

from __future__ import annotations

import json
import os
import sys
import threading

from onedoor import plugins
from onedoor.cli import main
from onedoor.hookspecs import hookimpl


class Observer:
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
        }
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(record) + "\n")


plugins.add_in_process_plugin("hook", "a2a-test-observer", Observer())

if __name__ == "__main__":
    sys.argv[0] = "onedoor"
    main()
