"""Many turns on one thread at once (#24 item 1), through each web door, SQLite and PostgreSQL.

For each store (SQLite, PostgreSQL) one real `onedoor serve` with the REST, AG-UI, MCP and
A2A doors (scripted backend, `limits.max_concurrent_runs=128`, so the run limit is not what
is measured). For each door, side by side in the same server: N turns sent at once on ONE
thread, against N turns at once on N threads. Reported per door and store: turns kept in
the thread(s), turns refused (by status), median and p99 seconds per turn, and the p99
ratio one thread / N threads (what writers queueing on one thread cost).

MCP goes through the official Python SDK client (streamable HTTP, 10 sessions); REST,
AG-UI and A2A (JSON-RPC `message/send`) through httpx. Prints one JSON object last.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any, Awaitable, Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "store_postgres"))

TOKEN = "contention-bench-token-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def _p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))] if ordered else 0.0


class Doors:
    """One turn through each door, and how many user turns a thread holds (REST reads it)."""

    def __init__(self, base: str, http: Any) -> None:
        self.base = base
        self.http = http

    async def new_thread(self) -> str:
        reply = await self.http.post(self.base + "/rest/threads", json={})
        reply.raise_for_status()
        return str(reply.json()["id"])

    async def user_turns(self, thread_id: str) -> int:
        reply = await self.http.get(f"{self.base}/rest/threads/{thread_id}")
        return sum(1 for m in reply.json().get("messages", []) if m["role"] == "user") if reply.status_code == 200 else 0

    async def rest(self, thread_id: str, text: str) -> str:
        reply = await self.http.post(f"{self.base}/rest/threads/{thread_id}/chat", json={"message": text})
        return "ok" if reply.status_code == 200 else str(reply.status_code)

    async def agui(self, thread_id: str, text: str) -> str:
        body = {"threadId": thread_id, "runId": uuid.uuid4().hex, "tools": [], "context": [], "forwardedProps": {},
                "messages": [{"id": uuid.uuid4().hex, "role": "user", "content": text}]}
        reply = await self.http.post(self.base + "/agui/", json=body, headers={"accept": "text/event-stream"})
        if reply.status_code != 200:
            return str(reply.status_code)
        return "ok" if '"RUN_FINISHED"' in reply.text else "RUN_ERROR"

    async def a2a(self, thread_id: str, text: str) -> str:
        body = {"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {"message": {
            "kind": "message", "role": "user", "messageId": uuid.uuid4().hex, "contextId": thread_id,
            "parts": [{"kind": "text", "text": text}]}}}
        reply = await self.http.post(self.base + "/a2a/", json=body)
        if reply.status_code != 200:
            return str(reply.status_code)
        answer = reply.json()
        if "error" in answer:
            return f"error {answer['error'].get('code')}"
        state = answer.get("result", {}).get("status", {}).get("state")
        return "ok" if state in ("completed", "TASK_STATE_COMPLETED") else str(state)


async def mcp_turns(base: str, jobs: list[tuple[str, str]], sessions: int = 10) -> list[tuple[str, float]]:
    """Each (thread, text) as an MCP `ask` call, spread over ``sessions`` client sessions."""
    import httpx
    from mcp import ClientSession

    try:
        from mcp.client.streamable_http import streamable_http_client as connect

        def open_stream(client: Any) -> Any:
            return connect(base + "/mcp/", http_client=client)
    except ImportError:  # mcp 1.x
        from mcp.client.streamable_http import streamablehttp_client as connect  # type: ignore[no-redef]

        def open_stream(client: Any) -> Any:
            return connect(base + "/mcp/", headers=AUTH, timeout=120)

    results: list[tuple[str, float]] = []

    async def one_session(share: list[tuple[str, str]]) -> None:
        async with httpx.AsyncClient(headers=AUTH, timeout=120) as client:
            async with open_stream(client) as streams, ClientSession(streams[0], streams[1]) as session:
                await session.initialize()

                async def call(thread_id: str, text: str) -> None:
                    started = time.perf_counter()
                    try:
                        result = await session.call_tool("ask", {"message": text, "thread": thread_id})
                        outcome = "error" if getattr(result, "is_error", getattr(result, "isError", False)) else "ok"
                    except Exception as exc:  # noqa: BLE001 - counted, with its kind
                        outcome = type(exc).__name__
                    results.append((outcome, time.perf_counter() - started))

                await asyncio.gather(*(call(t, m) for t, m in share))

    await asyncio.gather(*(one_session(jobs[i::sessions]) for i in range(sessions)))
    return results


async def timed(turn: Callable[[str, str], Awaitable[str]], thread_id: str, text: str) -> tuple[str, float]:
    started = time.perf_counter()
    try:
        outcome = await turn(thread_id, text)
    except Exception as exc:  # noqa: BLE001 - counted, with its kind
        outcome = type(exc).__name__
    return outcome, time.perf_counter() - started


async def measure(base: str, turns: int) -> dict[str, Any]:
    import httpx

    out: dict[str, Any] = {}
    limits = httpx.Limits(max_connections=turns + 10, max_keepalive_connections=turns + 10)
    async with httpx.AsyncClient(headers=AUTH, timeout=180, limits=limits) as http:
        doors = Doors(base, http)
        for door in ("rest", "agui", "mcp", "a2a"):
            for layout in ("one_thread", "many_threads"):
                if door == "a2a" or door == "agui":  # these doors open a thread by the id the client names
                    ids = [f"{door}-{layout}-{uuid.uuid4().hex[:8]}"]
                    ids = ids * turns if layout == "one_thread" else [f"{ids[0]}-{n}" for n in range(turns)]
                else:
                    first = await doors.new_thread()
                    ids = [first] * turns if layout == "one_thread" else [first] + [await doors.new_thread()
                                                                                  for _ in range(turns - 1)]
                jobs = [(thread_id, f"turn {n} on {door}") for n, thread_id in enumerate(ids)]
                if door == "mcp":
                    results = await mcp_turns(base, jobs)
                else:
                    turn = getattr(doors, door)
                    results = await asyncio.gather(*(timed(turn, t, m) for t, m in jobs))
                kept = 0
                for thread_id in sorted(set(ids)):
                    kept += await doors.user_turns(thread_id)
                seconds = [s for outcome, s in results if outcome == "ok"]
                out[f"{door}_{layout}"] = {
                    "turns": turns, "kept": kept,
                    "refused": dict(Counter(outcome for outcome, _ in results if outcome != "ok")),
                    "median_s": round(statistics.median(seconds), 4) if seconds else None,
                    "p99_s": round(_p99(seconds), 4) if seconds else None,
                }
    return out


def serve(store_args: list[str]) -> Any:
    from onedoor_transport_http.testing import start_server

    args = ["--door", "rest", "--door", "agui", "--door", "mcp", "--door", "a2a", "--token", TOKEN,
            "-o", "limits.max_concurrent_runs=128", "-o", "scripted.reasoning=false", *store_args]
    return start_server(args, timeout=60)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--turns", type=int, default=0)
    options = parser.parse_args()
    turns = options.turns or (30 if options.quick else 100)
    metrics: dict[str, Any] = {"turns": turns}
    ratios: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as scratch:
        stores: list[tuple[str, list[str], Any]] = [("sqlite", ["--store", "sqlite", "-o", f"sqlite.path={scratch}/t.db"],
                                                     None)]
        from pg_server import LocalPostgres, missing_reason

        reason = missing_reason()
        if reason is None:
            stores.append(("postgres", [], LocalPostgres(max_connections=300)))
        else:
            metrics["postgres_skipped"] = reason
        for name, args, pg in stores:
            if pg is not None:
                pg.start()
                args = ["--store", "postgres", "-o", f"postgres.dsn={pg.dsn}", "-o", "postgres.pool_size=40"]
            try:
                with serve(args) as server:
                    found = asyncio.run(measure(server.base_url, turns))
            finally:
                if pg is not None:
                    pg.__exit__(None, None, None)
            metrics[name] = found
            for door in ("rest", "agui", "mcp", "a2a"):
                one, many = found[f"{door}_one_thread"], found[f"{door}_many_threads"]
                if one["p99_s"] and many["p99_s"]:
                    ratios[f"{name}_{door}_p99_one_vs_many"] = {"value": round(one["p99_s"] / many["p99_s"], 2),
                                                                "target": ""}
                ratios[f"{name}_{door}_kept_of_sent"] = {"value": round(one["kept"] / turns, 3), "target": ">= 1.0"}
    print(json.dumps({"name": "contention", "metrics": metrics, "ratios": ratios}))


if __name__ == "__main__":
    main()
