"""What a model's tokens cost: the one price table the stored answers, the logs, the dashboard's cost
widget, docs/cost.md and ``benchmarks/cost_bench.py`` all read.

US dollars per million tokens at list prices: input, cached input (the part of the prompt the
provider served from its prompt cache, ``usage.prompt_tokens_details.cached_tokens``) and output.
The Batch API bills half of each; the ``flex`` service tier bills at Batch prices. A dated snapshot
("gpt-4o-2024-11-20") takes its family's price when it has no entry of its own; a model that is in
neither gets no cost (``None``) rather than a guess. Edit the table when prices change, or set
``MODEL_PRICES`` (``config.model_price_rows``, merged by ``price_table``) to replace rows without a
release.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from .types import Usage

Billing = Literal["standard", "batch", "flex"]
BATCH_DISCOUNT = 0.5
_SNAPSHOT = re.compile(r"-\d{4}-\d{2}-\d{2}$")


@dataclass(frozen=True)
class ModelPrice:
    """Dollars per million tokens."""

    input: float
    cached_input: float
    output: float

    def __post_init__(self) -> None:
        if min(self.input, self.cached_input, self.output) < 0:
            raise ValueError("prices cannot be negative")
        if self.cached_input > self.input:
            raise ValueError("cached input cannot cost more than input")


PRICES: Mapping[str, ModelPrice] = {
    "gpt-4o": ModelPrice(2.50, 1.25, 10.00),
    "gpt-4o-2024-05-13": ModelPrice(5.00, 5.00, 15.00),
    "gpt-4o-mini": ModelPrice(0.15, 0.075, 0.60),
    "gpt-4.1": ModelPrice(2.00, 0.50, 8.00),
    "gpt-4.1-mini": ModelPrice(0.40, 0.10, 1.60),
    "gpt-4.1-nano": ModelPrice(0.10, 0.025, 0.40),
    "o4-mini": ModelPrice(1.10, 0.275, 4.40),
    "o3": ModelPrice(2.00, 0.50, 8.00),
}


def price_table(rows: Mapping[str, ModelPrice]) -> Mapping[str, ModelPrice]:
    """``PRICES`` with ``rows`` replacing or adding models (the ``MODEL_PRICES`` setting)."""
    return {**PRICES, **rows} if rows else PRICES


def billing_of(service_tier: str | None) -> Billing:
    """The price a synchronous answer is billed at, from the tier the provider says processed it
    (its ``service_tier``): ``flex`` at Batch prices; anything else (``default``, ``auto``, none
    said) at list prices, the dearer reading when the provider did not say."""
    return "flex" if service_tier == "flex" else "standard"


def price_of(model: str, prices: Mapping[str, ModelPrice] = PRICES) -> ModelPrice | None:
    return prices.get(model) or prices.get(_SNAPSHOT.sub("", model))


def cost_usd(
    model: str, usage: Usage, billing: Billing = "standard", prices: Mapping[str, ModelPrice] = PRICES
) -> float | None:
    """The dollars ``usage`` cost on ``model``; ``None`` for a model the table does not know."""
    price = price_of(model, prices)
    if price is None:
        return None
    cached = min(usage.cached_prompt_tokens, usage.prompt_tokens)
    dollars = (
        (usage.prompt_tokens - cached) * price.input
        + cached * price.cached_input
        + usage.completion_tokens * price.output
    ) / 1_000_000
    if billing != "standard":
        dollars *= BATCH_DISCOUNT
    return round(dollars, 8)
