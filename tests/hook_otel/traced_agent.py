"""A user's pydantic-ai agent for the tests: instrumented with OpenTelemetry (its own
spans), a ``word_count`` tool, the fake model server at ``$ONEDOOR_TEST_MODEL_URL``.
Served with ``-b pydantic-ai -o agent=traced_agent:agent``."""

from __future__ import annotations

import os

from pydantic_ai import Agent
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider


def agent() -> Agent:
    provider = OpenAIProvider(base_url=os.environ["ONEDOOR_TEST_MODEL_URL"], api_key="sk-test")
    Agent.instrument_all()  # pydantic-ai's own spans, on the global tracer provider (onedoor's)
    built = Agent(OpenAIChatModel("fake-model", provider=provider))

    @built.tool_plain
    def word_count(text: str) -> dict:
        """Count the words of a text."""
        return {"words": len(text.split())}

    return built
