"""Every model answer accounted for (docs/engine.md#what-each-answer-cost).

One record per logical model call (``ModelAccount``), built in one place from the attempt log the
engine already returns with every result and every error (``Attempt.calls``: each model call an
attempt was billed for, a chain's failed links and cut streams included), so no feature counts
tokens or prices on its own:

- ``model``: the model that answered, the chain's link (the last one tried when none answered);
- ``prompt_version``: a short stable hash of what built the request, the instructions and the
  output schema or tools (``prompt_version``), never the user's text: two answers with the same
  version were asked the same way, and a prompt change shows as a new version;
- ``usage``: prompt, cached prompt and completion tokens over every attempt, failed and cut ones
  included (a cut stream without the provider's usage counts what it streamed, ``Usage.estimated``);
- ``billing``: ``standard``, ``batch`` (the Batch API) or ``flex`` (Batch prices on a synchronous call);
- ``cost_usd``: each call at its own model's price from the price table (``prices``, with the
  ``MODEL_PRICES`` setting's rows), ``None`` when a model that billed tokens has no price;
- ``attempts``: how many attempts the call took.

``accounted`` builds the record and writes its log line, ``"model answer accounted"``: the ids a
reader needs (the user's id, the purpose), never text. The stored answers (chat answers, interview
turns, judge results, nudge plans) carry ``as_dict()``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any, Literal, get_args

from pydantic import Field

from ..config import model_price_rows
from ..observability import logger
from ..response_model import ResponseModel
from .prices import Billing, ModelPrice, cost_usd, price_table
from .types import Attempt, ChatResponse, ModelCall, Usage

PROMPT_VERSION_CHARS = 12
ACCOUNTED = "model answer accounted"


def prompt_version(*parts: object) -> str:
    """A short stable hash of what builds a request: its instructions (the template, not the text
    filled into it) and its output schema or tool definitions. JSON with sorted keys, so a dict's
    order does not change it; anything else is its ``str``."""
    canonical = json.dumps(parts, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:PROMPT_VERSION_CHARS]


@cache
def configured_prices() -> Mapping[str, ModelPrice]:
    """The price table with this function's ``MODEL_PRICES`` rows, read once per container
    (``ConfigError`` when the setting is malformed: ``factory.build_chat_model`` reads it at cold start)."""
    rows = model_price_rows()
    return price_table({name: ModelPrice(row.input, row.cachedInput, row.output) for name, row in rows.items()})


def batch_cost_usd(response: ChatResponse) -> float:
    """One batch answer's cost at the price table's Batch prices (a model without a price: nothing)."""
    return cost_usd(response.model, response.usage, "batch", configured_prices()) or 0.0


@dataclass(frozen=True)
class ModelAccount:
    """What one logical model call (or a turn's calls, summed) was billed for (the module docstring)."""

    model: str
    prompt_version: str
    usage: Usage
    billing: Billing = "standard"
    cost_usd: float | None = None
    attempts: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "promptVersion": self.prompt_version,
            "promptTokens": self.usage.prompt_tokens,
            "cachedTokens": self.usage.cached_prompt_tokens,
            "completionTokens": self.usage.completion_tokens,
            "billing": self.billing,
            "costUsd": self.cost_usd,
            "attempts": self.attempts,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ModelAccount:
        """A stored record read back (DynamoDB gives numbers as Decimal); ``ValueError`` when it is not one."""
        billing = str(data.get("billing") or "standard")
        if billing not in get_args(Billing):
            raise ValueError(f"unknown billing {billing!r}")
        cost = data.get("costUsd")
        return cls(
            model=str(data.get("model") or ""),
            prompt_version=str(data.get("promptVersion") or ""),
            usage=Usage(
                prompt_tokens=int(data.get("promptTokens") or 0),
                completion_tokens=int(data.get("completionTokens") or 0),
                cached_prompt_tokens=int(data.get("cachedTokens") or 0),
            ),
            billing=billing,  # type: ignore[arg-type]  # checked against Billing above
            cost_usd=None if cost is None else float(cost),
            attempts=int(data.get("attempts") or 0),
        )

    def __add__(self, other: ModelAccount) -> ModelAccount:
        """Two calls as one (an interview turn's, a judge's stages): tokens, cost and attempts
        summed; the later call's model and prompt version; the cost unknown when either is."""
        both = None if self.cost_usd is None or other.cost_usd is None else round(self.cost_usd + other.cost_usd, 8)
        return ModelAccount(
            model=other.model or self.model,
            prompt_version=other.prompt_version or self.prompt_version,
            usage=self.usage + other.usage,
            billing=other.billing if other.attempts else self.billing,
            cost_usd=both,
            attempts=self.attempts + other.attempts,
        )


class ModelAccountView(ResponseModel):
    """``ModelAccount.as_dict()`` in the API's answers (the OpenAPI contract of every route that shows one)."""

    model: str = Field(description="the model that answered: the model chain's link (the last one tried if none did)")
    prompt_version: str = Field(description="a short stable hash of the instructions and schema that built the request")
    prompt_tokens: int = Field(ge=0, description="over every attempt, failed and cut ones included")
    cached_tokens: int = Field(ge=0, description="the part of promptTokens the provider's prompt cache served")
    completion_tokens: int = Field(ge=0, description="over every attempt, failed and cut ones included")
    billing: Literal["standard", "batch", "flex"] = Field(description="batch: the Batch API; flex: Batch prices")
    cost_usd: float | None = Field(description="at the price table's prices; null when a model has no price")
    attempts: int = Field(ge=0)


def cost_of(account: ModelAccount | None) -> float:
    """The dollars a metric counts for ``account``: none for no call, and none for a model the
    price table does not know (its log line and stored record say ``costUsd: null``)."""
    return 0.0 if account is None or account.cost_usd is None else account.cost_usd


def nothing_spent(model: str, version: str) -> ModelAccount:
    """The account of a call that made no attempt (refused before it, or answered without a model)."""
    return ModelAccount(model, version, Usage(), cost_usd=0.0)


def account_for(
    attempts: Sequence[Attempt],
    *,
    model: str,
    prompt_version: str,
    billing: Billing = "standard",
    prices: Mapping[str, ModelPrice] | None = None,
) -> ModelAccount:
    """The record of one logical call from its attempt log. ``model``: the model asked (a chain's
    name for it), named when no attempt reached a model."""
    table = configured_prices() if prices is None else prices
    calls = list(_calls(attempts, model))
    usage = sum((call.usage for call in calls), Usage())
    cost: float | None = 0.0
    for call in calls:
        if not call.usage.total_tokens:
            continue
        priced = cost_usd(call.model, call.usage, billing, table)
        cost = None if priced is None or cost is None else cost + priced
    answered = next((call.model for call in reversed(calls) if call.model), model)
    return ModelAccount(
        model=answered,
        prompt_version=prompt_version,
        usage=usage,
        billing=billing,
        cost_usd=None if cost is None else round(cost, 8),
        attempts=len(attempts),
    )


def accounted(
    attempts: Sequence[Attempt],
    *,
    model: str,
    prompt_version: str,
    purpose: str,
    user_id: str | None,
    outcome: str,
    billing: Billing = "standard",
    prices: Mapping[str, ModelPrice] | None = None,
) -> ModelAccount:
    """``account_for`` and its log line (``log_account``): what every feature calls once per
    logical model call, whether it answered or failed."""
    account = account_for(attempts, model=model, prompt_version=prompt_version, billing=billing, prices=prices)
    log_account(account, purpose=purpose, user_id=user_id, outcome=outcome)
    return account


def log_account(account: ModelAccount, *, purpose: str, user_id: str | None, outcome: str) -> None:
    """One INFO line per logical model call: the record, the purpose, the outcome and the user's
    id; never the prompt or the answer."""
    logger.info(
        ACCOUNTED,
        extra={"purpose": purpose, "user_id": user_id, "outcome": outcome, **account.as_dict()},
    )


def _calls(attempts: Iterable[Attempt], model: str) -> Iterable[ModelCall]:
    for attempt in attempts:
        # An attempt logged without its calls (a batch job's line): one call to the model asked.
        yield from attempt.calls or (ModelCall(model, attempt.usage),)
