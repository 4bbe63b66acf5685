"""Many servers, one service (#28): REST streams through nginx in front of three servers,
against one of those servers directly, in the same run.

One PostgreSQL (started here, as the tests start it), three ``onedoor serve --door rest``
processes on it, and nginx rendered from ``docs/deploy/nginx.conf`` (the configuration
docs/deploy.md gives users), exactly as tests/deploy does. For each round, interleaved:

``direct``     ``POST /rest/chat/stream`` to server 0's own port
``balancer``   the same request to nginx, which sends it to whichever server is next

Measured per path: time to the first event (median over short runs) and events/s of a long
streamed reply (median over runs), read by httpx in this process. Ratios: balancer / direct
(events/s, target >= 0.8; time to first event, informational target <= 2). The last stdout
line is one JSON object for bench/run.py; skipped (saying why) where PostgreSQL or nginx
is missing.

    python bench/bench_balancer.py            # ~40 s
    python bench/bench_balancer.py --quick    # ~20 s
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "deploy"), str(ROOT / "tests" / "store_postgres")]

LONG = 5_000  # deltas of a long reply


def missing() -> str | None:
    try:
        from deploy_harness import balancer_missing
        from pg_server import missing_reason
    except ImportError as exc:  # the HTTP transport or the test helpers are not installed
        return f"needs the HTTP transport and the REST door ({exc})"
    return missing_reason() or balancer_missing("nginx")


def stream(client, url: str, message: str) -> tuple[float, float, int]:
    """(seconds to the first event, seconds to the last, events) of one streamed chat."""
    started = time.perf_counter()
    first = 0.0
    events = 0
    with client.stream("POST", url + "/rest/chat/stream", json={"message": message}) as reply:
        if reply.status_code != 200:
            raise RuntimeError(f"{url}: HTTP {reply.status_code}: {reply.read()[:300]!r}")
        for chunk in reply.iter_raw():
            count = chunk.count(b"\n\n")
            if count and not first:
                first = time.perf_counter() - started
            events += count
    return first, time.perf_counter() - started, events


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    reason = missing()
    if reason:
        print(json.dumps({"name": "balancer", "skipped": reason}))
        return 0
    import httpx
    from deploy_harness import AUTH, Cluster
    from pg_server import LocalPostgres

    rounds, shorts = (3, 10) if args.quick else (7, 30)
    firsts: dict[str, list[float]] = {"direct": [], "balancer": []}
    rates: dict[str, list[float]] = {"direct": [], "balancer": []}
    with tempfile.TemporaryDirectory(prefix="onedoor-bench-balancer-") as tmp, \
            LocalPostgres(max_connections=200) as pg, Cluster(Path(tmp), pg.dsn, servers=3) as cluster:
        urls = {"direct": f"http://127.0.0.1:{cluster.ports[0]}", "balancer": cluster.url}
        with httpx.Client(headers=AUTH, timeout=120) as client:
            for url in urls.values():  # warm each server and the balancer's connections
                for _ in range(3):
                    stream(client, url, "warm up")
            for _ in range(rounds):
                for path, url in urls.items():
                    for _ in range(shorts):
                        firsts[path].append(stream(client, url, "hello")[0])
                    _, took, events = stream(client, url, f"/long {LONG} benchmark")
                    if events < LONG:
                        raise RuntimeError(f"{path}: {events} events for a reply of {LONG} deltas")
                    rates[path].append(events / took)
    first_ms = {path: statistics.median(values) * 1000 for path, values in firsts.items()}
    per_s = {path: statistics.median(values) for path, values in rates.items()}
    for path in urls:
        print(f"{path:9} first event {first_ms[path]:6.2f} ms   {per_s[path]:9,.0f} events/s")
    metrics = {f"{path}_first_event_ms": round(first_ms[path], 2) for path in urls}
    metrics |= {f"{path}_events_per_s": round(per_s[path]) for path in urls}
    metrics |= {"servers": 3, "rounds": rounds}
    ratios = {
        "balancer_vs_direct_events_per_s": {"value": round(per_s["balancer"] / per_s["direct"], 2), "target": ">= 0.8"},
        "balancer_vs_direct_first_event": {"value": round(first_ms["balancer"] / first_ms["direct"], 2), "target": "<= 2"},
    }
    print(json.dumps({"name": "balancer", "metrics": metrics, "ratios": ratios}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
