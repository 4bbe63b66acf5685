"""Answers to a run parked on another server (``kernel.answer``): two kernels on one SQLite
threads file (a real second process where the run's server dies). The answer given to
server b resumes the run parked on server a; the continuation read through b is the one a
reader on a gets; refusals are the local ones, and an answer is never applied twice."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
import time

import pytest
from onedoor import RemoteAnswer
from onedoor.builtins.scripted import ScriptedOptions, scripted
from onedoor.events import STOP_CANCELLED, STOP_SUSPENDED, QuestionAnswered, QuestionAsked, RunFinished, RunStarted
from onedoor.kernel import Backend, Kernel, Limits
from onedoor.questions import QuestionError, SuspendAsker
from onedoor.threads.sqlite import SQLiteThreadStore
from onedoor_test_support import await_for


def server(path) -> Kernel:
    options = ScriptedOptions(delay=0.0, reasoning=False, mode="async")
    return Kernel(Backend("scripted", lambda: scripted(options)), store=SQLiteThreadStore(path, shared_journal=True),
                  limits=Limits())


async def read(journal, after=0):
    return [pair async for pair in journal.follow(after)]


@pytest.fixture
async def servers(tmp_path):
    kernels = [server(tmp_path / "t.db") for _ in range(3)]
    yield kernels
    for kernel in kernels:
        await kernel.store.close()


async def park(kernel: Kernel, message: str = "/question Name?", principal: str = "alice"):
    """A run of ``principal`` on ``kernel`` parked on a question, its suspension in the store."""
    journal = kernel.journals.start(kernel.run(message, principal=principal, asker=SuspendAsker()))
    seen = await read(journal)
    assert seen[-1][1].stop_reason == STOP_SUSPENDED
    await await_for(lambda: journal.writer is not None and journal.writer.written == journal.last_seq,
                    "the suspension to be in the store")
    question = next(e.question for _, e in seen if isinstance(e, QuestionAsked))
    return journal, question


def accept(question, text: str) -> list[dict]:
    return [{"question_id": question.id, "outcome": "accept", "value": {"answer": text}}]


async def test_an_answer_through_the_other_server_resumes_the_run(servers):
    a, b, _ = servers
    journal, question = await park(a)
    parked_at = journal.last_seq
    answered = await b.answer(accept(question, "Ada"), principal="alice", door="rest", run_id=journal.run_id)
    assert isinstance(answered, RemoteAnswer) and answered.after == parked_at
    rest = await read(answered.journal, after=answered.after)
    kinds = [type(e) for _, e in rest]
    assert kinds[0] is RunStarted and kinds[1] is QuestionAnswered, kinds
    assert rest[1][1].answer.value == {"answer": "Ada"} and rest[1][1].answer.by == "alice"
    ending = rest[-1][1]
    assert isinstance(ending, RunFinished) and ending.stop_reason != STOP_SUSPENDED and "Ada" in ending.text
    await await_for(lambda: journal.done, "the run to end on server a")
    here = await read(journal, after=answered.after)
    assert [(seq, type(e)) for seq, e in here] == [(seq, type(e)) for seq, e in rest], "the same continuation"
    assert a.parked_runs == 0


async def test_an_approval_through_the_other_server(servers):
    a, b, _ = servers
    journal, question = await park(a, '/ask deploy {"env": "prod"}')
    answered = await b.answer([{"question_id": question.id, "outcome": "allow_once"}], principal="alice",
                              run_id=journal.run_id)
    ending = (await read(answered.journal, after=answered.after))[-1][1]
    assert ending.text.startswith("Approved (allow_once)")


@pytest.mark.parametrize("case", ["unknown_question", "another_principal", "another_run", "misfit", "duplicate"])
async def test_answers_the_run_server_would_refuse_are_refused_and_nothing_is_applied(servers, case):
    a, b, _ = servers
    journal, question = await park(a)
    other, _ = await park(a, "/question Other?")
    answers, principal, run_id, reason = accept(question, "Ada"), "alice", journal.run_id, "unknown"
    if case == "unknown_question":
        answers[0]["question_id"] = "q-nope"
    elif case == "another_principal":
        principal = "bob"
    elif case == "another_run":
        run_id = other.run_id
    elif case == "misfit":
        answers[0]["outcome"], reason = "allow_once", "invalid"  # an input question takes accept/decline/cancel
    else:
        answers, reason = answers * 2, "invalid"
    with pytest.raises(QuestionError) as refused:
        await b.answer(answers, principal=principal, run_id=run_id)
    assert refused.value.reason == reason
    assert [q.id for q in a.open_questions(journal.run_id, principal="alice")] == [question.id], "still waiting"


async def test_two_servers_answering_at_once_one_wins(servers):
    a, b, c = servers
    journal, question = await park(a)
    parked_at = journal.last_seq
    results = await asyncio.gather(
        b.answer(accept(question, "from b"), principal="alice", run_id=journal.run_id),
        c.answer(accept(question, "from c"), principal="alice", run_id=journal.run_id),
        return_exceptions=True,
    )
    won = [r for r in results if isinstance(r, RemoteAnswer)]
    lost = [r for r in results if isinstance(r, QuestionError)]
    assert len(won) == 1 and len(lost) == 1 and lost[0].reason == "answered", results
    await await_for(lambda: journal.done, "the run to end")
    texts = [e.answer.value for _, e in await read(journal, after=parked_at) if isinstance(e, QuestionAnswered)]
    assert len(texts) == 1, "applied once"
    winner = "from b" if won[0] is results[0] else "from c"
    assert texts == [{"answer": winner}]


async def test_a_local_answer_and_a_remote_one_at_once_one_wins(servers):
    a, b, _ = servers
    journal, question = await park(a)
    parked_at = journal.last_seq
    remote = asyncio.ensure_future(b.answer(accept(question, "remote"), principal="alice", run_id=journal.run_id))
    try:  # whichever is in first wins; the other is told it was answered
        local = await a.answer(accept(question, "local"), principal="alice", run_id=journal.run_id)
    except QuestionError as exc:  # b's answer was in the store first
        assert exc.reason == "answered"
        assert isinstance(await remote, RemoteAnswer)
        winner = "remote"
    else:
        a.journals.start(local, on_disconnect="finish")
        with pytest.raises(QuestionError) as refused:
            await remote
        assert refused.value.reason == "answered"
        winner = "local"
    await await_for(lambda: journal.done, "the run to end")
    answers = [e.answer.value for _, e in await read(journal, after=parked_at) if isinstance(e, QuestionAnswered)]
    assert answers == [{"answer": winner}]


async def test_an_answer_after_the_run_was_cancelled_is_refused(servers):
    a, b, _ = servers
    journal, question = await park(a)
    assert await a.cancel_run(journal.run_id, principal="alice")
    await await_for(lambda: journal.done, "the cancelled run to end")
    await await_for(lambda: journal.writer.written == journal.last_seq, "its ending to be in the store")
    with pytest.raises(QuestionError) as refused:
        await b.answer(accept(question, "late"), principal="alice", run_id=journal.run_id)
    assert refused.value.reason == "expired"


async def test_an_answer_to_an_expired_question_is_refused(servers):
    a, b, _ = servers
    journal = a.journals.start(a.run("/question Name?", principal="alice", asker=SuspendAsker(ttl=0.2)))
    question = next(e.question for _, e in await read(journal) if isinstance(e, QuestionAsked))
    await await_for(lambda: journal.done, "the question to expire and its run to end")
    await await_for(lambda: journal.writer.written == journal.last_seq, "its ending to be in the store")
    with pytest.raises(QuestionError) as refused:
        await b.answer(accept(question, "late"), principal="alice", run_id=journal.run_id)
    assert refused.value.reason == "expired"


async def test_a_cancel_through_the_other_server_reaches_a_parked_run(servers):
    a, b, _ = servers
    journal, _ = await park(a)
    parked_at = journal.last_seq
    assert await b.cancel_run(journal.run_id, principal="alice")
    await await_for(lambda: journal.done, "the parked run to be cancelled through server b")
    assert (await read(journal, after=parked_at))[-1][1].stop_reason == STOP_CANCELLED


async def test_a_draining_server_still_takes_answers_from_another(servers):
    a, b, _ = servers
    journal, question = await park(a)
    a.drain()
    answered = await b.answer(accept(question, "Ada"), principal="alice", run_id=journal.run_id)
    assert "Ada" in (await read(answered.journal, after=answered.after))[-1][1].text


async def test_an_answer_for_a_run_parked_here_is_the_local_resume(servers):
    a, _, _ = servers
    journal, question = await park(a)
    stream = await a.answer(accept(question, "Ada"), principal="alice", run_id=journal.run_id)
    assert not isinstance(stream, RemoteAnswer)
    async with stream:
        events = [e async for e in stream]
    assert "Ada" in events[-1].text


PARKED = """
import asyncio, sys
from onedoor.builtins.scripted import ScriptedOptions, scripted
from onedoor.kernel import Backend, Kernel
from onedoor.questions import SuspendAsker
from onedoor.threads.sqlite import SQLiteThreadStore
import onedoor.journal.shared as shared
shared.LEASE_TTL = 1.0
shared.LEASE_RENEW = 0.2

