"""The live schema test's calls (tests/live/test_openai_accepts_every_schema.py), offline: the real
openai client against the fake OpenAI-compatible server, every schema in every strategy: the request is
well-formed and the answer is read back the way the live test reads it."""

from __future__ import annotations

import pytest
from lambda_agents.llm import Strategy
from lambda_agents.llm.openai_model import OpenAIChatModel

from devtools.fake_openai import FakeOpenAIServer
from tests.live.schemas import OUTPUT_SCHEMAS, ask

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("strategy", list(Strategy), ids=str)
@pytest.mark.parametrize("schema", sorted(OUTPUT_SCHEMAS))
def test_given_the_fake_provider_when_each_schema_is_asked_then_a_validated_answer_comes_back(
    fake_openai: FakeOpenAIServer, openai_chat_model: OpenAIChatModel, schema: str, strategy: Strategy
) -> None:
    answer = ask(openai_chat_model, schema, strategy)

    first = fake_openai.requests[0]
    if strategy is Strategy.JSON_SCHEMA:
        assert first["response_format"]["json_schema"]["strict"] is True
    elif strategy is Strategy.TOOL:
        assert first["tool_choice"]["function"]["name"] == first["tools"][0]["function"]["name"]
    else:
        assert "response_format" not in first and "tools" not in first
        prompt = " ".join(str(message["content"]) for message in first["messages"])
        assert '"properties"' in prompt  # the schema travels in the prompt
    if strategy is not Strategy.PROMPTED:  # the fake answers a json_schema / forced tool with a sample
        assert answer is None or isinstance(answer, OUTPUT_SCHEMAS[schema])
