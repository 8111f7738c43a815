"""Spec: attempts planned from a model's pace. A real model writes 35-80 tokens/s, so an attempt's
time follows from its max_tokens: one that cannot finish before the deadline is not started (or
asks for less when the answer's expected size still fits), a timeout never raises max_tokens, an
answer the deadline cuts comes back as a partial with its tokens counted, and the pace is learned
from the answers themselves. A scripted model and a fake clock: no network, no real sleep."""

from __future__ import annotations

import pytest
from lambda_agents.llm import (
    ChatRequest,
    ChatResponse,
    Deadline,
    DeadlineReached,
    FixedTokenPolicy,
    GrowingTokenPolicy,
    LearnedBudgets,
    RetryPolicy,
    StructuredOptions,
    Usage,
    complete_with_retries,
    generate_structured,
)
from lambda_agents.llm.errors import AnswerCut, ProviderTimeout, RateLimited
from lambda_agents.llm.policy import TRANSIENT_KINDS
from lambda_agents.llm.speeds import (
    DEFAULT_PRIOR,
    MIN_TOKENS_TO_LEARN,
    SPEED_MEMORY_S,
    ModelSpeeds,
    PaceForecast,
    SpeedEstimate,
    plan_attempt,
)
from lambda_agents.llm.types import ResponseTiming

from .ideas_task import GOOD, MESSAGES, Ideas
from .scripted_model import FakeClock, ScriptedModel, answer

SIXTY = SpeedEstimate(first_token_s=1.0, tokens_per_s=60.0)


def timed(payload: object, *, completion: int, first_token_s: float, total_s: float) -> ChatResponse:
    response = answer(payload, completion=completion)
    return ChatResponse(
        response.content,
        response.finish_reason,
        usage=response.usage,
        model=response.model,
        timing=ResponseTiming(first_token_s, total_s),
    )


# -- plan_attempt ------------------------------------------------------------------------------


def test_given_time_enough_for_the_whole_budget_then_the_attempt_goes_as_asked() -> None:
    plan = plan_attempt(SIXTY, max_tokens=600, seconds_left=12.0)
    assert plan.max_tokens == 600 and plan.seconds == pytest.approx(11.0)
    assert "600 tokens at 60 tok/s" in plan.reason


def test_given_too_little_time_and_no_expected_size_then_no_attempt() -> None:
    plan = plan_attempt(SIXTY, max_tokens=4095, seconds_left=30.0)
    assert plan.max_tokens is None and "only 30.0 s left" in plan.reason


def test_given_too_little_time_but_an_expected_size_that_fits_then_the_budget_is_lowered_to_what_fits() -> None:
    plan = plan_attempt(SIXTY, max_tokens=4095, seconds_left=30.0, expected_tokens=1000)
    assert plan.max_tokens == 1740  # (30 - 1) s at 60 tok/s
    assert "lowered to 1740" in plan.reason


def test_given_an_expected_size_that_does_not_fit_either_then_no_attempt() -> None:
    assert plan_attempt(SIXTY, max_tokens=4095, seconds_left=30.0, expected_tokens=2000).max_tokens is None


def test_given_no_deadline_then_every_attempt_goes_as_asked() -> None:
    assert plan_attempt(SIXTY, max_tokens=100_000, seconds_left=None).max_tokens == 100_000


# -- ModelSpeeds -------------------------------------------------------------------------------


def test_given_no_answer_yet_then_the_prior_is_the_estimate() -> None:
    speeds = ModelSpeeds()
    assert speeds.estimate("gpt-4o") == DEFAULT_PRIOR
    assert speeds.estimate("gpt-4o", SIXTY) == SIXTY


def test_given_streamed_answers_then_the_plan_reads_a_slow_rate_and_a_late_first_token() -> None:
    speeds = ModelSpeeds()
    for rate, first in ((40.0, 0.3), (60.0, 0.5), (60.0, 0.6), (70.0, 0.8), (80.0, 1.1)):
        speeds.record("gpt-4o", ResponseTiming(first, first + 600 / rate), 600)
    estimate = speeds.estimate("gpt-4o")
    assert estimate.learned
    assert estimate.tokens_per_s == pytest.approx(40.0)  # the 20th percentile of five: the slowest
    assert estimate.first_token_s == pytest.approx(0.8)  # the 80th percentile


