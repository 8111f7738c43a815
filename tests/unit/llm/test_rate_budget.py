"""Spec: a container's share of the provider's rate limit is spent before a request is sent, as
OpenAI counts it (one request, prompt + max_tokens, buckets refilled continuously, a minute's worth
at most): reservations are served in order, each told how long to wait; a request not sent gives
its cost back; a 429 holds every later request back for its retry-after."""

from __future__ import annotations

import math

import pytest
from lambda_agents.llm.rate_budget import RateBudget, RateShare, parse_duration


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


def test_a_429_holds_every_later_request_for_its_retry_after_and_the_first_in_line_leaves_then() -> None:
    """The retry-after is when the account has room for the refused request: the first request
    in line leaves then, not a whole refill of its own later; the next a refill after it."""
    rate, clock = budget(requests_per_minute=600, tokens_per_minute=60_000)  # 0.1 s a request
    waiting = rate.reserve(1_000)
    rate.hold(12.0, tokens=1_000)
    assert rate.wait_for_turn(waiting, 0.0) == pytest.approx(12.0)
    assert rate.reserve(1).wait_s == pytest.approx(12.1)  # one request's refill after it
    clock.now += 12.0
    assert rate.wait_for_turn(waiting, 0.0) is None
    assert rate.reserve(1).wait_s == pytest.approx(0.2)


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


def test_an_account_spent_by_others_lowers_the_buckets_before_any_429() -> None:
    clock = [0.0]
    budget = RateBudget(RateShare(requests_per_minute=100, tokens_per_minute=10_000), clock=lambda: clock[0])

    budget.resync({"limit-tokens": "100000", "remaining-tokens": "20000", "limit-requests": "1000"})
    assert budget.reserve(2_000).wait_s == 0  # 20% of its 10,000 left: 2,000 fit
    assert budget.reserve(1_000).wait_s > 0  # the next waits for the refill
    budget.resync({"remaining-tokens": "not a number", "limit-tokens": "0"})  # unreadable: ignored
    assert budget.reserve(1).wait_s > 0


def test_room_the_account_shows_moves_a_waiting_turn_earlier_less_what_was_reserved_and_not_sent() -> None:
    clock = Clock()
    rate = RateBudget.for_account(0, 0, clock=clock)
    rate.resync({"limit-requests": "60", "remaining-requests": "60"})  # learned: 60 a minute
    answered = [rate.reserve(1) for _ in range(60)]  # the minute spent...
    for reservation in answered:
        assert rate.wait_for_turn(reservation, 0.0) is None
        rate.land(reservation)  # ...and answered
    waiting = [rate.reserve(1) for _ in range(3)]
    assert rate.wait_for_turn(waiting[0], 0.0) == pytest.approx(1.0)

    # The account refilled more than this container's own refill counted (another container was idle):
    rate.resync({"limit-requests": "60", "remaining-requests": "5"})  # a 429's, written now

    assert [rate.wait_for_turn(reservation, 0.0) for reservation in waiting] == [None, None, None]
    assert rate.reserve(1).wait_s == 0.0 and rate.reserve(1).wait_s == 0.0  # 5 - the 3 not yet seen
    assert rate.reserve(1).wait_s == pytest.approx(1.0)


def test_a_limit_nobody_configured_is_learned_from_the_first_headers_and_paced_from_then_on() -> None:
    clock = Clock()
    rate = RateBudget.for_account(0, 0, share=0.8, containers=4, clock=clock)
    assert rate.share == RateShare(math.inf, math.inf)
    sent = [rate.reserve(5_000) for _ in range(30)]
    assert [reservation.wait_s for reservation in sent] == [0.0] * 30  # nothing known: nothing waits
    for reservation in sent:
        rate.land(reservation)  # answered (or refused) before the headers below

    # A 429's headers: the account allows 20 requests a minute and has none left until one refills.
    rate.resync({"limit-requests": "20", "remaining-requests": "0", "reset-requests": "1m0s"})

    assert rate.share == RateShare(requests_per_minute=4.0, tokens_per_minute=math.inf)  # 20 x 0.8 / 4
    assert rate.reserve(5_000).wait_s == pytest.approx(15.0)  # its one request a 15 s
    assert rate.reserve(5_000).wait_s == pytest.approx(30.0)


