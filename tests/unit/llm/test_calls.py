"""Spec: one logical model call for callers that read the answer themselves (free text, agent
turns): transient failures retried within the deadline; a truncated answer follows the engine's
rules when a token policy allows growth (the estimate plus the margin, or a stop at the ceiling);
content_filter and refusals retried only when the retry policy names them; everything else
handed back at once."""

from __future__ import annotations

import pytest
from lambda_agents.llm import (
    ChatRequest,
    Deadline,
    DeadlineReached,
    GrowingTokenPolicy,
    ProviderFailed,
    RequestParameters,
    RetryPolicy,
    ToolDefinition,
    Usage,
)
from lambda_agents.llm.calls import complete_with_retries
from lambda_agents.llm.errors import ProviderTimeout, ProviderUnavailable, RateLimited, RequestRejected
from lambda_agents.llm.policy import DEADLINE_SLACK_S, TRANSIENT_KINDS
from lambda_agents.llm.speeds import SpeedEstimate
from lambda_agents.llm.truncation import with_margin

from .scripted_model import FakeClock, ScriptedModel, answer, needing, refusal

REQUEST = ChatRequest(messages=[{"role": "user", "content": "hi"}], max_tokens=100, purpose="test.text")


def test_given_an_answer_when_called_then_it_is_returned_after_one_attempt() -> None:
    model = ScriptedModel(answer("hello", prompt=7, completion=3))
    result = complete_with_retries(model, REQUEST)
    assert result.response.content == "hello"
    assert result.retries == 0
    assert result.usage == Usage(7, 3)
    model.assert_consumed()


def test_given_a_refusal_or_truncation_when_called_then_it_is_the_callers_to_judge_not_retried() -> None:
    model = ScriptedModel(refusal("no"))
    assert complete_with_retries(model, REQUEST).response.refusal == "no"
    model = ScriptedModel(answer("partial", finish="length"))
    assert complete_with_retries(model, REQUEST).response.finish_reason == "length"


def test_given_a_500_then_an_answer_when_called_then_it_backs_off_once_and_returns() -> None:
    clock = FakeClock()
    model = ScriptedModel(ProviderUnavailable("500"), answer("ok"))
    result = complete_with_retries(
        model,
        REQUEST,
        retry_policy=RetryPolicy(max_attempts=2, backoff_base_s=1.5, retry_on=TRANSIENT_KINDS),
        sleep=clock.sleep,
    )
    assert clock.sleeps == [1.5]
    assert [a.outcome for a in result.attempts] == ["server_error", "ok"]
    assert result.retries == 1


def test_given_429_with_retry_after_when_called_then_retry_after_is_honoured() -> None:
    clock = FakeClock()
    model = ScriptedModel(RateLimited("429", retry_after_s=4.0), answer("ok"))
    complete_with_retries(model, REQUEST, sleep=clock.sleep)
    assert clock.sleeps == [4.0]


def test_given_transient_failures_until_the_last_attempt_then_provider_failed_carries_every_attempt() -> None:
    clock = FakeClock()
    model = ScriptedModel(ProviderTimeout("t"), ProviderTimeout("t"), ProviderTimeout("t"))
    with pytest.raises(ProviderFailed) as raised:
        complete_with_retries(model, REQUEST, sleep=clock.sleep)
    assert raised.value.kind == "timeout"
    assert len(raised.value.attempts) == 3
    model.assert_consumed()


def test_given_a_rejected_request_when_called_then_it_fails_at_once_without_retrying() -> None:
    model = ScriptedModel(RequestRejected("400 bad schema"))
    with pytest.raises(ProviderFailed) as raised:
        complete_with_retries(model, REQUEST)
    assert raised.value.kind == "rejected"
    assert len(raised.value.attempts) == 1


def test_given_a_wait_that_would_pass_the_deadline_then_deadline_reached_is_raised_before_sleeping() -> None:
    clock = FakeClock()
    model = ScriptedModel(RateLimited("429", retry_after_s=20.0))
    with pytest.raises(DeadlineReached):
        complete_with_retries(model, REQUEST, deadline=Deadline.after(10.0, clock), sleep=clock.sleep)
    assert clock.sleeps == []


