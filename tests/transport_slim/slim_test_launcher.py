"""Run the ``onedoor`` CLI with two test extras, for the SLIM transport's process tests.

- An ``echo`` channel door: answers each message with ``echo:<message>``, ``pid`` with
  the worker's process id, and a too-large message with ``too-large``.
- An observer hook appending one JSON line per finished run (stop reason or error, the
  ``meta`` the door passed: trace context) to the file named by ``ONEDOOR_TEST_OUTCOMES``,
  so a test can see that a backend stopped, and one per request a door served (door,
  transport, method, meta) to ``ONEDOOR_TEST_REQUESTS``.

Usage: python slim_test_launcher.py serve --door echo --transport slim -o …
"""

from __future__ import annotations

import json
import os
import sys

from onedoor import plugins
from onedoor.cli import main
from onedoor.composition import MessageTooLarge
from onedoor.hookspecs import hookimpl


class EchoDoor:
    name = "echo"
    shapes = frozenset({"channel"})
    framing = "ndjson"
    Options = None

    async def serve_channel(self, channel, ctx):
        while True:
            try:
                message = await channel.recv()
            except MessageTooLarge:
                await channel.send("too-large")
                continue
            if message is None:
                return
            await channel.send(str(os.getpid()) if message == "pid" else f"echo:{message}")


class Observer:
    @hookimpl
    def onedoor_run_finished(self, run, outcome):
        path = os.environ.get("ONEDOOR_TEST_OUTCOMES")
        if path:
            record = {
                "message": run.message,
                "outcome": type(outcome).__name__,
                "stop_reason": getattr(outcome, "stop_reason", None),
                "pid": os.getpid(),
                "meta": dict(getattr(run, "meta", None) or {}),
            }
            with open(path, "a", encoding="utf-8") as fh:
                fh.write(json.dumps(record) + "\n")

    @hookimpl
    def onedoor_request_finished(self, request, error):
        path = os.environ.get("ONEDOOR_TEST_REQUESTS")
        if path:
            record = {"door": request.door, "transport": request.transport, "method": request.method,
                      "meta": request.meta, "principal": request.principal, "error": error}
            with open(path, "a", encoding="utf-8") as fh:
                fh.write(json.dumps(record) + "\n")


plugins.add_in_process_plugin("door", "echo", EchoDoor())
plugins.add_in_process_plugin("hook", "test-observer", Observer())

if __name__ == "__main__":
    sys.argv[0] = "onedoor"
    main()
