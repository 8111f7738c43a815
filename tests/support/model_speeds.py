"""The pace the engine plans with when a test's provider is the fake server on its default,
instant profile: any attempt fits any deadline a test sets (a test about planning sets its own)."""

from __future__ import annotations

from lambda_agents.llm.speeds import SpeedEstimate

INSTANT_SERVER = SpeedEstimate(first_token_s=0.05, tokens_per_s=10_000.0)


def fake_server_environment(base_url: str, first_token_timeout_s: float = 5.0) -> dict[str, str]:
    """The LLM settings of a function whose provider is the fake server at ``base_url``: the real
    openai client, ``first_token_timeout_s`` for the first token and between chunks, and the
    instant server's pace as the prior the engine plans with."""
    return {
        "AI_AGENT_MODE": "openai",
        "OPENAI_BASE_URL": base_url,
        "OPENAI_API_KEY": "test-key",
        "OPENAI_FIRST_TOKEN_TIMEOUT_SECONDS": f"{first_token_timeout_s:g}",
        "OPENAI_STALL_TIMEOUT_SECONDS": f"{first_token_timeout_s:g}",
        "OPENAI_TOKENS_PER_SECOND": f"{INSTANT_SERVER.tokens_per_s:g}",
        "OPENAI_FIRST_TOKEN_SECONDS": f"{INSTANT_SERVER.first_token_s:g}",
    }
