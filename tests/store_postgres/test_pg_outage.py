"""#24 item 5: a short PostgreSQL outage in the middle of a shared run. Two `onedoor serve`
processes share one PostgreSQL; a run streams from server one while a reader follows it
through server two; PostgreSQL stops and starts again mid-run. Sharing resumes: both
readers get every event once, in order, ending `run_finished` (never a `run_failed`, nor
"the server running it stopped"); a cursor the first client really received reattaches
through the other server; a replay afterwards ends as the run did; no tracebacks."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import httpx
import pytest

pytest.importorskip("onedoor_door_rest", reason="this test drives the REST door (onedoor-door-rest)")
pytestmark = pytest.mark.timeout(180)


def _frames(text: str) -> list[tuple[str, str, dict]]:
    out = []
    for frame in text.split("\n\n"):
        fields = dict(line.split(": ", 1) for line in frame.split("\n") if ": " in line)
        if "event" in fields:
            out.append((fields.get("id", ""), fields["event"], json.loads(fields["data"])))
    return out


def test_a_short_postgresql_outage_mid_run_loses_no_sharing(own_postgres: Any) -> None:
    from onedoor_transport_http.testing import start_server

    common = ["--door", "rest", "--store", "postgres", "-o", f"postgres.dsn={own_postgres.dsn}",
              "-o", "postgres.timeout=3", "-o", "rest.on_disconnect=finish"]
    with start_server(common) as one, start_server(common) as two:
        thread_id = httpx.post(f"{one.base_url}/rest/threads", json={}, timeout=30).json()["id"]
        local: list[str] = []
        run_id: list[str] = []
        first_ids = threading.Event()

        def drive() -> None:
            with httpx.stream("POST", f"{one.base_url}/rest/threads/{thread_id}/chat/stream",
                              json={"message": "/slow /long 120 through the outage"}, timeout=120) as stream:
                for line in stream.iter_lines():
                    local.append(line)
                    if line.startswith("data: ") and not run_id:
                        run_id.append(json.loads(line[6:])["run_id"])
                    if sum(x.startswith("id: ") for x in local) >= 5:
                        first_ids.set()

        driver = threading.Thread(target=drive)
        driver.start()
        assert first_ids.wait(30), local
        remote: dict[str, str] = {}

        def follow() -> None:
            remote["text"] = httpx.get(f"{two.base_url}/rest/runs/{run_id[0]}/events", timeout=120).text

        follower = threading.Thread(target=follow)
        follower.start()
        time.sleep(0.5)  # the follower reads live events through the store
        own_postgres._pg_ctl("stop", "-m", "fast")
        time.sleep(2.0)  # the run goes on; the store is out
        own_postgres._pg_ctl("start")
        driver.join(120)
        follower.join(120)
        mine = _frames("\n".join(local) + "\n\n")
        theirs = _frames(remote["text"])
        assert mine[-1][1] == "run_finished" and mine[-1][2]["stop_reason"] == "end_turn", mine[-1]
        assert [f[1] for f in theirs].count("run_failed") == 0, theirs[-1]
        assert theirs[-1][1] == "run_finished", theirs[-1]
        assert [f[0] for f in theirs] == [f[0] for f in mine], "the remote reader got every event once, in order"
        # a cursor the first client received, through the other server: the rest, not 409
        middle = mine[len(mine) // 2][0]
        rest = httpx.get(f"{two.base_url}/rest/runs/{run_id[0]}/events", headers={"Last-Event-ID": middle}, timeout=60)
        assert rest.status_code == 200, rest.text
        assert [f[0] for f in _frames(rest.text)] == [f[0] for f in mine[len(mine) // 2 + 1:]]
        replay = _frames(httpx.get(f"{two.base_url}/rest/runs/{run_id[0]}/events", timeout=60).text)
        assert replay[-1][1] == "run_finished", replay[-1]
        for server in (one, two):
            server.stop()
            errors = server.proc.stderr.read()
            assert "Traceback" not in errors, errors[-3000:]
