"""The price table: cached input and the Batch API's half price are billed as the provider bills them."""

from __future__ import annotations

import pytest
from lambda_agents.llm.prices import ModelPrice, cost_usd
from lambda_agents.llm.types import Usage


def test_cached_input_is_billed_at_the_cached_price() -> None:
    usage = Usage(prompt_tokens=1_000_000, completion_tokens=0, cached_prompt_tokens=400_000)

    assert cost_usd("gpt-4o", usage) == pytest.approx(0.6 * 2.50 + 0.4 * 1.25)


def test_batch_and_flex_bill_half_of_each_kind_of_token() -> None:
    usage = Usage(prompt_tokens=2_000, completion_tokens=1_000, cached_prompt_tokens=1_024)
    standard = cost_usd("gpt-4o-mini", usage)

    assert standard is not None
    assert cost_usd("gpt-4o-mini", usage, "batch") == pytest.approx(standard / 2)
    assert cost_usd("gpt-4o-mini", usage, "flex") == pytest.approx(standard / 2)


def test_a_usage_that_says_more_cached_than_prompt_is_billed_as_all_cached_not_negative() -> None:
    usage = Usage(prompt_tokens=100, completion_tokens=0, cached_prompt_tokens=500)

    assert cost_usd("gpt-4o", usage) == pytest.approx(100 * 1.25 / 1_000_000)


@pytest.mark.parametrize("row", [(-1.0, 0.0, 1.0), (1.0, 2.0, 1.0)])
def test_a_price_row_that_cannot_be_right_is_refused(row: tuple[float, float, float]) -> None:
    with pytest.raises(ValueError):
        ModelPrice(*row)
