"""Cost of a model call: optional, reported when the model is known
(docs/chat-and-templates.md#decisions-on-open-points).

US dollars per million tokens, list prices; a model that is not in the table gets no cost
(``costUsd`` absent) rather than a guess. A dated snapshot ("gpt-4o-2024-11-20") falls back to its
family's price when it has no entry of its own. Edit the table when prices change.
"""

from __future__ import annotations

import re

from ..llm.types import Usage

PRICES_PER_MILLION: dict[str, tuple[float, float]] = {
    "gpt-4o": (2.50, 10.00),
    "gpt-4o-2024-05-13": (5.00, 15.00),
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4.1": (2.00, 8.00),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1-nano": (0.10, 0.40),
}
_SNAPSHOT = re.compile(r"-\d{4}-\d{2}-\d{2}$")


def price_of(model: str) -> tuple[float, float] | None:
    return PRICES_PER_MILLION.get(model) or PRICES_PER_MILLION.get(_SNAPSHOT.sub("", model))


def cost_usd(model: str, usage: Usage) -> float | None:
    price = price_of(model)
    if price is None:
        return None
    prompt, completion = price
    return round((usage.prompt_tokens * prompt + usage.completion_tokens * completion) / 1_000_000, 8)
