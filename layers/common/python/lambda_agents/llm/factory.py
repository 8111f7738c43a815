"""Builds the ChatModel a function uses, from LLMSettings (spec 001 F: mock / openai).

In AWS the template sets AI_AGENT_MODE=openai and OPENAI_API_KEY_PARAMETER (an SSM
SecureString name); the key is read when the first model call needs it (``api_key``), through
Powertools Parameters with a 5-minute cache, so a key that cannot be read fails model calls
(``ProviderAuthError``), not the function: its routes without a model call keep working and
its model calls give their degraded answers. With the account's rate limits set
(OPENAI_REQUESTS_PER_MINUTE / OPENAI_TOKENS_PER_MINUTE), the container paces its requests to its
share of them: OPENAI_RATE_LIMIT_SHARE of the account, split between OPENAI_RATE_LIMIT_CONTAINERS.
"""

from __future__ import annotations

from ..config import ConfigError, LLMSettings
from .api_key import ApiKeySource
from .batches import BatchModel
from .offline_model import OfflineModel, TextResponder
from .policy import StreamTimeouts
from .rate_budget import RateBudget
from .speeds import SpeedEstimate
from .types import ChatModel


def build_chat_model(settings: LLMSettings, responders: dict[str, TextResponder] | None = None) -> ChatModel:
    if settings.mode == "mock":
        return OfflineModel(responders)
    from .openai_model import OpenAIChatModel

    return OpenAIChatModel(
        api_key=ApiKeySource(key=settings.api_key, parameter=settings.api_key_parameter),
        model=settings.model,
        base_url=settings.base_url,
        timeouts=StreamTimeouts(
            connect_s=settings.connect_timeout_s,
            first_token_s=settings.first_token_timeout_s,
            stall_s=settings.stall_timeout_s,
        ),
        stream=settings.stream,
        token_limit_field=settings.token_limit_field,
        speed_prior=SpeedEstimate(first_token_s=settings.first_token_s, tokens_per_s=settings.tokens_per_s),
        rate_budget=RateBudget.for_account(
            settings.requests_per_minute,
            settings.tokens_per_minute,
            share=settings.rate_limit_share,
            containers=settings.rate_limit_containers,
        ),
    )


def build_batch_model(settings: LLMSettings) -> BatchModel:
    """The Batch API behind the same settings (model, endpoint, key, token field) as the
    synchronous calls. The offline model has no batch jobs: a job must outlive the container that
    submitted it, which only a provider's does."""
    if settings.mode == "mock":
        raise ConfigError("the Batch API path needs AI_AGENT_MODE=openai (the offline model makes no batch jobs)")
    from .openai_batches import OpenAIBatchModel

    return OpenAIBatchModel(
        api_key=ApiKeySource(key=settings.api_key, parameter=settings.api_key_parameter),
        model=settings.model,
        base_url=settings.base_url,
        token_limit_field=settings.token_limit_field,
    )
