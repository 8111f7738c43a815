"""Builds the ChatModel a function uses, from LLMSettings (mock / openai: docs/engine.md#offline-model).

In AWS the template sets AI_AGENT_MODE=openai and OPENAI_API_KEY_PARAMETER (an SSM
SecureString name); the key is read when the first model call needs it (``api_key``), through
Powertools Parameters with a 5-minute cache, so a key that cannot be read fails model calls
(``ProviderAuthError``), not the function: its routes without a model call keep working and
its model calls give their degraded answers. The container paces its requests to its share of
the account's rate limits (OPENAI_REQUESTS_PER_MINUTE / OPENAI_TOKENS_PER_MINUTE, or, where those
are 0, the limits the provider's x-ratelimit headers state): OPENAI_RATE_LIMIT_SHARE of the
account, split between OPENAI_RATE_LIMIT_CONTAINERS.

The model is a chain (``model_chain``): the first model, then OPENAI_FALLBACK_MODELS in order, each
with its own endpoint, key, output mode, pace and limits, each behind a breaker
(OPENAI_BREAKER_FAILURES in a row rest it OPENAI_BREAKER_COOLDOWN_SECONDS). The Batch API path
goes through the same chain (``build_batch_model``), less the models without a batch endpoint.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..config import ConfigError, LLMSettings
from .accounting import configured_prices
from .api_key import ApiKeySource
from .batch_chain import BatchChain, BatchLink
from .engine import Strategy
from .model_chain import Breaker, ChainLink, ModelChain
from .offline_model import OfflineModel, TextResponder
from .policy import StreamTimeouts
from .rate_budget import RateBudget
from .speeds import SpeedEstimate
from .types import ChatModel

if TYPE_CHECKING:
    from .openai_model import TokenLimitField


@dataclass(frozen=True)
class ChainModel:
    """One model of the chain as the settings name it: the first model's, or a fallback's own
    values where it has them and the first model's where not."""

    model: str
    base_url: str | None
    keys: ApiKeySource
    output: str
    pace: SpeedEstimate
    limits: tuple[int, int]  # requests and tokens per minute (0: what the provider's headers state)
    token_limit_field: TokenLimitField
    batch: bool = True  # its endpoint has the Batch API


def chain_models(settings: LLMSettings) -> list[ChainModel]:
    """The first model, then OPENAI_FALLBACK_MODELS in order."""
    first = ChainModel(
        settings.model,
        settings.base_url,
        ApiKeySource(key=settings.api_key, parameter=settings.api_key_parameter),
        settings.output_mode,
        SpeedEstimate(first_token_s=settings.first_token_s, tokens_per_s=settings.tokens_per_s),
        (settings.requests_per_minute, settings.tokens_per_minute),
        settings.token_limit_field,
    )
    others = [
        ChainModel(
            other.model,
            other.baseUrl or settings.base_url,
            fallback_key(settings, other.apiKey, other.apiKeyParameter),
            other.output,
            SpeedEstimate(
                first_token_s=settings.first_token_s if other.firstTokenSeconds is None else other.firstTokenSeconds,
                tokens_per_s=other.tokensPerSecond or settings.tokens_per_s,
            ),
            (other.requestsPerMinute, other.tokensPerMinute),
            other.tokenLimitField or settings.token_limit_field,
            other.batch,
        )
        for other in settings.fallback_models
    ]
    return [first, *others]


def build_chat_model(settings: LLMSettings, responders: dict[str, TextResponder] | None = None) -> ChatModel:
    configured_prices()  # a malformed MODEL_PRICES fails the cold start, not the first answer's record
    if settings.mode == "mock":
        return OfflineModel(responders)
    from .openai_model import OpenAIChatModel, OpenAIModelSettings

    timeouts = StreamTimeouts(
        connect_s=settings.connect_timeout_s,
        first_token_s=settings.first_token_timeout_s,
        stall_s=settings.stall_timeout_s,
    )

    def link(model: ChainModel) -> ChainLink:
        requests, tokens = model.limits
        adapter = OpenAIChatModel(
            OpenAIModelSettings(
                model.keys, model.model, model.base_url, timeouts, settings.stream, model.token_limit_field, model.pace
            ),
            rate_budget=RateBudget.for_account(
                requests, tokens, share=settings.rate_limit_share, containers=settings.rate_limit_containers
            ),
        )
        return ChainLink(adapter, Strategy(model.output), model_breaker(settings, model.model))

    return ModelChain([link(model) for model in chain_models(settings)])


def fallback_key(settings: LLMSettings, key: str | None, parameter: str | None) -> ApiKeySource:
    """A later model's key: its own, else the chain's fallback key parameter, else the first model's."""
    if key or parameter:
        return ApiKeySource(key=key, parameter=parameter)
    if settings.fallback_api_key_parameter:
        return ApiKeySource(parameter=settings.fallback_api_key_parameter)
    return ApiKeySource(key=settings.api_key, parameter=settings.api_key_parameter)


def model_breaker(settings: LLMSettings, model: str) -> Breaker | None:
    """``model``'s breaker as the settings ask (OPENAI_BREAKER_FAILURES 0: none), for either chain."""
    if not settings.breaker_failures:
        return None
    return Breaker(
        model, failures_to_open=settings.breaker_failures, cooldown_s=settings.breaker_cooldown_s, notify=breaker_event
    )


def breaker_event(model: str, what: str, details: dict[str, object]) -> None:
    """A breaker's opening or closing: a log line and a metric with the model as dimension."""
    from aws_lambda_powertools.metrics import MetricUnit, single_metric

    from ..observability import logger

    log = logger.warning if what == "opened" else logger.info
    log(f"model breaker {what}", extra={"model": model, **details})
    name = "ModelBreakerOpened" if what == "opened" else "ModelBreakerClosed"
    with single_metric(name=name, unit=MetricUnit.Count, value=1) as metric:
        metric.add_dimension(name="model", value=model)


def build_batch_model(settings: LLMSettings) -> BatchChain:
    """The Batch API through the model chain (``batch_chain``): the first model, then each of
    OPENAI_FALLBACK_MODELS whose endpoint has a Batch API (``batch``, true unless said), with the
    same endpoint, key and token field as its synchronous calls, each behind its own breaker. The
    offline model has no batch jobs: a job must outlive the container that submitted it, which only
    a provider's does."""
    if settings.mode == "mock":
        raise ConfigError("the Batch API path needs AI_AGENT_MODE=openai (the offline model makes no batch jobs)")
    from .openai_batches import OpenAIBatchModel

    def link(model: ChainModel) -> BatchLink:
        adapter = OpenAIBatchModel(
            api_key=model.keys, model=model.model, base_url=model.base_url, token_limit_field=model.token_limit_field
        )
        return BatchLink(adapter, model_breaker(settings, model.model))

    return BatchChain([link(model) for model in chain_models(settings) if model.batch])
