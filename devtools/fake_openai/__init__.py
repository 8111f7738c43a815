"""A fake OpenAI-compatible chat.completions server on 127.0.0.1 that answers, streams, waits,
fails, limits and bills like the provider (``server.py`` says how), driven by a script of steps
(``script.py``) and a speed profile. ``python -m devtools.fake_openai`` serves one."""

from __future__ import annotations

from .answers import (
    TOKEN_FIELDS,
    completion,
    cut_to_budget,
    default_reply,
    prompt_tokens_of,
    requested_schema,
    token_limit,
    token_pieces,
    unsupported_token_field,
    within_budget,
)
from .batches import BatchScript
from .caching import CACHE_INCREMENT, DEFAULT_RETENTION_S, MIN_CACHED_TOKENS, PromptCache, cacheable_tokens
from .clock import JumpingClock, ManualClock
from .flex import FLEX_SLOWDOWN, FlexCapacity
from .script import (
    DEFAULT_ACCOUNT,
    GPT_4O,
    INSTANT,
    PROFILES,
    REASONING,
    SLOW_HOUR,
    Fault,
    RateLimit,
    Reply,
    Slow,
    SpeedProfile,
    Step,
    go_duration,
)
from .server import BillingRecord, FakeOpenAIServer

__all__ = [
    "CACHE_INCREMENT",
    "DEFAULT_ACCOUNT",
    "DEFAULT_RETENTION_S",
    "FLEX_SLOWDOWN",
    "GPT_4O",
    "INSTANT",
    "MIN_CACHED_TOKENS",
    "PROFILES",
    "REASONING",
    "SLOW_HOUR",
    "TOKEN_FIELDS",
    "BatchScript",
    "BillingRecord",
    "FakeOpenAIServer",
    "Fault",
    "FlexCapacity",
    "JumpingClock",
    "ManualClock",
    "PromptCache",
    "RateLimit",
    "Reply",
    "Slow",
    "SpeedProfile",
    "Step",
    "cacheable_tokens",
    "completion",
    "cut_to_budget",
    "default_reply",
    "go_duration",
    "prompt_tokens_of",
    "requested_schema",
    "token_limit",
    "token_pieces",
    "unsupported_token_field",
    "within_budget",
]
