"""Questions: a backend asks, the door answers live, by policy, or by parking the run."""

from __future__ import annotations

import asyncio
import threading

import pluggy
import pytest
from onedoor import hookspecs
from onedoor.builtins.scripted import ScriptedOptions, scripted
from onedoor.events import (
    STOP_CANCELLED,
    STOP_SUSPENDED,
    QuestionAnswered,
    QuestionAsked,
    RunFailed,
    RunFinished,
    RunStarted,
    TextDelta,
    ToolStarted,
)
from onedoor.hookspecs import hookimpl
from onedoor.kernel import Backend, Kernel, Limits
from onedoor.questions import Answer, LiveAsker, PolicyAsker, Question, QuestionError, SuspendAsker
from onedoor_test_support import await_for

MODES = ["sync", "async"]
ASK_RM = '/ask rm {"path": "x"}'


def kernel_for(mode: str, **limits) -> Kernel:
    options = ScriptedOptions(mode=mode, reasoning=False)
    return Kernel(Backend("scripted", lambda: scripted(options)), limits=Limits(**limits))


async def drain(run) -> list:
    async with run:
        return [event async for event in run]


async def ask_and_park(kernel: Kernel, message: str, **kwargs) -> tuple[list, Question]:
    events = await drain(kernel.run(message, asker=SuspendAsker(**kwargs)))
    assert type(events[-2]) is QuestionAsked, events
    assert events[-1].stop_reason == STOP_SUSPENDED
    return events, events[-2].question


# -- live -------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("outcome", "said"), [("allow_once", "Approved"), ("reject_once", "Not approved")])
async def test_a_live_approval_reaches_the_backend(mode, outcome, said):
    asked: list[Question] = []

    async def ask(question):
        asked.append(question)
        return outcome

    events = await drain(kernel_for(mode).run(ASK_RM, asker=LiveAsker(ask)))
    kinds = [type(e) for e in events]
    assert kinds.index(ToolStarted) < kinds.index(QuestionAsked) < kinds.index(QuestionAnswered)
    assert asked[0].kind == "approval" and asked[0].tool.name == "rm" and asked[0].tool.arguments == {"path": "x"}
    assert asked[0].id.startswith("q-") and asked[0].run_id == events[0].run_id
    answered = next(e for e in events if type(e) is QuestionAnswered)
    assert answered.answer.outcome == outcome and answered.answer.question_id == asked[0].id
    assert events[-1].text.startswith(said)


@pytest.mark.parametrize("mode", MODES)
async def test_always_is_remembered_for_the_rest_of_the_run(mode):
    asked: list[Question] = []

    class TwoDeletes:
        def run(self, message, *, history=None, context=None):
            yield RunStarted("r")
            first = context.ask_sync(Question.approval("c1", "rm", {"path": "a"}))
            second = context.ask_sync(Question.approval("c2", "rm", {"path": "b"}))
            other = context.ask_sync(Question.approval("c3", "mv", {}))
            text = f"{first.outcome} {second.outcome}/{second.how} {other.outcome}"
            yield TextDelta(text)
            yield RunFinished("r", text)

    async def ask(question):
        asked.append(question)
        return "allow_always" if question.tool.name == "rm" else "reject_once"

    kernel = Kernel(Backend("two", TwoDeletes))
    events = await drain(kernel.run("go", asker=LiveAsker(ask)))
    assert events[-1].text == "allow_always allow_always/policy reject_once"
    assert [q.tool.name for q in asked] == ["rm", "mv"], "the second rm was not asked again"


@pytest.mark.parametrize("mode", MODES)
async def test_an_input_question_gets_its_value_checked(mode):
    async def good(question):
        assert question.kind == "input" and question.schema["required"] == ["answer"]
        return Answer(question.id, "accept", {"answer": "main"})

    async def bad(question):
        return Answer(question.id, "accept", {"answer": 42})

    kernel = kernel_for(mode)
    events = await drain(kernel.run("/question Which branch?", asker=LiveAsker(good)))
    assert events[-1].text == 'You answered {"answer": "main"}'
    events = await drain(kernel.run("/question Which branch?", asker=LiveAsker(bad)))
    assert events[-1].text == "No answer (decline)", "a value that does not fit never reaches the backend"