@pytest.mark.parametrize(
    ("limit", "remaining", "reset", "per_minute"),
    [
        ("20", "10", "30s", 20.0),  # half the minute's limit refills in 30 s: a minute's limit
        ("14400", "7200", "12h0m0s", 10.0),  # a day's limit: 14,400 a day is 10 a minute
        ("600", "300", "300ms", 60_000.0),  # a provider that runs 100x faster (a scaled test)
        ("20", "19", "3s", 20.0),  # too close to full to read the window: a minute, as OpenAI's RPM
        ("20", "10", "soon", 20.0),  # unreadable: a minute
    ],
)
def test_a_learned_limit_refills_at_the_pace_its_reset_header_shows(
    limit: str, remaining: str, reset: str, per_minute: float
) -> None:
    rate = RateBudget.for_account(0, 0, clock=Clock())
    rate.resync({"limit-requests": limit, "remaining-requests": remaining, "reset-requests": reset})
    assert rate.share.requests_per_minute == pytest.approx(per_minute)


def test_a_configured_limit_is_not_replaced_by_the_headers_but_an_unconfigured_kind_is_learned() -> None:
    rate = RateBudget.for_account(1_000, 0, clock=Clock())
    rate.resync(
        {"limit-requests": "5000", "remaining-requests": "5000", "limit-tokens": "90000", "remaining-tokens": "90000"}
    )
    assert rate.share == RateShare(requests_per_minute=1_000, tokens_per_minute=90_000)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("6m0s", 360.0), ("1s", 1.0), ("20ms", 0.02), ("1.5s", 1.5), ("1h2m3.5s", 3723.5), ("250us", 0.00025)],
)
def test_reset_headers_are_read_as_go_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", [None, "", "5", "1x", "m1s", "1s2", "-1s"])
def test_a_reset_that_is_not_a_duration_is_not_read(text: str | None) -> None:
    assert parse_duration(text) is None


def test_a_sent_request_the_header_has_not_counted_yet_is_not_handed_out_again() -> None:
    """Ten requests leave at once; the first answer's header was written before the other nine
    arrived at the provider: the room it shows is not this container's to spend again."""
    rate = RateBudget(RateShare(requests_per_minute=20, tokens_per_minute=math.inf), Clock())
    sent = [rate.reserve(1) for _ in range(10)]
    for reservation in sent:
        assert rate.wait_for_turn(reservation, 0.0) is None

    rate.resync({"limit-requests": "20", "remaining-requests": "19"}, sent[0])

    assert [rate.reserve(1).wait_s for _ in range(11)][-2:] == [0.0, pytest.approx(3.0)]  # 19 - 9 in flight


def test_a_configured_limit_takes_the_room_idle_siblings_leave_up_to_the_functions_whole_share() -> None:
    """The operator's 20 a minute for a function of five containers (3.2 each): when the account
    shows the room the other containers left (they are done), this one's waiting turns come early,
    by as much as the function's whole share (16 a minute) would have refilled, never more."""
    clock = Clock()
    rate = RateBudget.for_account(20, 0, share=0.8, containers=5, clock=clock)
    sent = [rate.reserve(5_000) for _ in range(3)]  # its 3.2 at once
    assert [rate.wait_for_turn(reservation, 0.0) for reservation in sent] == [None, None, None]
    for reservation, remaining in zip(sent, ("5", "4", "3"), strict=True):  # the others took most of the account
        rate.resync({"limit-requests": "20", "remaining-requests": remaining}, reservation)
    waiting = [rate.reserve(5_000) for _ in range(3)]
    assert rate.wait_for_turn(waiting[-1], 0.0) == pytest.approx((3 - 0.2) * 60 / 3.2)  # 0.2 left: its own pace

    clock.now += 15  # its own refill: 0.8 more; the function's whole share: 4.0
    rate.resync({"limit-requests": "20", "remaining-requests": "20"})  # the others are done (a header written now)

    assert [rate.wait_for_turn(reservation, 0.0) for reservation in waiting] == [None, None, None]
    assert rate.reserve(5_000).wait_s > 0  # the 3.2 capacity: what was configured caps the level
    assert rate.share.requests_per_minute == pytest.approx(3.2)

    clock.now += 1
    rate.resync({"limit-requests": "20", "remaining-requests": "20"})
    assert rate.reserve(5_000).wait_s > 0  # a second later: no more than the share refilled meanwhile


