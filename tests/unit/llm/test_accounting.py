"""Every model answer accounted for (``llm.accounting``): one record per call from
the attempts the engine returns, every model call billed at its own model's price, cut and failed
ones included, a prompt version that follows the instructions and the schema, and one log line."""

from __future__ import annotations

import json

import pytest
from lambda_agents.config import ConfigError, model_price_rows
from lambda_agents.llm import ChatRequest, ChatResponse, RetryPolicy, Usage, complete_with_retries
from lambda_agents.llm.accounting import ModelAccount, account_for, accounted, configured_prices, prompt_version
from lambda_agents.llm.errors import ProviderFailed, ProviderTimeout, RateLimited
from lambda_agents.llm.model_chain import ChainLink, ModelChain
from lambda_agents.llm.policy import TRANSIENT_KINDS
from lambda_agents.llm.prices import PRICES, ModelPrice
from lambda_agents.llm.speeds import ModelSpeeds

from tests.support.logs import captured_logs

from .scripted_model import named

ONE_ATTEMPT = RetryPolicy(max_attempts=1, retry_on=TRANSIENT_KINDS, immediate=frozenset())
TWO_ATTEMPTS = RetryPolicy(max_attempts=2, retry_on=TRANSIENT_KINDS, immediate=frozenset(), backoff_base_s=0)
CUT_USAGE = Usage(1_000, 500, estimated=True)  # a stream cut after ~500 tokens, counted as streamed


def stalled() -> ProviderTimeout:
    """A streamed answer cut after ~500 tokens: the provider sent no usage, the adapter counted it."""
    return ProviderTimeout("the stream stalled for 15.0 s", ChatResponse("途中まで", "cut", usage=CUT_USAGE))


def ask() -> ChatRequest:
    return ChatRequest(messages=[{"role": "user", "content": "?"}], max_tokens=1200, purpose="chat.reply")


def test_given_cut_streams_on_the_first_link_and_429_on_the_second_then_the_failure_counts_the_cut_tokens() -> None:
    chain = ModelChain(
        [
            ChainLink(named("gpt-4o", stalled(), stalled())),
            ChainLink(named("gpt-4o-mini", RateLimited("429"), RateLimited("429"))),
        ]
    )
    with pytest.raises(ProviderFailed) as failed:
        complete_with_retries(chain, ask(), retry_policy=TWO_ATTEMPTS, sleep=lambda _s: None, speeds=ModelSpeeds())

    error = failed.value
    assert error.usage.completion_tokens == 2 * CUT_USAGE.completion_tokens  # was 0: the last link's 429 had none
    assert error.usage.prompt_tokens == 2 * CUT_USAGE.prompt_tokens
    account = account_for(error.attempts, model="gpt-4o", prompt_version="v")
    price = PRICES["gpt-4o"]
    expected = 2 * (1_000 * price.input + 500 * price.output) / 1_000_000
    assert account.cost_usd == pytest.approx(expected)
    assert account.attempts == 2


def test_given_a_cut_link_before_the_answer_then_each_link_is_billed_at_its_own_price_and_names_its_link() -> None:
    answered = ChatResponse("答え", "stop", usage=Usage(1_000, 200, cached_prompt_tokens=400))
    chain = ModelChain([ChainLink(named("gpt-4o", stalled())), ChainLink(named("gpt-4o-mini", answered))])

    result = complete_with_retries(chain, ask(), retry_policy=ONE_ATTEMPT, speeds=ModelSpeeds())

    assert result.usage == Usage(2_000, 700, estimated=True, cached_prompt_tokens=400)
    account = account_for(result.attempts, model="gpt-4o", prompt_version="v")
    big, mini = PRICES["gpt-4o"], PRICES["gpt-4o-mini"]
    cut_cost = (1_000 * big.input + 500 * big.output) / 1_000_000
    answer_cost = (600 * mini.input + 400 * mini.cached_input + 200 * mini.output) / 1_000_000
    assert account.model == "gpt-4o-mini"
    assert account.cost_usd == pytest.approx(cut_cost + answer_cost)
    assert (account.usage.prompt_tokens, account.usage.cached_prompt_tokens) == (2_000, 400)


def test_the_batch_api_and_flex_bill_half_and_a_model_without_a_price_has_no_cost() -> None:
    result = complete_with_retries(
        named("gpt-4o", ChatResponse("a", "stop", usage=Usage(1_000, 100))), ask(), speeds=ModelSpeeds()
    )
    standard = account_for(result.attempts, model="gpt-4o", prompt_version="v")
    batch = account_for(result.attempts, model="gpt-4o", prompt_version="v", billing="batch")
    assert standard.cost_usd is not None and batch.cost_usd == pytest.approx(standard.cost_usd / 2)
    unknown = complete_with_retries(
        named("house-model", ChatResponse("a", "stop", usage=Usage(10, 1))), ask(), speeds=ModelSpeeds()
    )
    assert account_for(unknown.attempts, model="house-model", prompt_version="v").cost_usd is None