async def test_a_live_asker_that_raises_means_no():
    async def broken(question):
        raise RuntimeError("the client went away")

    events = await drain(kernel_for("sync").run(ASK_RM, asker=LiveAsker(broken)))
    assert events[-1].text.startswith("Not approved (reject_once)")


@pytest.mark.parametrize("mode", MODES)
async def test_cancel_while_asked_live_answers_no_and_ends_cancelled(mode):
    kernel = kernel_for(mode)
    asking = asyncio.Event()

    async def never(question):
        asking.set()
        await asyncio.Event().wait()

    run = kernel.run(ASK_RM, asker=LiveAsker(never))
    async with run:
        events = []
        async for event in run:
            events.append(event)
            if type(event) is QuestionAsked:
                await asyncio.wait_for(asking.wait(), 30)
                run.cancel()
    assert events[-1].stop_reason == STOP_CANCELLED
    await await_for(lambda: kernel.active_runs == 0, "the cancelled run's slot to be freed")


# -- policy and no asker -----------------------------------------------------------------
@pytest.mark.parametrize("mode", MODES)
async def test_without_an_asker_the_answer_is_no_and_the_stream_is_unchanged(mode):
    events = await drain(kernel_for(mode).run(ASK_RM))
    assert not any(type(e) in (QuestionAsked, QuestionAnswered) for e in events)
    assert events[-1].text.startswith("Not approved (reject_once)")


async def test_the_older_approver_still_works_silently():
    async def approver(call_id, name, arguments):
        return name == "rm" and arguments == {"path": "x"}

    events = await drain(kernel_for("sync").run(ASK_RM, approver=approver))
    assert not any(type(e) in (QuestionAsked, QuestionAnswered) for e in events)
    assert events[-1].text.startswith("Approved (allow_once)")


@pytest.mark.parametrize(("policy", "ending"), [("deny", "Not approved"), ("allow", "Approved")])
async def test_a_policy_answers_and_says_so(policy, ending):
    events = await drain(kernel_for("async").run(ASK_RM, asker=PolicyAsker(policy)))
    answered = next(e for e in events if type(e) is QuestionAnswered)
    assert answered.answer.how == "policy"
    assert events[-1].text.startswith(ending)


@pytest.mark.parametrize("mode", MODES)
async def test_the_fail_policy_fails_the_run_naming_the_question(mode):
    kernel = kernel_for(mode)
    events = await drain(kernel.run("/question Which branch?", asker=PolicyAsker("fail")))
    assert type(events[-1]) is RunFailed and "Which branch?" in events[-1].error
    kinds = [type(e) for e in events]
    assert QuestionAsked in kinds and QuestionAnswered in kinds, "the door sees the question it failed on"
    await await_for(lambda: kernel.active_runs == 0, "the failed run's slot to be freed")


def test_an_unknown_policy_is_refused():
    with pytest.raises(ValueError, match="deny, allow, fail"):
        PolicyAsker("maybe")


async def test_a_backend_cannot_send_question_events_itself():
    class Forger:
        def run(self, message, *, history=None, context=None):
            yield RunStarted("r")
            yield QuestionAsked(Question.input("fake").stamped("r", None))
            yield RunFinished("r", "")

    events = await drain(Kernel(Backend("forger", Forger)).run("go", asker=SuspendAsker()))
    assert type(events[-1]) is RunFailed and "QuestionAsked" in events[-1].error


# -- suspended: parking and resume -------------------------------------------------------
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("outcome", "said"), [("allow_once", "Approved"), ("reject_always", "Not approved")])
async def test_a_parked_run_resumes_with_the_answer(mode, outcome, said):
    kernel = kernel_for(mode)
    first, question = await ask_and_park(kernel, ASK_RM)
    assert question.expires_at is not None
    assert kernel.parked_runs == 1 and kernel.active_runs == 1, "a parked run holds its slot"
    assert kernel.open_questions(question.run_id) == [question]
    second = await drain(kernel.resume([{"question_id": question.id, "outcome": outcome}]))
    assert second[0] == RunStarted(question.run_id), "the resumed response continues the same run"
    answered = next(e for e in second if type(e) is QuestionAnswered)
    assert answered.answer.outcome == outcome and answered.answer.how == "person" and answered.answer.by == "local"
    assert second[-1].text.startswith(said) and second[-1].stop_reason == "end_turn"
    assert kernel.parked_runs == 0
    await await_for(lambda: kernel.active_runs == 0, "the resumed run's slot to be freed")


