"""The cost benchmark's measurement at a tiny scale: one user's day through the
local runner and the real openai client against the fake that bills as OpenAI does. Every request
the product made is in the ledger and attributed to the user's activity; the ledger's tokens equal
what the product's own answers report (chat answers, the interview's stored total); a repeated
long prompt (the chat's growing history) is billed cached input, on 128-token steps from 1,024;
and the dollars are the price table's, cached input at its own price, the plan at the batch price."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import pytest
from lambda_agents.llm.prices import PRICES

from benchmarks import cost_bench
from devtools.fake_openai import CACHE_INCREMENT, MIN_CACHED_TOKENS

TINY = cost_bench.Mix("tiny", chat_messages=3, interview_turns=3)


@pytest.fixture(scope="module")
def measured() -> Iterator[cost_bench.Measured]:
    with cost_bench.product() as running:
        yield cost_bench.measure(running, TINY, "cost-test-user", busy=False)


def test_every_request_the_product_made_is_billed_and_attributed_to_an_activity(
    measured: cost_bench.Measured,
) -> None:
    records = measured.all_records()
    assert len(records) == measured.requests > 0
    assert all(record.ended == "complete" for record in records)
    calls = {name: len(found) for name, found in measured.records.items()}
    # one plan; the app's reads call no model; one call per chat message; the interview's 2 + 6 + 4
    assert calls == {"plan": 1, "app reads": 0, "chat": 3, "interview": 12}
    assert {record.model for record in records} == {"gpt-4o-2024-08-06"}  # the template's model


def test_the_ledgers_tokens_equal_what_the_products_own_answers_report(measured: cost_bench.Measured) -> None:
    assert set(measured.reported) == {"chat", "interview"}
    for activity, reported in measured.reported.items():
        billed = measured.tokens(activity)
        assert (reported.prompt_tokens, reported.completion_tokens) == (
            billed.prompt_tokens,
            billed.completion_tokens,
        ), activity


def test_a_growing_conversation_is_billed_cached_input_on_the_documented_steps(
    measured: cost_bench.Measured,
) -> None:
    chat = sorted(measured.records["chat"], key=lambda record: record.request)
    assert chat[0].cached_tokens == 0  # nothing before it
    # A message whose previous prompt was long enough to be cached repeats that prompt as its prefix.
    repeating = [later for earlier, later in itertools.pairwise(chat) if earlier.prompt_tokens >= MIN_CACHED_TOKENS]
    assert repeating, "the conversation never grew past the cache's minimum"
    for record in repeating:
        assert MIN_CACHED_TOKENS <= record.cached_tokens < record.prompt_tokens
        assert (record.cached_tokens - MIN_CACHED_TOKENS) % CACHE_INCREMENT == 0


def test_the_dollars_are_the_price_tables_cached_input_apart_and_the_plan_at_the_batch_price(
    measured: cost_bench.Measured,
) -> None:
    price = PRICES["gpt-4o"]
    by_hand = {"plan": 0.0, "rest": 0.0}
    for activity, records in measured.records.items():
        for record in records:
            dollars = (
                (record.prompt_tokens - record.cached_tokens) * price.input
                + record.cached_tokens * price.cached_input
                + record.completion_tokens * price.output
            ) / 1e6
            by_hand["plan" if activity == "plan" else "rest"] += dollars

    assert measured.tokens().cached_prompt_tokens > 0
    assert measured.dollars("gpt-4o", batch_plan=False) == pytest.approx(by_hand["plan"] + by_hand["rest"])
    assert measured.dollars("gpt-4o", batch_plan=True) == pytest.approx(by_hand["plan"] / 2 + by_hand["rest"])
