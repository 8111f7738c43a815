"""Spec: the model's key is read when a call needs it; a key that cannot be read is a provider
failure of kind auth (never the key, never a start-up crash); after a refusal it is read once more
past the cache, and only a different key is worth a second try."""

from __future__ import annotations

import pytest
from lambda_agents.config import LLMSettings
from lambda_agents.llm.api_key import ApiKeySource
from lambda_agents.llm.errors import ProviderAuthError
from lambda_agents.llm.factory import build_chat_model


class Store:
    def __init__(self, *values: str | Exception) -> None:
        self.values = list(values)
        self.reads: list[tuple[str, bool]] = []

    def __call__(self, name: str, force: bool) -> str:
        self.reads.append((name, force))
        value = self.values.pop(0) if len(self.values) > 1 else self.values[0]
        if isinstance(value, Exception):
            raise value
        return value


def test_a_key_in_the_environment_is_used_as_is_and_no_parameter_is_read() -> None:
    store = Store("never")
    assert ApiKeySource(key="sk-local", parameter="/p", fetch=store).get() == "sk-local"
    assert store.reads == []


def test_no_key_configured_is_an_auth_failure_that_names_both_settings() -> None:
    with pytest.raises(ProviderAuthError, match="OPENAI_API_KEY or OPENAI_API_KEY_PARAMETER"):
        ApiKeySource().get()


@pytest.mark.parametrize("failure", [KeyError("ParameterNotFound"), PermissionError("kms:Decrypt"), ""])
def test_a_parameter_that_cannot_be_read_is_an_auth_failure_naming_the_parameter(failure: Exception | str) -> None:
    source = ApiKeySource(parameter="/lambda-agents/openai-api-key", fetch=Store(failure))
    with pytest.raises(ProviderAuthError, match="/lambda-agents/openai-api-key") as failed:
        source.get()
    assert failed.value.kind == "auth" and not failed.value.retryable


def test_after_a_refusal_the_key_is_read_past_the_cache_and_only_a_new_one_is_offered() -> None:
    store = Store("sk-old", "sk-new")
    source = ApiKeySource(parameter="/p", fetch=store)
    assert source.get() == "sk-old"
    assert source.renewed("sk-old") == "sk-new"
    assert store.reads == [("/p", False), ("/p", True)]
    assert ApiKeySource(parameter="/p", fetch=Store("sk-same")).renewed("sk-same") is None
    assert ApiKeySource(parameter="/p", fetch=Store(KeyError("gone"))).renewed("sk-old") is None
    assert ApiKeySource(key="sk-env").renewed("sk-env") is None  # nothing to read again


def test_building_the_model_reads_no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_: object, **__: object) -> str:
        raise AssertionError("the key was read when the model was built")

    monkeypatch.setattr("lambda_agents.llm.api_key.ParameterStore.__call__", refuse)
    settings = LLMSettings.model_validate({"AI_AGENT_MODE": "openai", "OPENAI_API_KEY_PARAMETER": "/missing"})
    assert build_chat_model(settings).model_name