@pytest.mark.parametrize("mode", MODES)
async def test_resume_errors_are_clear_and_leave_the_question_open(mode):
    kernel = kernel_for(mode)
    _, question = await ask_and_park(kernel, "/question Which branch?")
    cases = [
        ([{"question_id": question.id, "outcome": "accept", "value": {"answer": 3}}], "invalid", "must be a string"),
        ([{"question_id": question.id, "outcome": "allow_once"}], "invalid", "outcome must be one of"),
        ([{"question_id": question.id}], "invalid", "outcome"),
        (["not an object"], "invalid", "an answer is an object"),
        ([], "invalid", "at least one answer"),
        ([{"question_id": "q-nope", "outcome": "accept"}], "unknown", "no open question"),
    ]
    for answers, reason, words in cases:
        with pytest.raises(QuestionError, match=words) as caught:
            kernel.resume(answers)
        assert caught.value.reason == reason
    with pytest.raises(QuestionError) as foreign:
        kernel.resume([{"question_id": question.id, "outcome": "decline"}], principal="mallory")
    assert foreign.value.reason == "unknown", "another principal's question looks like an unknown one"
    assert kernel.open_questions(question.run_id, principal="mallory") == []
    assert kernel.parked_runs == 1, "the question is still open"
    events = await drain(kernel.resume([Answer(question.id, "accept", {"answer": "main"})]))
    assert events[-1].text == 'You answered {"answer": "main"}'
    with pytest.raises(QuestionError, match="answered: accept") as twice:
        kernel.resume([Answer(question.id, "accept", {"answer": "main"})])
    assert twice.value.reason == "answered"
    assert kernel.question_status(question.id) == "answered"
    assert kernel.question_status(question.id, principal="mallory") == "unknown"
    with pytest.raises(QuestionError, match="answered: accept"):
        kernel.check_question(question.id)


async def test_a_second_resume_in_the_same_loop_turn_is_answered_not_unknown():
    kernel = kernel_for("async")
    _, question = await ask_and_park(kernel, "/question Which branch?")
    assert kernel.question_status(question.id) == "open"
    assert kernel.check_question(question.id) is None
    first = kernel.resume([Answer(question.id, "accept", {"answer": "x"})])
    with pytest.raises(QuestionError) as second:
        kernel.resume([Answer(question.id, "accept", {"answer": "y"})])
    assert second.value.reason == "answered"
    events = await drain(first)
    assert events[-1].text == 'You answered {"answer": "x"}'



@pytest.mark.parametrize("mode", MODES)
async def test_a_parked_run_expires_and_ends_cancelled(mode):
    kernel = kernel_for(mode, question_ttl=0.3)
    seen: list = []

    class Hooks:
        @hookimpl
        def onedoor_run_finished(self, run, outcome):
            seen.append(outcome)

    manager = pluggy.PluginManager("onedoor")
    manager.add_hookspecs(hookspecs)
    manager.register(Hooks())
    kernel.hooks = manager.hook
    _, question = await ask_and_park(kernel, ASK_RM)
    await await_for(lambda: kernel.active_runs == 0, "the expired run to end and free its slot")
    assert kernel.parked_runs == 0
    assert seen and seen[-1].stop_reason == STOP_CANCELLED
    with pytest.raises(QuestionError, match="expired") as late:
        kernel.resume([{"question_id": question.id, "outcome": "allow_once"}])
    assert late.value.reason == "expired"


async def test_cancelling_a_parked_run_ends_it():
    kernel = kernel_for("sync")
    run = kernel.run(ASK_RM, asker=SuspendAsker())
    async with run:
        _ = [e async for e in run]
    assert kernel.parked_runs == 1
    run.cancel()
    await await_for(lambda: kernel.active_runs == 0, "the cancelled parked run to end")
    await await_for(lambda: not kernel.worker_threads(), "its worker thread to end")