def test_given_a_deadline_when_called_then_the_request_carries_it_so_the_answer_is_cut_there() -> None:
    clock = FakeClock()
    deadline = Deadline.after(6.0, clock)
    model = ScriptedModel(answer("ok"))
    complete_with_retries(model, REQUEST, deadline=deadline)
    answer_by = model.requests[0].pacing.answer_by
    assert answer_by is not None and answer_by.expires_at == deadline.expires_at - DEADLINE_SLACK_S


def test_given_too_little_time_for_the_answer_at_the_models_pace_when_called_then_no_request_is_sent() -> None:
    clock = FakeClock()
    model = ScriptedModel(speed=SpeedEstimate(first_token_s=0.5, tokens_per_s=50.0))  # 100 tokens: 2.5 s
    with pytest.raises(DeadlineReached) as raised:
        complete_with_retries(model, REQUEST, deadline=Deadline.after(2.0, clock))
    assert model.requests == []
    assert "100 tokens would take ~2.5 s" in str(raised.value)


AGENT_RETRIES = RetryPolicy(retry_on=TRANSIENT_KINDS | {"length"}, immediate=frozenset({"length"}))
GROWING = GrowingTokenPolicy(initial=100, ceiling=2000)
ARGUMENTS = {"message": "How many years have you worked as a barista, and where?", "facts": ["a" * 60] * 6}
TOOL_REQUEST = ChatRequest(
    messages=[{"role": "user", "content": "hi"}],
    max_tokens=100,
    purpose="test.agent",
    parameters=RequestParameters(
        tools=(
            ToolDefinition(
                "StructuredOutput",
                "the answer",
                {
                    "type": "object",
                    "properties": {
                        "message": {"type": "string"},
                        "facts": {"type": "array", "items": {"type": "string"}, "minItems": 6, "maxItems": 6},
                    },
                },
            ),
        )
    ),
)


def test_given_a_truncated_tool_call_and_a_growing_policy_then_it_is_retried_once_with_its_estimated_need() -> None:
    model = ScriptedModel(needing(ARGUMENTS, 300, tool=True), needing(ARGUMENTS, 300, tool=True))
    result = complete_with_retries(model, TOOL_REQUEST, retry_policy=AGENT_RETRIES, token_policy=GROWING)
    assert [a.outcome for a in result.attempts] == ["length", "ok"]
    assert 300 <= model.requests[1].max_tokens <= with_margin(330)
    assert model.requests[0].messages == model.requests[1].messages
    assert result.response.finish_reason == "tool_calls"


def test_given_a_truncation_that_cannot_fit_under_the_ceiling_then_the_cut_answer_is_handed_back_at_once() -> None:
    model = ScriptedModel(needing(ARGUMENTS, 500, tool=True))
    policy = GrowingTokenPolicy(initial=100, ceiling=250)
    result = complete_with_retries(model, TOOL_REQUEST, retry_policy=AGENT_RETRIES, token_policy=policy)
    assert result.response.finish_reason == "length" and len(model.requests) == 1
    assert "more than the limit (250)" in (result.attempts[0].error or "")


def test_given_free_text_truncated_then_the_retry_asks_for_the_ceiling_once_and_no_more() -> None:
    model = ScriptedModel(answer("Once upon", finish="length"), answer("Once upon a time", finish="length"))
    result = complete_with_retries(model, REQUEST, retry_policy=AGENT_RETRIES, token_policy=GROWING)
    assert [r.max_tokens for r in model.requests] == [100, 2000]
    assert result.response.finish_reason == "length"


def test_given_a_retry_policy_that_names_content_filter_and_refusal_then_they_are_retried() -> None:
    model = ScriptedModel(answer("", finish="content_filter"), refusal("no"), answer("fine"))
    policy = RetryPolicy(retry_on=TRANSIENT_KINDS | {"content_filter", "refusal"})
    result = complete_with_retries(model, REQUEST, retry_policy=policy)
    assert [a.outcome for a in result.attempts] == ["content_filter", "refusal", "ok"]
    assert result.response.content == "fine"
