"""Token usage of pydantic-ai runs, per model, equal to what the fake model server reported."""

from __future__ import annotations

import asyncio

from onedoor.events import RunFailed, RunFinished, UsageReported
from onedoor.port import ToolSpec
from onedoor.testing import collect, kernel_for_agent
from onedoor.usage import ModelUsage, add_usage
from onedoor_backend_pydantic_ai import PydanticAIOptions, pydantic_ai_backend

ADD = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]}


def make_kernel(server, model="fake-model", **extra):
    opts = PydanticAIOptions(model=model, base_url=server.base_url, api_key="k", retries=0, **extra)
    return kernel_for_agent(lambda: pydantic_ai_backend(opts), "pydantic-ai")


def served(requests, model="fake-model", provider="openai"):
    """One usage entry from the usage objects the fake server sent."""
    sent = [r.usage for r in requests if r.usage is not None]
    return ModelUsage(
        model=model, provider=provider,
        input_tokens=sum(u["prompt_tokens"] for u in sent),
        output_tokens=sum(u["completion_tokens"] for u in sent),
        cache_read_tokens=sum(u["prompt_tokens_details"]["cached_tokens"] for u in sent),
        reasoning_tokens=sum(u["completion_tokens_details"]["reasoning_tokens"] for u in sent),
        requests=len(sent),
    )


async def test_usage_equals_the_servers(server):
    events = await collect(make_kernel(server, instructions="Be brief."), "/think hello there")
    assert isinstance(events[-1], RunFinished)
    [usage] = events[-1].usage
    assert usage == served(server.chat_requests())
    assert usage.reasoning_tokens > 0 and usage.cache_read_tokens == 2  # the instructions came before the message


async def test_usage_over_a_tool_call_and_history(server):
    async def add(arguments):
        return arguments["a"] + arguments["b"]

    history = [{"role": "user", "content": "earlier words here"}, {"role": "assistant", "content": "fine then"}]
    tool = ToolSpec("add", "add", ADD, client=False, handler=add)
    events = await collect(make_kernel(server), '/tool add {"a": 1, "b": 2}', tools=[tool], history=history)
    [usage] = events[-1].usage
    requests = server.chat_requests()
    assert len(requests) == 2 and usage == served(requests)
    assert usage.cache_read_tokens >= 5, "the history is the cached prefix of both requests"
    reported = [e.usage for e in events if isinstance(e, UsageReported)]
    assert len(reported) == 2 and add_usage(*reported) == events[-1].usage, "reported as it went, summed at the end"


async def test_each_response_is_reported_as_it_arrives(server):
    from onedoor.port import CancelToken, RunContext
    from onedoor_backend_pydantic_ai.agent import PydanticAIAgent

    opts = PydanticAIOptions(model="fake-model", base_url=server.base_url, api_key="k", retries=0)

    async def add(arguments):
        return 3

    tool = ToolSpec("add", "add", ADD, client=False, handler=add)
    context = RunContext("r1", CancelToken(), tools=(tool,))
    events = [e async for e in PydanticAIAgent(opts).run('/tool add {"a": 1, "b": 2}', context=context)]
    reported = [e.usage for e in events if isinstance(e, UsageReported)]
    assert len(reported) == 2 and [u[0].requests for u in reported] == [1, 1]
    assert events[-1].usage == (), "nothing left beyond what was reported"
    first, second = server.chat_requests()
    assert reported[0][0].input_tokens == first.usage["prompt_tokens"]
    assert reported[1][0].input_tokens == second.usage["prompt_tokens"]


async def test_a_cancelled_run_keeps_what_it_used(server):
    kernel = make_kernel(server)
    gate = asyncio.Event()

    async def slow(arguments):
        gate.set()
        await asyncio.sleep(60)

    tool = ToolSpec("add", "add", ADD, client=False, handler=slow)
    async with kernel.run('/tool add {"a": 1, "b": 2}', tools=[tool]) as run:
        async def cancel_once_the_tool_runs():
            await gate.wait()
            run.cancel()

        canceller = asyncio.create_task(cancel_once_the_tool_runs())
        async for _event in run:
            pass
        await canceller
    assert run.outcome.stop_reason == "cancelled"
    assert run.outcome.usage == (served(server.chat_requests()),)


async def test_a_failed_run_reports_what_it_used(server):
    async def broken(arguments):
        raise RuntimeError("disk on fire")

    tool = ToolSpec("add", "add", ADD, client=False, handler=broken)
    events = await collect(make_kernel(server), '/tool add {"a": 1, "b": 2}', tools=[tool])
    assert isinstance(events[-1], RunFailed) and "disk on fire" in events[-1].error
    assert events[-1].usage == (served(server.chat_requests()),) and events[-1].usage[0].requests == 1
    events = await collect(make_kernel(server), "/error 500 broken")
    assert isinstance(events[-1], RunFailed) and events[-1].usage == (), "no response, no usage"


async def test_a_priced_model_has_a_cost(server):
    from genai_prices import Usage, calc_price

    events = await collect(make_kernel(server, model="gpt-4o"), "price me")
    [usage] = events[-1].usage
    sent = server.chat_requests()[-1].usage
    assert usage.model == "gpt-4o" and usage.currency == "USD"
    price = calc_price(Usage(input_tokens=sent["prompt_tokens"], output_tokens=sent["completion_tokens"],
                             cache_read_tokens=sent["prompt_tokens_details"]["cached_tokens"]), "gpt-4o", provider_id="openai")
    assert usage.cost == float(price.total_price) > 0
    [unpriced] = (await collect(make_kernel(server), "free"))[-1].usage
    assert unpriced.cost is None and unpriced.currency == ""


DELEGATING_AGENT = """
import os
from openai import AsyncOpenAI
from pydantic_ai import Agent, RunContext
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider


def model(name):
    client = AsyncOpenAI(base_url=os.environ["DELEGATE_FAKE_URL"], api_key="k", max_retries=0)
    return OpenAIChatModel(name, provider=OpenAIProvider(openai_client=client))


helper = Agent(model("helper-model"))


def build():
    agent = Agent(model("boss-model"))

    @agent.tool
    async def ask_helper(ctx: RunContext[None], question: str) -> str:
        '''Ask the helper agent.'''
        result = await helper.run(question, usage=ctx.usage)
        return result.output

    return agent
"""


async def test_usage_of_an_agent_a_tool_delegated_to_is_unattributed(server, tmp_path, monkeypatch):
    (tmp_path / "pa_delegating_agent.py").write_text(DELEGATING_AGENT)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("DELEGATE_FAKE_URL", server.base_url)
    opts = PydanticAIOptions(agent="pa_delegating_agent:build")
    kernel = kernel_for_agent(lambda: pydantic_ai_backend(opts), "pydantic-ai")
    events = await collect(kernel, '/tool ask_helper {"question": "two words"}')
    assert isinstance(events[-1], RunFinished), events[-1]
    by_model = {u.model: u for u in events[-1].usage}
    requests = server.chat_requests()
    assert [r.model for r in requests] == ["boss-model", "helper-model", "boss-model"]
    assert by_model["boss-model"] == served([requests[0], requests[2]], "boss-model")
    assert by_model["unattributed"] == served([requests[1]], "unattributed", "pydantic-ai")
