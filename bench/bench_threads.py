"""Threads benchmark: what a stored thread costs, side by side in one run.

1. Turn latency through ``kernel.run`` (the scripted backend, one tool call): a stateless
   turn that is sent its history (today's REST/AG-UI callers), against the same turn on a
   thread of the same history in the SQLite store and in the PostgreSQL store (the door's
   ``store.get`` plus the run, which keeps the user's message as it starts and the reply
   as it ends). The three kinds are interleaved turn by turn, so machine noise hits all
   alike; medians and p99, their ratios to the stateless turn, and the milliseconds a
   thread adds (what matters against a model's turn of hundreds of milliseconds).
2. Listing and loading in a store of 10,000 threads (one owner): the first page of 50,
   a page deep in the list (``before``), and loading one thread, SQLite and PostgreSQL.
3. Following a run another server drives (journals shared through the store: SQLite with
   ``shared_journal``, PostgreSQL): two kernels on one store; a backend on kernel A stamps
   each text delta with the time it was made, one every 20 ms; a reader on kernel B
   (``kernel.journals.find``) notes when each arrives. Medians and p99 of that lag (the
   store write before delivery, then PostgreSQL's notification or SQLite's polling), beside
   the same lag for a reader on A, over the deltas made once both readers were there.

PostgreSQL is a throwaway server (tests/store_postgres/pg_server.py: initdb + pg_ctl, unix
socket) with its durable defaults (fsync on, synchronous_commit on); SQLite is a file in
WAL mode with synchronous=NORMAL, as the store opens it. Without PostgreSQL installed, its
figures are left out (``postgres_skipped`` says why). Prints one JSON object on its last line.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "store_postgres"))

HISTORY_TURNS = 10  # each measured turn continues a conversation of this many turns
BIG_STORE = 10_000
SEED_BATCH = 100  # threads made at once while filling the big store


def _p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]


def _history() -> list[Any]:
    from onedoor.messages import Message, ToolCall

    out: list[Any] = []
    for n in range(HISTORY_TURNS):
        out += [
            Message("user", f"question number {n} about the plan"),
            Message("assistant", "", (ToolCall(f"c{n}", "word_count", {"text": "the plan"}),)),
            Message("tool", '{"words": 2}', tool_call_id=f"c{n}"),
            Message("assistant", f"answer number {n}: the plan has two words"),
        ]
    return out


async def _seed_thread(store: Any, owner: str, messages: list[Any]) -> str:
    thread = await store.create(owner)
    await store.append(owner, thread.id, messages, expected_version=0)
    return str(thread.id)


async def turn_latency(stores: dict[str, Any], turns: int) -> dict[str, list[float]]:
    """Seconds per turn for each kind: "stateless" plus one per store, interleaved."""
    from onedoor.builtins.scripted import ScriptedOptions, scripted
    from onedoor.kernel import Backend, Kernel, Limits

    backend = Backend("scripted", lambda: scripted(ScriptedOptions(reasoning=False)))
    limits = Limits(max_concurrent_runs=4)
    history = _history()
    kernels = {"stateless": Kernel(backend, limits=limits)}
    kernels.update({name: Kernel(backend, limits=limits, store=store) for name, store in stores.items()})
    threads = {name: [await _seed_thread(store, "bench", history) for _ in range(turns)] for name, store in stores.items()}

    async def one(name: str, n: int) -> float:
        kernel = kernels[name]
        start = time.perf_counter()
        if name == "stateless":
            run = kernel.run(f"turn {n}", history=history)
        else:
            thread = await stores[name].get("bench", threads[name][n])
            run = kernel.run(f"turn {n}", thread=thread, principal="bench")
        async with run:
            async for _ in run:
                pass
        return time.perf_counter() - start

    names = list(kernels)
    for name in names:  # warm up each path once (imports, first connections)
        await one(name, 0)
    seconds: dict[str, list[float]] = {name: [] for name in names}
    for n in range(1, turns):
        order = names[n % len(names):] + names[: n % len(names)]  # rotate who goes first
        for name in order:
            seconds[name].append(await one(name, n))
    return seconds


async def big_store(store: Any, reps: int, analyze: str = "") -> dict[str, float]:
    """Fill ``store`` with 10,000 threads of one owner (one turn each), then time listing and
    loading. ``analyze``: a PostgreSQL DSN to refresh the planner's statistics after the fill,
    as autovacuum does within a minute of it (before that, the planner still thinks the table
    is small and sorts instead of walking the index)."""
    turn = _history()[:4]
    ids: list[str] = []
    for _ in range(BIG_STORE // SEED_BATCH):
        ids += await asyncio.gather(*(_seed_thread(store, "big", turn) for _ in range(SEED_BATCH)))
    if analyze:
        import psycopg

        async with await psycopg.AsyncConnection.connect(analyze, autocommit=True) as conn:
            await conn.execute("ANALYZE onedoor_threads, onedoor_messages")
    pick = random.Random(7)
    first, deep, load = [], [], []
    for _ in range(reps):
        start = time.perf_counter()
        page = await store.list("big", limit=50)
        first.append(time.perf_counter() - start)
        assert len(page) == 50
        mark = ids[pick.randrange(100, BIG_STORE - 100)]
        start = time.perf_counter()
        page = await store.list("big", limit=50, before=mark)
        deep.append(time.perf_counter() - start)
        assert len(page) == 50
        start = time.perf_counter()
        thread = await store.get("big", ids[pick.randrange(BIG_STORE)])
        load.append(time.perf_counter() - start)
        assert thread is not None and len(thread.messages) == 4
    return {
        "list_first_page_ms": statistics.median(first) * 1000,
        "list_deep_page_ms": statistics.median(deep) * 1000,
        "load_thread_ms": statistics.median(load) * 1000,
    }


def _postgres() -> tuple[Any, str]:
    """A started throwaway PostgreSQL, or (None, why not)."""
    try:
        import onedoor_store_postgres  # noqa: F401
    except ImportError:
        return None, "onedoor-store-postgres is not installed"
    from pg_server import LocalPostgres, missing_reason

    reason = missing_reason()
    if reason:
        return None, reason
    return LocalPostgres(durable=True).start(), ""


class StampingAgent:
    """Text deltas that carry the time they were made, one every 20 ms."""

    def __init__(self, count: int) -> None:
        self.count = count

    async def run(self, message: str, *, history: Any = None, context: Any = None) -> Any:
        from onedoor.events import RunFinished, RunStarted, TextDelta

        yield RunStarted(context.run_id)
        text = ""
        for _ in range(self.count):
            await asyncio.sleep(0.02)
            stamp = f"{time.time():.6f};"
            text += stamp
            yield TextDelta(stamp)
        yield RunFinished(context.run_id, text)


async def follow_lag(make_store: Any, count: int) -> dict[str, list[float]]:
    """Seconds from a delta's making to its arrival, at a reader on A and one on B."""
    from onedoor.events import TextDelta
    from onedoor.testing import kernel_for_agent

    a_store, b_store = make_store(), make_store()
    a = kernel_for_agent(lambda: StampingAgent(count), "stamping")
    a.store = a_store
    b = kernel_for_agent(lambda: StampingAgent(count), "stamping")
    b.store = b_store
    lags: dict[str, list[float]] = {"same_server": [], "other_server": []}

    both_there = [float("inf")]  # deltas made before the second reader came are not counted

    async def reader(journal: Any, into: list[float]) -> None:
        async for _, event in journal.follow(0):
            if isinstance(event, TextDelta) and (made := float(event.text.rstrip(";"))) > both_there[0]:
                into.append(time.time() - made)

    try:
        journal = a.journals.start(a.run("go", principal="bench"), on_disconnect="finish")
        local = asyncio.ensure_future(reader(journal, lags["same_server"]))
        await asyncio.sleep(0.05)
        remote = await b.journals.find(journal.run_id, "bench")
        assert remote is not None, "the other server finds the run through the store"
        following = asyncio.ensure_future(reader(remote, lags["other_server"]))
        await asyncio.sleep(0.05)  # the second reader has caught up by now
        both_there[0] = time.time()
        await asyncio.gather(local, following)
    finally:
        await a_store.close()
        await b_store.close()
    return lags