def test_given_a_short_answer_then_it_teaches_the_first_token_but_not_the_rate() -> None:
    speeds = ModelSpeeds()
    speeds.record("gpt-4o", ResponseTiming(0.4, 0.45), MIN_TOKENS_TO_LEARN - 1)
    estimate = speeds.estimate("gpt-4o", SIXTY)
    assert estimate.first_token_s == pytest.approx(0.4) and estimate.tokens_per_s == 60.0


def test_given_a_non_streamed_answer_then_its_rate_counts_its_whole_duration() -> None:
    speeds = ModelSpeeds()
    speeds.record("gpt-4o", ResponseTiming(0.0, 10.0, streamed=False), 500)
    assert speeds.estimate("gpt-4o").tokens_per_s == pytest.approx(50.0)


# -- the loop ----------------------------------------------------------------------------------


def test_given_timeouts_then_the_next_attempts_ask_for_the_same_budget() -> None:
    """A timeout says nothing about the answer's size: growing max_tokens after one only makes the
    next attempt slower (and counts more against the rate limit)."""
    clock = FakeClock()
    model = ScriptedModel(ProviderTimeout("no first token"), ProviderTimeout("stalled"), answer(GOOD))
    generate_structured(
        model,
        Ideas,
        MESSAGES,
        StructuredOptions(
            token_policy=GrowingTokenPolicy(initial=4095, growth=1.15, ceiling=16_384), sleep=clock.sleep
        ),
    )
    assert [r.max_tokens for r in model.requests] == [4095, 4095, 4095]


def test_given_a_rejected_answer_then_the_policy_may_still_grow_the_budget() -> None:
    model = ScriptedModel(answer({"ideas": ["only one"]}), answer(GOOD))
    generate_structured(
        model, Ideas, MESSAGES, StructuredOptions(token_policy=GrowingTokenPolicy(initial=1000, growth=1.5))
    )
    assert [r.max_tokens for r in model.requests] == [1000, 1500]


def test_given_a_learned_need_that_fits_but_a_budget_that_does_not_then_the_budget_is_lowered() -> None:
    clock = FakeClock()
    budgets = LearnedBudgets()
    model = ScriptedModel(answer(GOOD, completion=300), answer(GOOD, completion=300), speed=SIXTY)
    policy = FixedTokenPolicy(4095)
    generate_structured(
        model, Ideas, MESSAGES, StructuredOptions(token_policy=policy, budgets=budgets)
    )  # learns a need of 300
    result = generate_structured(
        model,
        Ideas,
        MESSAGES,
        StructuredOptions(token_policy=policy, budgets=budgets),
        deadline=Deadline.after(20.0, clock),
    )
    lowered = model.requests[1].max_tokens
    assert 375 <= lowered < 4095  # at least the need plus the margin, no more than fits in the time left
    assert result.attempts[0].plan is not None and "lowered to" in result.attempts[0].plan


def test_given_a_slow_model_learned_then_an_attempt_it_cannot_finish_is_not_started() -> None:
    """The pace comes from the answers: after a 20 tokens/s answer, 1,000 tokens take 50 s."""
    clock = FakeClock()
    speeds = ModelSpeeds()
    slow = timed("x" * 2000, completion=500, first_token_s=0.5, total_s=25.5)
    request = ChatRequest(messages=MESSAGES, max_tokens=1000, purpose="test.slow")
    model = ScriptedModel(slow, speed=SIXTY)
    complete_with_retries(model, request, speeds=speeds)
    assert speeds.estimate("scripted").tokens_per_s == pytest.approx(20.0)
    with pytest.raises(DeadlineReached) as caught:
        complete_with_retries(model, request, speeds=speeds, deadline=Deadline.after(30.0, clock))
    assert len(model.requests) == 1
    assert "20 tok/s" in str(caught.value) and "(learned)" in str(caught.value)


