"""Spec: a container's share of the provider's rate limit is spent before a request is sent, as
OpenAI counts it (one request, prompt + max_tokens, buckets refilled continuously, a minute's worth
at most): reservations are served in order, each told how long to wait; a request not sent gives
its cost back; a 429 holds every later request back for its retry-after."""

from __future__ import annotations

import math

import pytest
from lambda_agents.llm.rate_budget import RateBudget, RateShare


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def budget(requests_per_minute: float = 600, tokens_per_minute: float = 60_000) -> tuple[RateBudget, Clock]:
    clock = Clock()
    return RateBudget(RateShare(requests_per_minute, tokens_per_minute), clock), clock


def test_a_full_minute_leaves_at_once_and_the_next_request_waits_for_the_refill_of_its_cost() -> None:
    rate, _ = budget(tokens_per_minute=60_000)  # 1,000 tokens a second
    assert [rate.reserve(20_000).wait_s for _ in range(3)] == [0.0, 0.0, 0.0]
    assert rate.reserve(5_000).wait_s == pytest.approx(5.0)


def test_reservations_are_served_in_order_however_small_the_later_one() -> None:
    rate, _ = budget(tokens_per_minute=60_000)
    rate.reserve(60_000)
    first = rate.reserve(10_000)
    second = rate.reserve(100)
    assert first.wait_s == pytest.approx(10.0)
    assert second.wait_s == pytest.approx(10.1)


def test_the_buckets_refill_with_time_and_hold_at_most_a_minute() -> None:
    rate, clock = budget(tokens_per_minute=60_000)
    rate.reserve(60_000)
    clock.now += 30
    assert rate.reserve(30_000).wait_s == 0.0
    clock.now += 3_600  # an idle hour does not bank more than a minute
    assert rate.reserve(60_000).wait_s == 0.0
    assert rate.reserve(1_000).wait_s == pytest.approx(1.0)


def test_requests_per_minute_bound_small_requests() -> None:
    rate, _ = budget(requests_per_minute=60, tokens_per_minute=1_000_000)
    waits = [rate.reserve(10).wait_s for _ in range(62)]
    assert waits[:60] == [0.0] * 60
    assert waits[60:] == [pytest.approx(1.0), pytest.approx(2.0)]


def test_a_request_not_sent_gives_its_place_back() -> None:
    rate, _ = budget(tokens_per_minute=60_000)
    rate.reserve(60_000)
    rate.reserve(30_000).cancel()
    assert rate.reserve(1_000).wait_s == pytest.approx(1.0)


def test_a_429_holds_every_later_request_for_its_retry_after() -> None:
    rate, clock = budget(requests_per_minute=600)  # a request's own place is 0.1 s
    rate.hold(12.0)
    assert 12.0 <= rate.reserve(0).wait_s <= 12.1 + 1e-9
    clock.now += 12.1
    assert rate.reserve(0).wait_s == pytest.approx(0.1)


def test_a_request_above_a_minutes_share_waits_for_the_minute_not_for_ever() -> None:
    rate, _ = budget(tokens_per_minute=6_000)
    rate.reserve(6_000)
    assert rate.reserve(50_000).wait_s == pytest.approx(60.0)


@pytest.mark.parametrize(
    ("requests", "tokens", "share", "containers", "expected"),
    [
        (0, 0, 1.0, 1, None),
        (10_000, 2_000_000, 0.8, 5, (1_600.0, 320_000.0)),
        (0, 2_000_000, 1.0, 4, (math.inf, 500_000.0)),
        (5_000, 0, 0.5, 1, (2_500.0, math.inf)),
    ],
)
def test_a_containers_share_is_the_functions_part_of_the_account_split_between_its_containers(
    requests: int, tokens: int, share: float, containers: int, expected: tuple[float, float] | None
) -> None:
    got = RateShare.of_account(requests, tokens, share=share, containers=containers)
    assert (None if got is None else (got.requests_per_minute, got.tokens_per_minute)) == expected


def test_an_unknown_limit_never_makes_a_request_wait() -> None:
    rate = RateBudget(RateShare(60, math.inf), Clock())
    waits = [rate.reserve(10**9).wait_s for _ in range(61)]
    assert waits[:60] == [0.0] * 60 and waits[60] == pytest.approx(1.0)


def test_an_account_spent_by_others_lowers_the_buckets_and_never_raises_them() -> None:
    clock = [0.0]
    budget = RateBudget(RateShare(requests_per_minute=100, tokens_per_minute=10_000), clock=lambda: clock[0])

    budget.resync({"limit-tokens": "100000", "remaining-tokens": "20000", "limit-requests": "1000"})
    assert budget.reserve(2_000).wait_s == 0  # 20% of its 10,000 left: 2,000 fit
    assert budget.reserve(1_000).wait_s > 0  # the next waits for the refill

    budget.resync({"limit-tokens": "100000", "remaining-tokens": "100000"})  # a full account raises nothing
    assert budget.reserve(1_000).wait_s > 0
    budget.resync({"remaining-tokens": "not a number", "limit-tokens": "0"})  # unreadable: ignored
