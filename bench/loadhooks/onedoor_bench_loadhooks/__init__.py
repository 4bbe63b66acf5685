"""Record each run's outcome as one JSON line in $ONEDOOR_BENCH_RUN_LOG (if set).

Used by bench/load.py to count cancelled, failed and finished runs on the server side.
It is an ordinary onedoor.hooks plugin: the kernel calls it for every run of every door.
"""

from __future__ import annotations

import json
import os
import threading

from onedoor.hookspecs import hookimpl

_lock = threading.Lock()


@hookimpl
def onedoor_run_finished(run, outcome):
    path = os.environ.get("ONEDOOR_BENCH_RUN_LOG")
    if not path:
        return
    record = {
        "run_id": run.run_id if run is not None else None,
        "door": run.door if run is not None else None,
        "outcome": type(outcome).__name__,
        "stop_reason": getattr(outcome, "stop_reason", None),
    }
    with _lock, open(path, "a") as fh:
        fh.write(json.dumps(record) + "\n")