def test_given_an_answer_cut_by_the_deadline_then_its_partial_and_tokens_come_back_without_a_retry() -> None:
    partial = ChatResponse("The first half of", "cut", usage=Usage(40, 300, estimated=True))
    model = ScriptedModel(AnswerCut("the deadline cut the answer", partial))
    with pytest.raises(DeadlineReached) as caught:
        complete_with_retries(
            model,
            ChatRequest(messages=MESSAGES, max_tokens=1200, purpose="test.cut"),
            retry_policy=RetryPolicy(max_attempts=3, retry_on=TRANSIENT_KINDS),
        )
    assert caught.value.partial is partial
    assert caught.value.usage == Usage(40, 300, estimated=True)
    assert [a.outcome for a in caught.value.attempts] == ["deadline"]
    model.assert_consumed()


def test_given_a_stalled_stream_then_the_tokens_it_delivered_are_counted() -> None:
    clock = FakeClock()
    partial = ChatResponse("half", "cut", usage=Usage(40, 120, estimated=True))
    model = ScriptedModel(ProviderTimeout("stalled", partial), answer(GOOD, prompt=40, completion=30))
    result = generate_structured(model, Ideas, MESSAGES, StructuredOptions(sleep=clock.sleep))
    assert result.usage.completion_tokens == 150 and result.usage.estimated
    assert result.attempts[0].usage.completion_tokens == 120


def test_given_a_retry_after_that_leaves_no_time_for_the_next_attempt_then_no_wait() -> None:
    clock = FakeClock()
    model = ScriptedModel(RateLimited("429", retry_after_s=5.0), speed=SIXTY)
    with pytest.raises(DeadlineReached) as caught:
        complete_with_retries(
            model,
            ChatRequest(messages=MESSAGES, max_tokens=300, purpose="test.wait"),
            deadline=Deadline.after(10.0, clock),
            sleep=clock.sleep,
        )
    assert clock.sleeps == []  # 5 s of waiting + 6 s for 300 tokens > 10 s
    assert "waiting 5.0 s" in str(caught.value)


def test_every_attempt_says_its_plan_in_the_log() -> None:
    clock = FakeClock()
    model = ScriptedModel(answer(GOOD), speed=SIXTY)
    result = generate_structured(
        model,
        Ideas,
        MESSAGES,
        StructuredOptions(token_policy=FixedTokenPolicy(600)),
        deadline=Deadline.after(25.0, clock),
    )
    (attempt,) = result.attempts
    assert attempt.plan is not None and "600 tokens at 60 tok/s" in attempt.plan and "of 24.8 s left" in attempt.plan
    assert attempt.as_dict()["plan"] == attempt.plan


def test_given_the_callers_expected_size_and_nothing_learned_then_a_budget_that_does_not_fit_is_lowered() -> None:
    """An agent's 1,024-token cap on a tool call that writes ~100 tokens must not refuse the call."""
    clock = FakeClock()
    model = ScriptedModel(answer("ok", completion=90), speed=SIXTY)
    request = ChatRequest(messages=MESSAGES, max_tokens=1024, purpose="test.agent")
    result = complete_with_retries(model, request, deadline=Deadline.after(10.0, clock), expected_tokens=256)
    assert 256 <= model.requests[0].max_tokens < 1024
    assert result.attempts[0].plan is not None and "lowered to" in result.attempts[0].plan


def test_given_an_answer_cut_as_it_arrived_then_its_pace_is_learned() -> None:
    """A cut answer is the slow one the next plan most needs to know of: 120 tokens in 6 s after its first."""
    speeds = ModelSpeeds()
    partial = ChatResponse(
        "The first part", "cut", usage=Usage(40, 120, estimated=True), timing=ResponseTiming(1.0, 7.0)
    )
    model = ScriptedModel(AnswerCut("the deadline cut the answer", partial))
    with pytest.raises(DeadlineReached):
        complete_with_retries(model, ChatRequest(messages=MESSAGES, max_tokens=1200, purpose="t"), speeds=speeds)
    learned = speeds.estimate("scripted")
    assert learned.learned and learned.tokens_per_s == pytest.approx(20.0) and learned.first_token_s == 1.0


