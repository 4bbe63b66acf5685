"""Answers to a run parked on another server, through PostgreSQL: the answer given to server
b reaches server a at once through LISTEN/NOTIFY (a's own look for answers is an hour
away), the continuation read through b ends with the answer's effect; two servers
answering at once: one wins. Two kernels, two stores, one real database."""

from __future__ import annotations

import asyncio

import pytest
from onedoor import RemoteAnswer
from onedoor.builtins.scripted import ScriptedOptions, scripted
from onedoor.events import STOP_CANCELLED, STOP_SUSPENDED, QuestionAnswered, QuestionAsked, RunFinished, RunStarted
from onedoor.journal import shared
from onedoor.kernel import Backend, Kernel
from onedoor.questions import QuestionError, SuspendAsker
from onedoor_store_postgres import PostgresThreadStore
from onedoor_test_support import await_for

HOUR = 3600.0


def server(dsn: str) -> Kernel:
    options = ScriptedOptions(delay=0.0, reasoning=False, mode="async")
    return Kernel(Backend("scripted", lambda: scripted(options)), store=PostgresThreadStore(dsn, pool_size=4))


@pytest.fixture
async def servers(postgres):
    kernels = [server(postgres.dsn) for _ in range(3)]
    yield kernels
    for kernel in kernels:
        await kernel.store.close()


async def read(journal, after=0):
    return [pair async for pair in journal.follow(after)]


async def park(kernel: Kernel, message: str = "/question Name?"):
    journal = kernel.journals.start(kernel.run(message, principal="alice", asker=SuspendAsker()))
    seen = await read(journal)
    assert seen[-1][1].stop_reason == STOP_SUSPENDED
    await await_for(lambda: journal.writer is not None and journal.writer.written == journal.last_seq,
                    "the suspension to be in the store")
    return journal, next(e.question for _, e in seen if isinstance(e, QuestionAsked))


def accept(question, text: str) -> list[dict]:
    return [{"question_id": question.id, "outcome": "accept", "value": {"answer": text}}]


async def test_an_answer_through_the_other_server_arrives_by_notification(servers, monkeypatch):
    a, b, _ = servers
    monkeypatch.setattr(shared, "LEASE_RENEW", HOUR)  # a looks for answers on its own once an hour
    journal, question = await park(a)
    await await_for(lambda: a.store.journal_news_live(), "server a to listen")
    parked_at = journal.last_seq
    answered = await asyncio.wait_for(
        b.answer(accept(question, "Ada"), principal="alice", door="rest", run_id=journal.run_id), 60)
    assert isinstance(answered, RemoteAnswer) and answered.after == parked_at
    rest = await read(answered.journal, after=answered.after)
    assert type(rest[0][1]) is RunStarted and type(rest[1][1]) is QuestionAnswered
    ending = rest[-1][1]
    assert isinstance(ending, RunFinished) and "Ada" in ending.text
    assert [seq for seq, _ in rest] == list(range(parked_at + 1, parked_at + 1 + len(rest))), "numbers go on"


async def test_two_servers_answering_at_once_one_wins(servers):
    a, b, c = servers
    journal, question = await park(a)
    parked_at = journal.last_seq
    results = await asyncio.gather(
        b.answer(accept(question, "from b"), principal="alice", run_id=journal.run_id),
        c.answer(accept(question, "from c"), principal="alice", run_id=journal.run_id),
        return_exceptions=True,
    )
    assert sorted(type(r).__name__ for r in results) == ["QuestionError", "RemoteAnswer"], results
    assert next(r for r in results if isinstance(r, QuestionError)).reason == "answered"
    await await_for(lambda: journal.done, "the run to end")
    answers = [e.answer.value for _, e in await read(journal, after=parked_at) if isinstance(e, QuestionAnswered)]
    assert answers == [{"answer": "from b" if isinstance(results[0], RemoteAnswer) else "from c"}]


async def test_refusals_and_a_cancel_through_the_other_server(servers):
    a, b, _ = servers
    journal, question = await park(a)
    parked_at = journal.last_seq
    for answers, principal, reason in [
        ([{"question_id": "q-nope", "outcome": "accept", "value": {"answer": "x"}}], "alice", "unknown"),
        (accept(question, "x"), "bob", "unknown"),
        ([{"question_id": question.id, "outcome": "allow_once"}], "alice", "invalid"),
    ]:
        with pytest.raises(QuestionError) as refused:
            await b.answer(answers, principal=principal, run_id=journal.run_id)
        assert refused.value.reason == reason
    assert await b.cancel_run(journal.run_id, principal="alice")
    await await_for(lambda: journal.done, "the parked run to be cancelled through server b")
    assert (await read(journal, after=parked_at))[-1][1].stop_reason == STOP_CANCELLED
    await await_for(lambda: journal.writer.written == journal.last_seq, "its ending to be in the store")
    with pytest.raises(QuestionError) as refused:
        await b.answer(accept(question, "late"), principal="alice", run_id=journal.run_id)
    assert refused.value.reason == "expired"