def test_a_configured_limit_speeds_up_while_its_split_of_the_accounts_room_holds_another_request() -> None:
    """Its siblings done, a container need not wait its own split's 19 s for each probe: each
    answer after which its split of what the account has left still holds a request adds one
    split to its pace, and one after which it does not halves it, before any 429 could."""
    clock = Clock()
    rate = RateBudget.for_account(20, 0, share=0.8, containers=5, clock=clock)

    def answered(remaining: str | None) -> float:
        reservation = rate.reserve(100)
        clock.now += rate.wait_for_turn(reservation, 0.0) or 0.0
        assert rate.wait_for_turn(reservation, 0.0) is None
        rate.resync({} if remaining is None else {"limit-requests": "20", "remaining-requests": remaining}, reservation)
        return rate.share.requests_per_minute

    assert [answered("19"), answered("18"), answered("17")] == pytest.approx([6.4, 9.6, 12.8])  # 17 x 0.16 >= 1
    assert answered("6") == pytest.approx(6.4)  # 6 x 0.16 < 1: the others are back
    assert answered(None) == pytest.approx(6.4)  # says nothing: the operator's limit is not probed by 429s


def test_a_learned_limit_the_answers_do_not_restate_speeds_up_while_the_account_takes_what_is_sent() -> None:
    """A provider that states its limit only in its 429s: the container starts at its split of the
    function's share and takes one more container's part with each answer the account accepted, up
    to the function's whole share (the other containers may be done); a 429 halves it again."""
    clock = Clock()
    rate = RateBudget.for_account(0, 0, share=0.8, containers=5, clock=clock)
    rate.resync({"limit-requests": "20", "remaining-requests": "0", "reset-requests": "1m0s"})  # a 429's
    assert rate.share.requests_per_minute == pytest.approx(3.2)  # 20 x 0.8 / 5

    paces = []
    for _ in range(5):
        answered = rate.reserve(100)
        clock.now += rate.wait_for_turn(answered, 0.0) or 0.0
        assert rate.wait_for_turn(answered, 0.0) is None
        rate.resync({}, answered)  # its answer: no x-ratelimit headers
        paces.append(rate.share.requests_per_minute)

    assert paces == pytest.approx([6.4, 9.6, 12.8, 16.0, 16.0])
    rate.hold(3.0)  # refused: the others are back, or the account had less room than thought
    assert rate.share.requests_per_minute == pytest.approx(8.0)


def test_a_header_older_than_one_followed_is_not_followed_but_its_request_is_no_longer_counted_open() -> None:
    """Two requests sent one after the other; the second's answer (which counts both) comes back
    first. The first's header, written before the second arrived, must not hand the second's
    request out again; the first is no longer open, though: the fresher header counted it."""
    clock = Clock()
    rate = RateBudget.for_account(0, 0, clock=clock)
    rate.resync({"limit-requests": "60", "remaining-requests": "60"})
    first = rate.reserve(1)
    assert rate.wait_for_turn(first, 0.0) is None
    clock.now += 0.01
    second = rate.reserve(1)
    assert rate.wait_for_turn(second, 0.0) is None

    rate.resync({"limit-requests": "60", "remaining-requests": "58"}, second)
    rate.resync({"limit-requests": "60", "remaining-requests": "59"}, first)

    waits = [rate.reserve(1).wait_s for _ in range(59)]
    assert waits[:58] == [0.0] * 58 and waits[58] > 0  # the account's 58, no more, no fewer


def test_a_request_that_gives_up_its_place_moves_up_only_the_turns_after_it() -> None:
    """Three wait in line; the second is not sent after all (its caller could not wait). The first
    keeps its turn (its cost is still to be refilled), the third's comes a place earlier."""
    rate, _ = budget(requests_per_minute=60, tokens_per_minute=math.inf)  # one request a second
    for _ in range(60):
        rate.reserve(1)
    first, second, third = (rate.reserve(1) for _ in range(3))

    second.cancel()

    assert rate.wait_for_turn(first, 0.0) == pytest.approx(1.0)
    assert rate.wait_for_turn(third, 0.0) == pytest.approx(2.0)
    assert rate.reserve(1).wait_s == pytest.approx(3.0)