def test_given_readings_older_than_the_memory_then_the_prior_is_the_estimate_again() -> None:
    """A slow hour passes: a container that stopped answering in the request must not keep its pace for ever."""
    clock = FakeClock()
    speeds = ModelSpeeds(clock=clock)
    speeds.record("m", ResponseTiming(1.0, 51.0), 1000)
    clock.sleep(SPEED_MEMORY_S - 1)
    assert speeds.estimate("m").tokens_per_s == pytest.approx(20.0)
    speeds.record("m", ResponseTiming(0.5, 10.5), 600)
    clock.sleep(2)  # the first reading is now older than the memory, the second is not
    assert speeds.estimate("m").tokens_per_s == pytest.approx(60.0)
    clock.sleep(SPEED_MEMORY_S)
    assert speeds.estimate("m", SIXTY) == SIXTY


def test_every_attempt_carries_the_size_and_pace_it_was_planned_at() -> None:
    """The adapter checks the stream against them: the size is the budget, or the expected size when smaller."""
    model = ScriptedModel(answer("text"), answer("text"), speed=SIXTY)
    request = ChatRequest(messages=MESSAGES, max_tokens=1200, purpose="test.size")
    complete_with_retries(model, request, speeds=ModelSpeeds(), budgets=LearnedBudgets())
    complete_with_retries(model, request, speeds=ModelSpeeds(), budgets=LearnedBudgets(), expected_tokens=400)
    assert [r.pacing.planned_tokens for r in model.requests] == [1200, 400]
    assert [r.pacing.planned_tokens_per_s for r in model.requests] == [60.0, 60.0]


# -- PaceForecast: the plan checked against the stream -----------------------------------------

# Sent at 0 s with 26 s to go, planned at 1,000 tokens (60 tok/s: 17.7 s), at most 1,200.
FORECAST = PaceForecast(planned_tokens=1000, max_tokens=1200, started_at=0.0, deadline_at=26.0)


def test_given_the_planned_pace_then_the_answer_is_never_late() -> None:
    assert all(FORECAST.late(60 * t, 1.0, 1.0 + t) is None for t in (1.5, 3, 6, 12, 16))


def test_given_a_slow_hour_then_the_answer_is_late_as_soon_as_the_evidence_is_in() -> None:
    """20 tok/s: 1,000 tokens need 50 s. Before 1.5 s of stream (or 32 tokens) nothing is judged."""
    assert FORECAST.late(20, 1.0, 2.0) is None  # 20 tokens, 1 s: too little to tell
    assert FORECAST.late(31, 1.0, 2.55) is None  # 1.55 s, but 31 tokens
    late = FORECAST.late(32, 1.0, 2.6)
    assert late is not None and "20 tok/s" in late and "1000-token" in late


def test_given_a_pace_within_the_tolerance_then_the_answer_is_not_cut() -> None:
    """45 tok/s would end 0.7 s late at exactly that pace; the model's pace varies more than that."""
    assert FORECAST.late(90, 1.0, 3.0) is None


def test_given_an_answer_past_its_planned_size_then_it_is_held_to_its_budget() -> None:
    assert FORECAST.late(1000, 1.0, 21.0) is None  # 200 more at 50 tok/s: 23.7 s
    late = FORECAST.late(1000, 1.0, 25.0)  # 200 more at 42 tok/s (x1.5: 62): past 26 s
    assert late is not None and "1200-token" in late


def test_before_the_first_token_the_planned_pace_says_how_late_it_may_come() -> None:
    """1,000 tokens at 60 tok/s (x1.5: 90) take 11.1 s: a first token later than 14.9 s leaves too little."""
    paced = PaceForecast(1000, 1200, started_at=0.0, deadline_at=26.0, planned_tokens_per_s=60.0)
    assert paced.first_token_by() == pytest.approx(26.0 - 1000 / 90)
    assert FORECAST.first_token_by() is None  # no planned pace: only the first-token timeout and the deadline


def test_given_a_short_deadline_then_a_tenth_of_it_is_evidence_enough() -> None:
    short = PaceForecast(planned_tokens=300, max_tokens=300, started_at=0.0, deadline_at=6.0)
    # 32 tokens in 1 s, less than 1.5 s but more than a tenth of 6 s: 268 more at 32 tok/s (x1.5: 48) end at 6.8 s.
    assert short.late(32, 0.2, 1.2) is not None