async def main():
    store = SQLiteThreadStore(sys.argv[1], shared_journal=True)
    kernel = Kernel(Backend("scripted", lambda: scripted(ScriptedOptions(reasoning=False))), store=store)
    journal = kernel.journals.start(kernel.run("/question Name?", principal="alice", run_id="r-parked",
                                               asker=SuspendAsker()))
    async for seq, event in journal.follow():
        if type(event).__name__ == "QuestionAsked":
            qid = event.question.id
    while journal.writer.written < journal.last_seq:
        await asyncio.sleep(0.01)
    print(qid, flush=True)
    await asyncio.sleep(3600)

asyncio.run(main())
"""


@pytest.mark.parametrize("when", ["dead", "frozen"])
async def test_an_answer_for_a_run_whose_server_stopped_is_refused(tmp_path, when):
    """Killed (its lease runs out before the answer comes) or frozen (the answer is left while
    its lease holds, and nobody takes it): ``expired``, no hang."""
    path = tmp_path / "t.db"
    proc = subprocess.Popen([sys.executable, "-c", PARKED, str(path)], stdout=subprocess.PIPE, text=True)
    b = server(path)
    try:
        qid = proc.stdout.readline().strip()
        assert qid.startswith("q-"), "the other server to park its run"
        proc.send_signal(signal.SIGKILL if when == "dead" else signal.SIGSTOP)
        if when == "dead":
            proc.wait(timeout=30)
            deadline = time.monotonic() + 10
            while (await b.store.journal_read("r-parked", "alice", 0, limit=0)).lease_until > time.time():
                assert time.monotonic() < deadline, "its lease to run out"
                await asyncio.sleep(0.05)
        with pytest.raises(QuestionError) as refused:
            await asyncio.wait_for(b.answer([{"question_id": qid, "outcome": "accept", "value": {"answer": "x"}}],
                                            principal="alice", run_id="r-parked"), 30)
        assert refused.value.reason == "expired"
    finally:
        proc.kill()
        proc.wait(timeout=30)
        await b.store.close()


async def test_an_answer_left_by_another_server_comes_before_one_given_here(servers):
    """Server b's answer is in the store before server a looks for it; an answer given on a
    meanwhile is the later one: refused ``answered``, and b's is the one the run takes."""
    a, _, _ = servers
    journal, question = await park(a)
    parked_at = journal.last_seq
    left = await a.store.journal_answer(journal.run_id, "alice", parked_at,  # what server b leaves
                                        json.dumps({"answers": accept(question, "from b"), "door": "rest"}))
    assert left
    with pytest.raises(QuestionError) as refused:
        await a.answer(accept(question, "from a"), principal="alice", door="rest", run_id=journal.run_id)
    assert refused.value.reason == "answered"
    await await_for(lambda: journal.done, "the run to end with b's answer")
    answered = [e for _, e in await read(journal, after=parked_at) if isinstance(e, QuestionAnswered)]
    assert [e.answer.value for e in answered] == [{"answer": "from b"}]
