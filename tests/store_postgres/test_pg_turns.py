"""Turns on PostgreSQL threads through the kernel (#24 items 1 and 2): many at once on one
thread are all kept, and a reply a backend streamed with an emoji split across two deltas
(or one half of it alone) is kept as the door delivered it."""

from __future__ import annotations

import asyncio

import pytest
from onedoor import Backend, Kernel, Limits, RunFailed, RunFinished, RunStarted, TextDelta
from onedoor.builtins.scripted import ScriptedOptions, scripted
from onedoor_store_postgres.store import PostgresThreadStore


async def drain(run) -> list:
    async with run:
        return [event async for event in run]


@pytest.fixture
async def store(postgres):
    store = PostgresThreadStore(postgres.dsn, pool_size=8)
    yield store
    await store.close()


async def test_many_turns_on_one_thread_at_once_are_all_kept(store, postgres):
    options = ScriptedOptions(mode="async", reasoning=False)
    kernel = Kernel(Backend("scripted", lambda: scripted(options)), store=store, limits=Limits(max_concurrent_runs=64))
    other = PostgresThreadStore(postgres.dsn, pool_size=4)  # a second server's store on the same database
    kernel_two = Kernel(Backend("scripted", lambda: scripted(options)), store=other, limits=Limits(max_concurrent_runs=64))
    try:
        thread = await store.create("alice")
        runs = [(kernel if i % 2 else kernel_two).run(f"turn {i}", thread=thread, principal="alice") for i in range(50)]
        endings = await asyncio.gather(*(drain(run) for run in runs))
        failed = [e[-1] for e in endings if type(e[-1]) is RunFailed]
        assert failed == [] and all(type(e[-1]) is RunFinished for e in endings)
        kept = await store.get("alice", thread.id)
        assert sorted(m.content for m in kept.messages if m.role == "user") == sorted(f"turn {i}" for i in range(50))
    finally:
        await other.close()


class Splitter:
    def __init__(self, lone: bool) -> None:
        self.lone = lone

    async def run(self, message, *, history=None, context=None):
        parts = ["smile ", "\ud83d", "\ude00"] + (["\ud83d"] if self.lone else [])
        yield RunStarted(context.run_id)
        for part in parts:
            yield TextDelta(part)
        yield RunFinished(context.run_id, "".join(parts))


@pytest.mark.parametrize("lone", [False, True], ids=["pair", "lone"])
async def test_a_split_surrogate_pair_is_kept(store, lone):
    kernel = Kernel(Backend("splitter", lambda: Splitter(lone)), store=store)
    thread = await store.create("alice")
    events = await drain(kernel.run("hi", thread=thread, principal="alice"))
    assert type(events[-1]) is RunFinished, events[-1]
    assert (await store.get("alice", thread.id)).messages[-1].content == ("smile 😀\ud83d" if lone else "smile 😀")