def test_the_prompt_version_is_stable_and_follows_the_instructions_and_the_schema() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "string"}}}
    reordered = {"properties": {"a": {"type": "string"}}, "type": "object"}
    version = prompt_version("Answer in Japanese.", schema)

    assert version == prompt_version("Answer in Japanese.", reordered)  # key order is not a change
    assert len(version) == 12 and all(ch in "0123456789abcdef" for ch in version)  # a short hex id
    assert version == prompt_version("Answer in Japanese.", schema)  # the same in every run: no salt, no time
    assert prompt_version("Answer in English.", schema) != version
    assert prompt_version("Answer in Japanese.", {**schema, "required": ["a"]}) != version


def test_the_record_goes_out_as_camel_case_and_comes_back_from_storage_equal() -> None:
    account = ModelAccount("gpt-4o", "abc123", Usage(100, 20, cached_prompt_tokens=40), "batch", 0.0012, 2)
    stored = account.as_dict()
    assert set(stored) == {
        "model",
        "promptVersion",
        "promptTokens",
        "cachedTokens",
        "completionTokens",
        "billing",
        "costUsd",
        "attempts",
    }
    assert ModelAccount.from_dict(stored) == account
    with pytest.raises(ValueError, match="billing"):
        ModelAccount.from_dict({**stored, "billing": "free"})


def test_a_turn_of_several_calls_sums_tokens_cost_and_attempts_and_an_unknown_cost_stays_unknown() -> None:
    first = ModelAccount("gpt-4o", "v1", Usage(100, 10), cost_usd=0.001, attempts=1)
    second = ModelAccount("gpt-4o-mini", "v1", Usage(50, 5), cost_usd=0.0001, attempts=2)
    total = first + second
    assert (total.usage, total.attempts, total.model) == (Usage(150, 15), 3, "gpt-4o-mini")
    assert total.cost_usd == pytest.approx(0.0011)
    assert (first + ModelAccount("house", "v1", Usage(1, 1), cost_usd=None, attempts=1)).cost_usd is None


def test_one_log_line_per_call_with_the_user_id_and_never_the_text() -> None:
    secret = "私の給与は800万円です"
    request = ChatRequest(messages=[{"role": "user", "content": secret}], max_tokens=100, purpose="chat.reply")
    result = complete_with_retries(
        named("gpt-4o", ChatResponse("回答: " + secret, "stop", usage=Usage(30, 10))), request, speeds=ModelSpeeds()
    )
    with captured_logs() as buffer:
        accounted(
            result.attempts,
            model="gpt-4o",
            prompt_version="v1",
            purpose="chat.reply",
            user_id="u-42",
            outcome="answered",
        )
    lines = [json.loads(line) for line in buffer.getvalue().splitlines() if line.startswith("{")]
    (line,) = [line for line in lines if line["message"] == "model answer accounted"]
    assert (line["user_id"], line["purpose"], line["model"]) == ("u-42", "chat.reply", "gpt-4o")
    assert line["promptTokens"] == 30
    assert line["costUsd"] > 0
    assert secret not in buffer.getvalue()


def test_model_prices_replaces_rows_of_the_table_without_a_release(monkeypatch: pytest.MonkeyPatch) -> None:
    rows = model_price_rows({"MODEL_PRICES": '{"gpt-4o": {"input": 2.0, "cachedInput": 1.0, "output": 8.0}}'})
    assert rows["gpt-4o"].input == 2.0
    monkeypatch.setenv("MODEL_PRICES", '{"gpt-4o": {"input": 2.0, "cachedInput": 1.0, "output": 8.0}}')
    configured_prices.cache_clear()
    try:
        table = configured_prices()
        assert table["gpt-4o"] == ModelPrice(2.0, 1.0, 8.0)
        assert table["gpt-4o-mini"] == PRICES["gpt-4o-mini"]  # the rows it does not name stay
    finally:
        monkeypatch.delenv("MODEL_PRICES")
        configured_prices.cache_clear()
    assert configured_prices() is PRICES  # unset: the table as released


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("{not json", "not JSON"),
        ('["gpt-4o"]', "JSON object"),
        ('{"gpt-4o": {"input": 2.0, "output": 8.0}}', "cachedInput"),
        ('{"gpt-4o": {"input": -1, "cachedInput": 0, "output": 8.0}}', "input"),
        ('{"gpt-4o": {"input": 1, "cachedInput": 2, "output": 8.0}}', "cannot cost more"),
        ('{"gpt-4o": {"input": 1, "cachedInput": 1, "output": 8.0, "batch": 1}}', "batch"),
    ],
)
def test_a_malformed_model_prices_setting_is_refused_naming_the_variable_and_the_row(value: str, says: str) -> None:
    with pytest.raises(ConfigError, match="MODEL_PRICES") as refused:
        model_price_rows({"MODEL_PRICES": value})
    assert says in str(refused.value)