@pytest.mark.parametrize("mode", MODES)
async def test_shutdown_ends_every_parked_run_and_leaks_nothing(mode):
    kernel = kernel_for(mode)
    threads_before = threading.active_count()
    tasks_before = len(asyncio.all_tasks())
    for _ in range(5):
        await ask_and_park(kernel, ASK_RM)
    assert kernel.parked_runs == 5
    assert await kernel.shutdown(grace=10) == 5
    await await_for(lambda: kernel.active_runs == 0, "every parked run to end on shutdown")
    await await_for(lambda: not kernel.worker_threads(), "every worker thread to end")
    await await_for(lambda: threading.active_count() <= threads_before, "no thread left behind")
    await await_for(lambda: len(asyncio.all_tasks()) <= tasks_before, "no task left behind")


async def test_parked_runs_count_against_the_run_limit():
    kernel = kernel_for("async", max_concurrent_runs=1)
    await ask_and_park(kernel, ASK_RM)
    with pytest.raises(Exception, match="limit") as busy:
        kernel.run("hello")
    assert busy.value.reason == "busy"


async def test_past_the_parking_cap_the_fallback_answers():
    kernel = kernel_for("async", max_parked_runs=2)
    for _ in range(2):
        await ask_and_park(kernel, ASK_RM)
    events = await drain(kernel.run(ASK_RM, asker=SuspendAsker(fallback="deny")))
    answered = next(e for e in events if type(e) is QuestionAnswered)
    assert answered.answer.how == "policy" and events[-1].text.startswith("Not approved")
    assert kernel.parked_runs == 2


async def test_a_thousand_parked_runs_under_the_cap():
    count = 1000
    kernel = kernel_for("async", max_concurrent_runs=count, max_parked_runs=count)
    parked = await asyncio.gather(*(ask_and_park(kernel, ASK_RM) for _ in range(count)))
    assert kernel.parked_runs == count and kernel.active_runs == count
    with pytest.raises(Exception, match="limit"):
        kernel.run("one too many")
    endings = await asyncio.gather(
        *(drain(kernel.resume([Answer(q.id, "allow_once")])) for _, q in parked)
    )
    assert all(events[-1].text.startswith("Approved") for events in endings)
    await await_for(lambda: kernel.active_runs == 0, "all thousand runs to end")


async def test_two_questions_in_one_run_park_twice():
    class TwoQuestions:
        async def run(self, message, *, history=None, context=None):
            yield RunStarted("r")
            yield TextDelta("a")
            first = await context.ask(Question.input("first?"))
            yield TextDelta("b")
            second = await context.ask(Question.approval("c", "rm", {}))
            yield TextDelta(f"{first.value['answer']} {second.outcome}")
            yield RunFinished("r", f"ab{first.value['answer']} {second.outcome}")

    kernel = Kernel(Backend("two", TwoQuestions))
    events = await drain(kernel.run("go", asker=SuspendAsker()))
    assert [type(e) for e in events] == [RunStarted, TextDelta, QuestionAsked, RunFinished]
    second_part = await drain(kernel.resume([Answer(events[2].question.id, "accept", {"answer": "x"})]))
    assert [type(e) for e in second_part] == [RunStarted, QuestionAnswered, TextDelta, QuestionAsked, RunFinished]
    last = await drain(kernel.resume([Answer(second_part[3].question.id, "reject_once")]))
    assert last[-1] == RunFinished(events[0].run_id, "abx reject_once")



async def test_a_cancelled_async_backend_cancels_the_doors_live_question():
    kernel = kernel_for("async")
    asking = asyncio.Event()
    ended = asyncio.Event()

    async def slow(question):
        asking.set()
        try:
            await asyncio.Event().wait()
        finally:
            ended.set()

    run = kernel.run(ASK_RM, asker=LiveAsker(slow))
    async with run:
        async for event in run:
            if type(event) is QuestionAsked:
                await asyncio.wait_for(asking.wait(), 30)
                kernel.cancel_all()
    await asyncio.wait_for(ended.wait(), 30)
    await await_for(lambda: kernel.active_runs == 0, "the cancelled run's slot to be freed")


