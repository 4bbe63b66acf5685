"""The models a client may switch between (the factory's ``models`` / ``with_model``, e.g. for ACP's model picker)."""

from __future__ import annotations

import textwrap

import pytest
from onedoor.errors import OptionsError
from onedoor.plugins.options import parse_options
from onedoor.testing import collect, kernel_for_agent
from onedoor_backend_pydantic_ai import PydanticAIOptions, pydantic_ai_backend


def kernel_with(opts):
    return kernel_for_agent(lambda: pydantic_ai_backend(opts), "pydantic-ai")


def test_models_lists_the_current_one_first(server):
    opts = parse_options(PydanticAIOptions, "pydantic-ai", cli={
        "model": "small", "base_url": server.base_url, "models": "big,small,huge"}, environ={})
    listed = pydantic_ai_backend.models(opts)
    assert [m["id"] for m in listed] == ["small", "big", "huge"]
    assert all(m["name"] == m["id"] and server.base_url in m["description"] for m in listed)


def test_model_strings_with_providers(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    opts = PydanticAIOptions(model="openai:gpt-4o", models=["openai:gpt-4o-mini"])
    assert [(m["id"], m["name"]) for m in pydantic_ai_backend.models(opts)] == [
        ("openai:gpt-4o", "gpt-4o"), ("openai:gpt-4o-mini", "gpt-4o-mini")]
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(ValueError, match="missing key for model 'anthropic:claude"):
        PydanticAIOptions(model="openai:gpt-4o", models=["anthropic:claude-sonnet-4-5"])


async def test_switching_runs_the_next_turn_on_the_chosen_model(server):
    opts = PydanticAIOptions(model="small", base_url=server.base_url, api_key="k", retries=0, models=["big"])
    await collect(kernel_with(opts), "one")
    switched = pydantic_ai_backend.with_model(opts, "big")
    assert (switched.model, switched.models) == ("big", ["small"]) and opts.model == "small"
    assert [m["id"] for m in pydantic_ai_backend.models(switched)] == ["big", "small"]
    events = await collect(kernel_with(switched), "two")
    assert events[-1].usage[0].model == "big"
    assert [r.model for r in server.chat_requests()] == ["small", "big"]
    assert pydantic_ai_backend.with_model(switched, "big") is switched
    with pytest.raises(ValueError, match="unknown model 'other'; the choices are big, small"):
        pydantic_ai_backend.with_model(switched, "other")


async def test_an_agent_runs_on_the_model_given_with_it(server, tmp_path, monkeypatch):
    (tmp_path / "pa_own_model_agent.py").write_text(textwrap.dedent("""
        from pydantic_ai import Agent
        from pydantic_ai.models.test import TestModel

        agent = Agent(TestModel(custom_output_text="from the agent's own model"))
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    own = await collect(kernel_with(PydanticAIOptions(agent="pa_own_model_agent:agent")), "hi")
    assert own[-1].text == "from the agent's own model" and server.chat_requests() == []
    opts = PydanticAIOptions(agent="pa_own_model_agent:agent", model="served-model", base_url=server.base_url, retries=0)
    events = await collect(kernel_with(opts), "hi")
    assert events[-1].text == "You said: hi (turn 1)"
    assert [r.model for r in server.chat_requests()] == ["served-model"]


def test_models_need_a_model_to_start_with():
    with pytest.raises(OptionsError, match="name the one to start with"):
        parse_options(PydanticAIOptions, "pydantic-ai", cli={"agent": "x:y", "models": "a,b"}, environ={})
