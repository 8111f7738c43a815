"""Spec: retries (docs/engine.md#retries): token growth, backoff with Retry-After, the deadline."""

from __future__ import annotations

from types import SimpleNamespace

from lambda_agents.llm import Deadline, FixedTokenPolicy, GrowingTokenPolicy, RetryPolicy

from .scripted_model import FakeClock


def test_growing_policy_grows_strictly_until_the_ceiling_then_stays_there() -> None:
    policy = GrowingTokenPolicy(initial=1000, growth=1.5, ceiling=2500)
    assert [policy.max_tokens(i) for i in range(4)] == [1000, 1500, 2250, 2500]
    assert policy.max_tokens(10) == policy.ceiling


def test_fixed_policy_ceiling_is_its_value() -> None:
    assert FixedTokenPolicy(700).ceiling == FixedTokenPolicy(700).max_tokens(5) == 700


def test_backoff_is_exponential_and_capped() -> None:
    policy = RetryPolicy(backoff_base_s=0.5, backoff_factor=2.0, max_backoff_s=3.0)
    assert [policy.delay_s("server_error", n) for n in (1, 2, 3, 4, 5)] == [0.5, 1.0, 2.0, 3.0, 3.0]


def test_retry_after_longer_than_the_backoff_is_honoured_up_to_its_cap() -> None:
    policy = RetryPolicy(backoff_base_s=0.5, max_retry_after_s=10.0)
    assert policy.delay_s("rate_limit", 1, retry_after_s=4.0) == 4.0
    assert policy.delay_s("rate_limit", 1, retry_after_s=0.1) == 0.5
    assert policy.delay_s("rate_limit", 1, retry_after_s=120.0) == 10.0


def test_truncated_and_invalid_answers_are_retried_without_waiting() -> None:
    policy = RetryPolicy(backoff_base_s=5.0)
    assert policy.delay_s("length", 3) == policy.delay_s("validation", 1) == policy.delay_s("invalid_json", 2) == 0.0


def test_deadline_counts_down_on_its_clock_and_never_goes_negative() -> None:
    clock = FakeClock()
    deadline = Deadline.after(10.0, clock)
    clock.now += 4.0
    assert deadline.remaining_s() == 6.0
    clock.now += 60.0
    assert deadline.remaining_s() == 0.0


def test_deadline_from_a_lambda_context_keeps_the_margin_free() -> None:
    context = SimpleNamespace(get_remaining_time_in_millis=lambda: 30_000)
    deadline = Deadline.from_lambda_context(context, margin_s=3.0)
    assert deadline is not None
    assert 26.5 < deadline.remaining_s() <= 27.0
    assert Deadline.from_lambda_context(None) is None
