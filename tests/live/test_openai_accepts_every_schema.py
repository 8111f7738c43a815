"""With OPENAI_API_KEY: the provider accepts every output schema in every strategy (a schema OpenAI
accepts is required of the Commander's, docs/nudges.md, and of every strict schema,
docs/engine.md#structured-output), one validated answer each. OPENAI_MODEL and OPENAI_BASE_URL
choose the model and an OpenAI-compatible endpoint, as in the functions."""

from __future__ import annotations

import os

import pytest
from lambda_agents.llm import Strategy
from lambda_agents.llm.openai_model import OpenAIChatModel, OpenAIModelSettings
from lambda_agents.llm.policy import StreamTimeouts

from tests.live.conftest import require_live
from tests.live.schemas import OUTPUT_SCHEMAS, ask

DEFAULT_MODEL = "gpt-4o-2024-08-06"  # the template's default


@pytest.mark.parametrize("strategy", list(Strategy), ids=str)
@pytest.mark.parametrize("schema", sorted(OUTPUT_SCHEMAS))
def test_the_provider_accepts_the_schema_and_answers_it(schema: str, strategy: Strategy) -> None:
    key = require_live("OPENAI_API_KEY")["OPENAI_API_KEY"]
    model = OpenAIChatModel(
        OpenAIModelSettings(
            api_key=key,
            model=os.environ.get("OPENAI_MODEL") or DEFAULT_MODEL,
            base_url=os.environ.get("OPENAI_BASE_URL") or None,
            timeouts=StreamTimeouts(first_token_s=60.0, stall_s=30.0),
        )
    )

    answer = ask(model, schema, strategy)  # a rejected schema raises ProviderFailed here

    assert answer is None or isinstance(answer, OUTPUT_SCHEMAS[schema])
