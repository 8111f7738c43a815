"""Spec: the capacity model runs the product's own scheduler, pacing and deferrals on a clock
that jumps: a cohort the share can serve is served by the model at the share's rate; one the
queue cannot redeliver falls back where the share runs out; the scheduler's planned starts move a
cohort too large for its window to the evening before, and that makes it ready in time."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, date, datetime

import pytest

from devtools.fanout_plan import DEPLOYED
from devtools.fanout_sim import (
    MIXES,
    Account,
    Cohort,
    Workload,
    day_cohorts,
    main,
    scheduler_rate,
    simulate,
)

DAY = date(2026, 11, 26)
NEVER = float("inf")
SMALL_ACCOUNT = Account(tokens_per_minute=60_000, requests_per_minute=5_000)


def one_cohort(users: int) -> list[Cohort]:
    return [Cohort("bench", 0.0, (NEVER,) * users, NEVER)]


def test_a_cohort_within_a_minute_of_the_share_is_served_at_once_by_the_model() -> None:
    day = simulate(one_cohort(20), Account(tokens_per_minute=2_000_000), containers=2)
    cohort = day.cohorts[0]
    assert cohort.by_model == 20 and cohort.fallbacks == 0 and day.deliveries == 20
    assert cohort.drain_minutes is not None and cohort.drain_minutes < 2  # one plan's time: ~1 minute


def test_when_the_share_binds_the_cohort_drains_at_its_rate_without_fallbacks() -> None:
    workload = Workload(prompt_tokens=985)
    day = simulate(one_cohort(150), SMALL_ACCOUNT, workload=workload, containers=5)
    cohort = day.cohorts[0]
    share_rate = 0.8 * 60_000 / workload.cost_on_arrival  # plans a minute
    assert cohort.by_model == 150 and cohort.fallbacks == 0
    assert cohort.drain_minutes == pytest.approx(150 / share_rate, rel=0.15)
    assert day.deliveries > 150  # some users waited for their turn through the queue
    assert day.input_tokens == day.requests * 985


def test_a_queue_that_does_not_redeliver_gives_the_overflow_the_fallback() -> None:
    no_redelivery = replace(DEPLOYED, max_receives=1)
    day = simulate(
        one_cohort(150), SMALL_ACCOUNT, workload=Workload(prompt_tokens=985), containers=5, deployed=no_redelivery
    )
    assert day.fallbacks > 0 and day.by_model > 0 and day.by_model + day.fallbacks == 150
    assert day.deliveries == 150


def test_the_scheduler_queues_each_zone_at_its_generation_hour_or_earlier_when_planned() -> None:
    at_hour = day_cohorts(100_000, MIXES["japan"], DAY)
    assert [c.queued_at for c in at_hour] == [-4 * 3600 + 300]  # 20:05 UTC on the 25th: 05:05 in Tokyo
    planned = day_cohorts(100_000, MIXES["japan"], DAY, plans_per_minute=scheduler_rate(Account(2_000_000)))
    assert planned[0].queued_at < at_hour[0].queued_at - 3 * 3600
    assert len(planned[0].first_slots) == 100_000


def test_zones_on_one_offset_are_queued_by_the_same_run() -> None:
    cohorts = {c.name: c for c in day_cohorts(1_000, MIXES["global"], DAY)}
    assert cohorts["Europe/Berlin"].queued_at == cohorts["Africa/Lagos"].queued_at  # both UTC+1 in November
    assert cohorts["America/New_York"].queued_at > cohorts["Asia/Tokyo"].queued_at


def test_a_planned_start_makes_a_cohort_too_large_for_its_window_ready_by_its_first_slot() -> None:
    account = Account(tokens_per_minute=200_000, requests_per_minute=10_000)
    at_hour = simulate(day_cohorts(6_000, MIXES["japan"], DAY), account)
    planned = simulate(day_cohorts(6_000, MIXES["japan"], DAY, plans_per_minute=scheduler_rate(account)), account)
    assert at_hour.ready_in_time < 0.8 * at_hour.users
    assert planned.ready_in_time == planned.users and planned.by_model == planned.users


def test_first_slots_fall_on_the_users_local_morning() -> None:
    cohort = day_cohorts(500, MIXES["japan"], DAY)[0]
    origin = datetime(2026, 11, 26, tzinfo=UTC).timestamp()
    hours = {datetime.fromtimestamp(origin + s, UTC).hour for s in cohort.first_slots}
    assert hours <= {21, 22, 23}  # 06:00-08:30 in Tokyo


def test_the_command_prints_a_day_and_refuses_a_day_without_users(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--users", "200", "--mix", "global"]) == 0
    out = capsys.readouterr().out
    assert "| Europe/Berlin |" in out and "through the Batch API" in out
    with pytest.raises(SystemExit) as stopped:
        main(["--users", "0"])
    assert stopped.value.code == 2