async def measure(folder: Path, pg: Any, turns: int, reps: int) -> dict[str, Any]:
    from onedoor.threads.sqlite import SQLiteThreadStore

    stores: dict[str, Any] = {"sqlite": SQLiteThreadStore(folder / "turns.sqlite3")}
    big: dict[str, Any] = {"sqlite": SQLiteThreadStore(folder / "big.sqlite3")}
    if pg is not None:
        from onedoor_store_postgres import PostgresThreadStore

        stores["postgres"] = PostgresThreadStore(pg.dsn, pool_size=4)
        big["postgres"] = PostgresThreadStore(pg.dsn, pool_size=10)
    try:
        seconds = await turn_latency(stores, turns)
        listing = {name: await big_store(store, reps, pg.dsn if name == "postgres" else "") for name, store in big.items()}
    finally:
        for store in [*stores.values(), *big.values()]:
            await store.close()
    count = max(100, turns // 3)  # deltas followed (20 ms apart)
    shared = {"sqlite": lambda: SQLiteThreadStore(folder / "shared.sqlite3", shared_journal=True)}
    if pg is not None:
        shared["postgres"] = lambda: PostgresThreadStore(pg.dsn, pool_size=4)
    lags = {name: await follow_lag(make, count) for name, make in shared.items()}
    return {"turns": seconds, "listing": listing, "lags": lags}


def report(figures: dict[str, Any], turns: int, skipped: str) -> dict[str, Any]:
    seconds, listing = figures["turns"], figures["listing"]
    base_median, base_p99 = statistics.median(seconds["stateless"]), _p99(seconds["stateless"])
    metrics: dict[str, Any] = {"turns_each": turns - 1, "history_turns": HISTORY_TURNS, "big_store_threads": BIG_STORE}
    ratios: dict[str, Any] = {}
    for name, values in seconds.items():
        metrics[f"{name}_turn_median_ms"] = round(statistics.median(values) * 1000, 3)
        metrics[f"{name}_turn_p99_ms"] = round(_p99(values) * 1000, 3)
        if name != "stateless":  # no target: the scripted turn costs next to nothing, a model's turn far more
            metrics[f"{name}_turn_added_median_ms"] = round((statistics.median(values) - base_median) * 1000, 3)
            median_ratio = statistics.median(values) / base_median
            ratios[f"{name}_turn_median_vs_stateless"] = {"value": round(median_ratio, 3), "target": ""}
            ratios[f"{name}_turn_p99_vs_stateless"] = {"value": round(_p99(values) / base_p99, 3), "target": ""}
    for name, found in listing.items():
        metrics.update({f"{name}_{key}": round(value, 3) for key, value in found.items()})
    if "postgres" in listing:
        for key in ("list_first_page_ms", "load_thread_ms"):
            value = listing["postgres"][key] / listing["sqlite"][key]
            ratios[f"postgres_{key.removesuffix('_ms')}_vs_sqlite"] = {"value": round(value, 3), "target": ""}
    for name, target in (("sqlite", "<= 0.5"), ("postgres", "<= 1.5")):  # the targets (#29)
        if f"{name}_turn_added_median_ms" in metrics:
            ratios[f"{name}_turn_added_ms"] = {"value": metrics[f"{name}_turn_added_median_ms"], "target": target}
    for name, lags in figures.get("lags", {}).items():
        for where, values in lags.items():
            metrics[f"{name}_follow_{where}_lag_median_ms"] = round(statistics.median(values) * 1000, 3)
            metrics[f"{name}_follow_{where}_lag_p99_ms"] = round(_p99(values) * 1000, 3)
            metrics[f"{name}_follow_{where}_deltas"] = len(values)
    if "postgres" in figures.get("lags", {}):
        for stat, target in (("median", "<= 2"), ("p99", "<= 10")):
            key = f"postgres_follow_other_server_lag_{stat}_ms"
            ratios[key] = {"value": metrics[key], "target": target}
    if skipped:
        metrics["postgres_skipped"] = skipped
    return {"name": "threads", "metrics": metrics, "ratios": ratios}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    turns, reps = (151, 30) if args.quick else (1001, 200)
    pg, skipped = _postgres()
    try:
        with tempfile.TemporaryDirectory(prefix="onedoor-bench-threads-") as folder:
            figures = asyncio.run(measure(Path(folder), pg, turns, reps))
    finally:
        if pg is not None:
            pg.__exit__(None, None, None)
    print(json.dumps(report(figures, turns, skipped)))


if __name__ == "__main__":
    main()
