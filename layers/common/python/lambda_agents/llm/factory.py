"""Builds the ChatModel a function uses, from LLMSettings (spec 001 F: mock / openai).

In AWS the template sets AI_AGENT_MODE=openai and OPENAI_API_KEY_PARAMETER (an SSM
SecureString name); the key is read through Powertools Parameters with a 5-minute cache.
A missing key is a start-up error that names both variables. With the account's rate limits set
(OPENAI_REQUESTS_PER_MINUTE / OPENAI_TOKENS_PER_MINUTE), the container paces its requests to its
share of them: OPENAI_RATE_LIMIT_SHARE of the account, split between OPENAI_RATE_LIMIT_CONTAINERS.
"""

from __future__ import annotations

from ..config import ConfigError, LLMSettings
from .offline_model import OfflineModel, TextResponder
from .policy import StreamTimeouts
from .rate_budget import RateBudget
from .speeds import SpeedEstimate
from .types import ChatModel

KEY_CACHE_SECONDS = 300


def build_chat_model(settings: LLMSettings, responders: dict[str, TextResponder] | None = None) -> ChatModel:
    if settings.mode == "mock":
        return OfflineModel(responders)
    api_key = settings.api_key
    if not api_key and settings.api_key_parameter:
        from aws_lambda_powertools.utilities import parameters

        api_key = parameters.get_parameter(settings.api_key_parameter, decrypt=True, max_age=KEY_CACHE_SECONDS)
    if not api_key:
        raise ConfigError("AI_AGENT_MODE=openai needs environment variable OPENAI_API_KEY or OPENAI_API_KEY_PARAMETER")
    from .openai_model import OpenAIChatModel

    return OpenAIChatModel(
        api_key=str(api_key),
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
