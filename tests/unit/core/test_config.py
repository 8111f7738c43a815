from __future__ import annotations

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
