"""Answers that travel to another server: what it costs to answer a parked run through a
server that does not hold it, beside answering it where it is parked, in the same run.

Two kernels share one store (SQLite with ``shared_journal``, PostgreSQL); the scripted
backend asks a question (``/question``) and parks on kernel A. Each round answers one such
run on A itself (``kernel.answer`` is the local resume; the continuation read from A's
journal) and another through B (the answer checked against the journal in the store, left
there, taken by A, the continuation read back from the store), interleaved so that machine
noise hits both alike. The time is from the answer call to the continuation's ending at
the answering side's reader. Medians, p99 and the milliseconds the other server adds.
PostgreSQL is a throwaway server (tests/store_postgres/pg_server.py) with its durable
defaults; without it its figures are left out. Prints one JSON object on its last line.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "store_postgres"))


def _p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]


async def _parked(kernel: Any) -> tuple[Any, Any]:
    """A run parked on ``kernel`` with its suspension in the store, and its question."""
    from onedoor.events import QuestionAsked
    from onedoor.questions import SuspendAsker

    journal = kernel.journals.start(kernel.run("/question Name?", principal="bench", asker=SuspendAsker()))
    question = None
    async for _, event in journal.follow(0):
        if isinstance(event, QuestionAsked):
            question = event.question
    while journal.writer is None or journal.writer.written < journal.last_seq:
        await asyncio.sleep(0.001)
    await asyncio.sleep(0.01)  # its server is looking for answers by now
    return journal, question


async def answer_times(make_store: Any, rounds: int) -> dict[str, list[float]]:
    from onedoor import RemoteAnswer
    from onedoor.builtins.scripted import ScriptedOptions, scripted
    from onedoor.kernel import Backend, Kernel, Limits

    backend = Backend("scripted", lambda: scripted(ScriptedOptions(reasoning=False, mode="async")))
    a, b = (Kernel(backend, limits=Limits(), store=make_store()) for _ in range(2))
    times: dict[str, list[float]] = {"here": [], "other_server": []}
    try:
        for n in range(rounds):
            for where in (("here", "other_server") if n % 2 else ("other_server", "here")):
                journal, question = await _parked(a)
                answers = [{"question_id": question.id, "outcome": "accept", "value": {"answer": "Ada"}}]
                started = time.perf_counter()
                got = await (a if where == "here" else b).answer(answers, principal="bench", run_id=journal.run_id)
                if isinstance(got, RemoteAnswer):
                    reader, after = got.journal, got.after
                else:
                    after = journal.last_seq
                    reader = a.journals.start(got, on_disconnect="finish")
                async for _ in reader.follow(after):
                    pass
                if n:  # the first round warms both paths up
                    times[where].append(time.perf_counter() - started)
    finally:
        await a.store.close()
        await b.store.close()
    return times


def _postgres() -> tuple[Any, str]:
    try:
        import onedoor_store_postgres  # noqa: F401
    except ImportError:
        return None, "onedoor-store-postgres is not installed"
    from pg_server import LocalPostgres, missing_reason

    reason = missing_reason()
    return (None, reason) if reason else (LocalPostgres(durable=True).start(), "")


def report(figures: dict[str, dict[str, list[float]]], skipped: str) -> dict[str, Any]:
    metrics: dict[str, Any] = {}
    ratios: dict[str, Any] = {}
    for store, times in figures.items():
        for where, values in times.items():
            metrics[f"{store}_{where}_median_ms"] = round(statistics.median(values) * 1000, 3)
            metrics[f"{store}_{where}_p99_ms"] = round(_p99(values) * 1000, 3)
        added = statistics.median(times["other_server"]) - statistics.median(times["here"])
        metrics[f"{store}_other_server_added_median_ms"] = round(added * 1000, 3)
        ratios[f"{store}_other_server_vs_here"] = {
            "value": round(statistics.median(times["other_server"]) / statistics.median(times["here"]), 3), "target": ""}
        metrics["rounds"] = len(times["here"])
    if skipped:
        metrics["postgres_skipped"] = skipped
    return {"name": "answers", "metrics": metrics, "ratios": ratios}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    rounds = 21 if args.quick else 101
    pg, skipped = _postgres()
    figures: dict[str, dict[str, list[float]]] = {}
    try:
        with tempfile.TemporaryDirectory(prefix="onedoor-bench-answers-") as folder:
            from onedoor.threads.sqlite import SQLiteThreadStore

            path = Path(folder) / "shared.sqlite3"
            figures["sqlite"] = asyncio.run(answer_times(lambda: SQLiteThreadStore(path, shared_journal=True), rounds))
            if pg is not None:
                from onedoor_store_postgres import PostgresThreadStore

                figures["postgres"] = asyncio.run(answer_times(lambda: PostgresThreadStore(pg.dsn, pool_size=4), rounds))
    finally:
        if pg is not None:
            pg.__exit__(None, None, None)
    print(json.dumps(report(figures, skipped)))


if __name__ == "__main__":
    main()
