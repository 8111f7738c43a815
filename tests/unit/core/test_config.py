from __future__ import annotations

import math

import pytest
from lambda_agents.config import ConfigError, LLMSettings, load_settings
from pydantic import BaseModel, Field


class TableSettings(BaseModel):
    table: str = Field(alias="CHAT_TABLE", min_length=1)
    window: int = Field(default=12, alias="HISTORY_WINDOW", ge=1)


def test_given_all_variables_when_loading_then_values_are_typed() -> None:
    settings = load_settings(TableSettings, {"CHAT_TABLE": "Chat", "HISTORY_WINDOW": "8"})
    assert settings.table == "Chat"
    assert settings.window == 8


def test_given_a_missing_variable_when_loading_then_the_error_names_it() -> None:
    with pytest.raises(ConfigError, match="CHAT_TABLE"):
        load_settings(TableSettings, {})


def test_given_a_malformed_variable_when_loading_then_the_error_names_it() -> None:
    with pytest.raises(ConfigError, match="HISTORY_WINDOW"):
        load_settings(TableSettings, {"CHAT_TABLE": "Chat", "HISTORY_WINDOW": "many"})


def test_an_empty_variable_counts_as_unset() -> None:
    with pytest.raises(ConfigError, match="CHAT_TABLE"):
        load_settings(TableSettings, {"CHAT_TABLE": ""})


def test_llm_settings_reject_an_unknown_mode_by_name() -> None:
    with pytest.raises(ConfigError, match="AI_AGENT_MODE"):
        load_settings(LLMSettings, {"AI_AGENT_MODE": "claude"})


def test_llm_settings_never_show_the_key_in_their_repr() -> None:
    settings = load_settings(LLMSettings, {"AI_AGENT_MODE": "openai", "OPENAI_API_KEY": "sk-canary-123"})
    assert "sk-canary-123" not in repr(settings)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("OPENAI_RATE_LIMIT_SHARE", "80"),
        ("OPENAI_RATE_LIMIT_SHARE", "0"),
        ("OPENAI_TOKENS_PER_MINUTE", "-1"),
        ("OPENAI_REQUESTS_PER_MINUTE", "lots"),
        ("OPENAI_RATE_LIMIT_CONTAINERS", "0"),
    ],
)
def test_rate_limit_settings_outside_their_range_are_refused_by_name(name: str, value: str) -> None:
    with pytest.raises(ConfigError, match=name):
        load_settings(LLMSettings, {name: value})


def test_a_container_paces_to_the_functions_part_of_the_account_split_between_its_containers() -> None:
    from lambda_agents.llm.factory import build_chat_model
    from lambda_agents.llm.model_chain import ModelChain
    from lambda_agents.llm.openai_model import OpenAIChatModel

    environment = {"AI_AGENT_MODE": "openai", "OPENAI_API_KEY": "k", "OPENAI_BASE_URL": "http://127.0.0.1:9"}
    paced = build_chat_model(
        load_settings(
            LLMSettings,
            {
                **environment,
                "OPENAI_TOKENS_PER_MINUTE": "2000000",
                "OPENAI_REQUESTS_PER_MINUTE": "10000",
                "OPENAI_RATE_LIMIT_SHARE": "0.8",
                "OPENAI_RATE_LIMIT_CONTAINERS": "5",
            },
        )
    )
    assert isinstance(paced, ModelChain) and len(paced.links) == 1
    first = paced.links[0].model
    assert isinstance(first, OpenAIChatModel) and first.rate_budget is not None
    assert (first.rate_budget.share.tokens_per_minute, first.rate_budget.share.requests_per_minute) == (
        320_000,
        1_600,
    )
    learning = build_chat_model(load_settings(LLMSettings, {**environment, "OPENAI_RATE_LIMIT_CONTAINERS": "5"}))
    assert isinstance(learning, ModelChain) and isinstance(learning.links[0].model, OpenAIChatModel)
    budget = learning.links[0].model.rate_budget  # limits not set: learned from the provider's headers
    assert budget is not None and budget.share.requests_per_minute == math.inf
    budget.resync({"limit-requests": "10000", "remaining-requests": "10000"})
    assert budget.share.requests_per_minute == pytest.approx(2_000)  # its fifth of the account
