"""Spec: with the provider's limits known, every cohort is planned to be served before its first
slot: a cohort that fits its window starts at its generation hour; a larger one, or one queued
behind a large neighbour, starts whole hours earlier (for its next local date when it must);
one that cannot fit even at the longest lead says so."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from lambda_agents.nudges.fanout_starts import PACING_EFFICIENCY, CohortDemand, cohort_demands, plan_starts

FIVE_AM_TOKYO = datetime(2026, 11, 25, 20, 0, tzinfo=UTC)  # 05:00 on the 26th in Asia/Tokyo


def tokyo(users: int, *, window_minutes: int = 60, start: datetime = FIVE_AM_TOKYO) -> CohortDemand:
    return CohortDemand("Asia/Tokyo", "2026-11-26", users, start, start + timedelta(minutes=window_minutes))


def test_a_cohort_that_fits_its_window_starts_at_its_generation_hour() -> None:
    starts = plan_starts([tokyo(1_000)], plans_per_minute=100)
    start = starts[("Asia/Tokyo", "2026-11-26")]
    assert start.lead_hours == 0 and start.start == FIVE_AM_TOKYO and start.fits
    assert start.expected_done == FIVE_AM_TOKYO + timedelta(minutes=1_000 / (100 * PACING_EFFICIENCY))


def test_a_cohort_too_large_for_its_window_starts_the_hours_it_needs_earlier() -> None:
    # 30,000 users at 100 plans a minute (90 paced): 333 minutes for a 60-minute window: 5 hours earlier.
    start = plan_starts([tokyo(30_000)], plans_per_minute=100)[("Asia/Tokyo", "2026-11-26")]
    assert start.lead_hours == 5 and start.start == FIVE_AM_TOKYO - timedelta(hours=5)
    assert start.fits and start.expected_done <= FIVE_AM_TOKYO + timedelta(minutes=60)


def test_a_small_cohort_behind_a_large_one_is_started_before_it_and_each_has_the_whole_rate() -> None:
    early = CohortDemand("Asia/Seoul", "2026-11-26", 600, FIVE_AM_TOKYO - timedelta(hours=1), FIVE_AM_TOKYO)
    late = tokyo(9_000, window_minutes=150)  # 100 minutes of plans, within its own window
    starts = plan_starts([early, late], plans_per_minute=100)
    assert starts[late.key].lead_hours == 0
    # Seoul (same wall clock, an hour earlier in UTC here) must be done before Tokyo starts.
    assert starts[early.key].expected_done <= starts[late.key].start


def test_zones_on_one_offset_are_one_cohort_and_share_the_rate() -> None:
    alone = plan_starts([tokyo(4_000)], plans_per_minute=100)[("Asia/Tokyo", "2026-11-26")]
    seoul = CohortDemand("Asia/Seoul", "2026-11-26", 4_000, FIVE_AM_TOKYO, FIVE_AM_TOKYO + timedelta(minutes=60))
    together = plan_starts([tokyo(4_000), seoul], plans_per_minute=100)
    assert alone.lead_hours == 0
    assert together[seoul.key].lead_hours == together[("Asia/Tokyo", "2026-11-26")].lead_hours == 1


def test_a_cohort_beyond_the_longest_lead_starts_at_it_and_says_it_does_not_fit() -> None:
    start = plan_starts([tokyo(1_000_000)], plans_per_minute=100, max_lead=timedelta(hours=18))
    only = start[("Asia/Tokyo", "2026-11-26")]
    assert only.lead_hours == 18 and not only.fits


def test_an_empty_cohort_takes_no_time_and_holds_nobody_back() -> None:
    starts = plan_starts([tokyo(0)], plans_per_minute=1)
    assert starts[("Asia/Tokyo", "2026-11-26")].lead_hours == 0


@pytest.mark.parametrize("rate", [0, -5])
def test_a_rate_that_is_not_positive_is_refused(rate: float) -> None:
    with pytest.raises(ValueError, match="plans_per_minute"):
        plan_starts([tokyo(1)], plans_per_minute=rate)


def test_demands_cover_the_next_two_days_at_each_zones_wall_clock_hour() -> None:
    demands = cohort_demands(
        FIVE_AM_TOKYO, {"Asia/Tokyo": 10, "America/New_York": 20}, generation_hour=5, first_slot_minutes=360
    )
    tokyo_days = sorted(d.local_date for d in demands if d.zone == "Asia/Tokyo")
    assert tokyo_days == ["2026-11-25", "2026-11-26", "2026-11-27", "2026-11-28"]
    new_york = [d for d in demands if d.zone == "America/New_York"]
    assert all(d.default_start.astimezone(UTC).hour == 10 for d in new_york)  # 05:00 EST
    assert all(d.deadline - d.default_start == timedelta(hours=1) for d in demands)
    assert all(d.users == (10 if d.zone == "Asia/Tokyo" else 20) for d in demands)


def test_demands_need_an_aware_clock() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        cohort_demands(datetime(2026, 11, 25, 20), {}, generation_hour=5, first_slot_minutes=360)


def test_a_zone_half_an_hour_off_utc_starts_at_the_run_after_its_hour_and_has_less_window() -> None:
    run = datetime(2026, 11, 25, 20, 5, tzinfo=UTC)
    demands = cohort_demands(run, {"Asia/Kolkata": 10}, generation_hour=5, first_slot_minutes=360)
    today = next(d for d in demands if d.local_date == "2026-11-26")
    assert today.default_start == datetime(2026, 11, 26, 0, 5, tzinfo=UTC)  # 05:35 in Kolkata
    assert today.deadline - today.default_start == timedelta(minutes=25)
