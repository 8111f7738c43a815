"""The provider's usage as the engine counts it (``openai_stream.usage_of``): the cached part of the
prompt is kept apart, because the provider bills it at a lower price (the dashboard's cost)."""

from __future__ import annotations

from lambda_agents.llm.openai_stream import usage_of
from lambda_agents.llm.types import Usage
from openai.types import CompletionUsage
from openai.types.completion_usage import CompletionTokensDetails, PromptTokensDetails


def test_the_cached_part_of_the_prompt_is_read_from_the_providers_usage() -> None:
    reported = CompletionUsage(
        prompt_tokens=2_048,
        completion_tokens=300,
        total_tokens=2_348,
        prompt_tokens_details=PromptTokensDetails(cached_tokens=1_536),
        completion_tokens_details=CompletionTokensDetails(reasoning_tokens=0),
    )

    assert usage_of(reported) == Usage(2_048, 300, 0, cached_prompt_tokens=1_536)


def test_a_usage_without_details_has_no_cached_tokens() -> None:
    assert usage_of(CompletionUsage(prompt_tokens=10, completion_tokens=5, total_tokens=15)).cached_prompt_tokens == 0
    assert usage_of(None) == Usage()


def test_the_cached_tokens_of_every_attempt_are_summed() -> None:
    first = Usage(1_200, 40, cached_prompt_tokens=1_024)
    second = Usage(1_300, 80, cached_prompt_tokens=1_152, estimated=True)

    assert first + second == Usage(2_500, 120, 0, estimated=True, cached_prompt_tokens=2_176)
