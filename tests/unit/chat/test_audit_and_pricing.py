"""The audit hash (docs/chat-and-templates.md#the-audit-hash), the cost of an answer and the error codes
(docs/chat-and-templates.md#the-model-call-policy)."""

from __future__ import annotations

import hashlib
import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lambda_agents.chat.answers import error_code_for
from lambda_agents.chat.audit import AuditHasher, load_audit_salt, normalize_for_audit
from lambda_agents.config import ConfigError
from lambda_agents.llm.prices import ModelPrice, cost_usd, price_of
from lambda_agents.llm.types import Usage


def test_normalisation_joins_role_and_content_collapses_whitespace_and_keeps_1000_chars() -> None:
    assert normalize_for_audit([("user", "a  b\n\tc"), ("assistant", "  d ")]) == "user:a b c assistant: d "
    assert len(normalize_for_audit([("user", "x" * 5000)])) == 1000


def test_hash_is_sha256_of_salt_plus_normalised_text() -> None:
    messages = [("user", "こんにちは  世界"), ("assistant", "はい")]
    expected = hashlib.sha256(("salt" + "user:こんにちは 世界 assistant:はい ").encode()).hexdigest()
    assert AuditHasher("salt").hash_messages(messages) == expected


def test_whitespace_only_differences_hash_alike_and_salts_differ() -> None:
    hasher = AuditHasher("s1")
    assert hasher.hash_messages([("user", "a b")]) == hasher.hash_messages([("user", "a \n  b")])
    assert hasher.hash_messages([("user", "a b")]) != AuditHasher("s2").hash_messages([("user", "a b")])


@pytest.mark.parametrize("salt", [None, ""])
def test_without_a_salt_hashing_is_disabled(salt: str | None) -> None:
    hasher = AuditHasher(salt)
    assert not hasher.enabled and hasher.hash_messages([("user", "x")]) is None


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["user", "assistant"]), st.text(max_size=600)), max_size=5))
def test_normalised_text_never_holds_whitespace_runs_or_exceeds_1000_chars(messages: list[tuple[str, str]]) -> None:
    text = normalize_for_audit(messages)
    assert len(text) <= 1000
    assert not any(a.isspace() and b.isspace() for a, b in itertools.pairwise(text))
    assert AuditHasher("s").hash_messages(messages) is not None


def test_the_salt_comes_from_the_local_variable_first_and_none_means_disabled() -> None:
    assert load_audit_salt("local", "/never/read") == "local"
    assert load_audit_salt(None, None) is None


def test_a_named_salt_parameter_that_cannot_be_read_fails_loudly(monkeypatch: pytest.MonkeyPatch) -> None:
    from aws_lambda_powertools.utilities import parameters

    def missing(name: str, **_: object) -> str:
        raise parameters.GetParameterError(f"{name} not found")

    monkeypatch.setattr(parameters, "get_parameter", missing)
    with pytest.raises(ConfigError, match="AI_AUDIT_SALT_PARAMETER /lambda-agents/salt"):
        load_audit_salt(None, "lambda-agents/salt")


def test_cost_comes_from_the_price_table_and_snapshots_fall_back_to_their_family() -> None:
    assert cost_usd("gpt-4o-mini", Usage(1_000_000, 1_000_000)) == pytest.approx(0.75)
    assert price_of("gpt-4o-2024-11-20") == price_of("gpt-4o")
    assert price_of("gpt-4o-2024-05-13") == ModelPrice(5.00, 5.00, 15.00)
    assert cost_usd("llama-3-local", Usage(10, 10)) is None


@pytest.mark.parametrize(
    ("kind", "code"),
    [
        ("rate_limit", "RateLimited"),
        ("timeout", "Timeout"),
        ("deadline", "Timeout"),
        ("server_error", "OpenAIUnavailable"),
        ("connection", "OpenAIUnavailable"),
        ("rejected", "OpenAIUnavailable"),
        ("KeyError", "OpenAIUnavailable"),
    ],
)
def test_engine_failures_map_to_the_spec_error_codes(kind: str, code: str) -> None:
    assert error_code_for(kind).value == code