def test_a_huge_hostile_answer_gives_a_short_error():
    from onedoor.questions import check_answer

    question = Question.input("Which?").stamped("r", None)
    for answer in (Answer(question.id, "z" * 1_000_000), Answer(question.id, "accept", {"k" * 1_000_000: 1})):
        with pytest.raises(QuestionError) as caught:
            check_answer(question, answer)
        assert len(str(caught.value)) < 300
    kernel = kernel_for("sync")
    with pytest.raises(QuestionError) as unknown:
        kernel.resume([{"question_id": "q" * 1_000_000, "outcome": "accept"}])
    assert len(str(unknown.value)) < 300


async def test_a_run_id_in_use_is_refused_until_its_run_ends():
    kernel = kernel_for("async")
    events, question = await ask_and_park(kernel, ASK_RM)
    run_id = question.run_id
    with pytest.raises(Exception, match="is in use") as refused:
        kernel.run("hello", run_id=run_id)
    assert refused.value.reason == "in_use"
    await drain(kernel.resume([Answer(question.id, "allow_once")]))
    again = await drain(kernel.run("hello", run_id=run_id))
    assert again[-1].stop_reason == "end_turn", "the id is free once its run has ended"


async def test_a_question_the_backend_stopped_waiting_for_parks_nothing():
    class Impatient:
        async def run(self, message, *, history=None, context=None):
            yield RunStarted(context.run_id)
            yield TextDelta("thinking ")
            try:
                await asyncio.wait_for(context.ask(Question.input("quick?")), 0.05)
                text = "answered"
            except TimeoutError:
                text = "gave up"
            yield TextDelta(text)
            yield RunFinished(context.run_id, "thinking " + text)

    kernel = Kernel(Backend("impatient", Impatient))
    events = []
    async with kernel.run("go", asker=SuspendAsker()) as run:
        async for event in run:
            events.append(event)
            await asyncio.sleep(0.2)  # a slow door: the backend gives up before it reads on
    assert events[-1] == RunFinished(events[0].run_id, "thinking gave up")
    assert QuestionAsked not in [type(e) for e in events], "a question nobody waits for is not shown"
    assert kernel.parked_runs == 0 and not run.suspended
    await await_for(lambda: kernel.active_runs == 0, "the run's slot to be freed")


@pytest.mark.parametrize("mode", MODES)
async def test_a_live_question_nobody_answers_expires(mode):
    async def silent(question):
        await asyncio.Event().wait()

    kernel = kernel_for(mode, question_ttl=0.3)
    events = await drain(kernel.run(ASK_RM, asker=LiveAsker(silent)))
    answered = next(e for e in events if type(e) is QuestionAnswered)
    assert answered.answer.how == "expired" and events[-1].text.startswith("Not approved")


@pytest.mark.parametrize("mode", MODES)
async def test_a_run_timeout_while_asked_live_frees_everything(mode):
    async def silent(question):
        await asyncio.Event().wait()

    kernel = kernel_for(mode, run_timeout=0.5)
    events = await drain(kernel.run(ASK_RM, asker=LiveAsker(silent)))
    assert type(events[-1]) is RunFailed and "run timeout" in events[-1].error
    await await_for(lambda: kernel.active_runs == 0, "the timed-out run's slot to be freed")
    await await_for(lambda: not kernel.worker_threads(), "its worker thread to end")


async def test_a_cancelled_parked_question_is_gone_not_answered():
    kernel = kernel_for("async")
    run = kernel.run(ASK_RM, asker=SuspendAsker())
    async with run:
        events = [e async for e in run]
    assert run.suspended
    run.cancel()
    await await_for(lambda: kernel.active_runs == 0, "the cancelled parked run to end")
    with pytest.raises(QuestionError, match="cancelled") as late:
        kernel.check_question(events[-2].question.id)
    assert late.value.reason == "expired"


def test_a_form_with_a_non_numeric_bound_is_refused():
    for bound in ("minLength", "maxLength", "minimum", "maximum"):
        with pytest.raises(ValueError, match=f"{bound} must be a number"):
            Question.input("x", {"type": "object", "properties": {"a": {"type": "string", bound: "5"}}})
