"""Spec: the hourly run queues each due cohort's users once. Without the provider's limits a zone
is due at its generation hour (today's behaviour); with them each cohort is queued at the first
run at or after its planned start, marked, and never queued again, even when its start moves."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from lambda_agents.nudges.scheduling import NudgeScheduler, first_slot_minutes
from lambda_agents.nudges.slots import DEFAULT_SCHEDULE_MAP

from functions.nudge_scheduler.app import SchedulerSettings
from tests.support.nudge_fakes import MemoryCohortMarks

RUN = datetime(2026, 11, 25, 20, 5, tzinfo=UTC)  # 05:05 on the 26th in Tokyo


class Users:
    def __init__(self, counts: dict[str, int]) -> None:
        self.counts = counts

    def count_in_timezone(self, timezone: str) -> int:
        return self.counts.get(timezone, 0)

    def pages_in_timezone(self, timezone: str) -> Iterator[list[dict[str, Any]]]:
        users = [{"userId": f"{timezone}-{n}"} for n in range(self.counts.get(timezone, 0))]
        for start in range(0, len(users), 500):
            yield users[start : start + 500]


class Queue:
    def __init__(self) -> None:
        self.jobs: list[dict[str, str]] = []

    def send(self, jobs: list[dict[str, str]]) -> int:
        self.jobs.extend(jobs)
        return len(jobs)


def scheduler(
    counts: dict[str, int], plans_per_minute: float | None, marks: MemoryCohortMarks | None = None
) -> NudgeScheduler:
    return NudgeScheduler(
        users=Users(counts),
        queue=Queue(),
        marks=marks if marks is not None else MemoryCohortMarks(),
        generation_hour=5,
        catch_up_hours=1,
        plans_per_minute=plans_per_minute,
        first_slot_minutes=first_slot_minutes(DEFAULT_SCHEDULE_MAP),
        zones=list(counts),
    )


def dates(run_scheduler: NudgeScheduler) -> set[tuple[str, str]]:
    queue = run_scheduler.queue
    assert isinstance(queue, Queue)
    return {(job["userId"].rsplit("-", 1)[0], job["localDate"]) for job in queue.jobs}


def test_without_limits_a_zone_is_queued_at_its_generation_hour_for_that_day() -> None:
    plain = scheduler({"Asia/Tokyo": 3, "America/New_York": 2}, plans_per_minute=None)
    run = plain.run(RUN)
    assert run.queued == 3 and dates(plain) == {("Asia/Tokyo", "2026-11-26")}
    assert plain.marks is not None and not plain.marks.queued("Asia/Tokyo", "2026-11-26")  # nothing to remember


def test_with_limits_a_cohort_that_fits_is_queued_at_its_generation_hour_once() -> None:
    planned = scheduler({"Asia/Tokyo": 3}, plans_per_minute=100)
    assert planned.run(RUN - timedelta(hours=1)).queued == 0
    assert planned.run(RUN).queued == 3
    assert planned.run(RUN + timedelta(minutes=30)).queued == 0  # a retried run: marked
    assert dates(planned) == {("Asia/Tokyo", "2026-11-26")}


def test_with_limits_a_cohort_too_large_for_its_window_is_queued_hours_earlier() -> None:
    # 30,000 users at 100 plans a minute: ~5.6 hours of plans for a 55-minute window (first slot 06:00).
    planned = scheduler({"Asia/Tokyo": 30_000}, plans_per_minute=100)
    runs = [planned.run(RUN - timedelta(hours=hours)) for hours in range(8, -1, -1)]
    started = [index for index, run in enumerate(runs) if run.queued]
    assert len(started) == 1 and runs[started[0]].queued == 30_000
    lead = 8 - started[0]
    assert 5 <= lead <= 6 and runs[started[0]].cohorts[0].lead_hours == lead
    assert not runs[started[0]].not_fitting


def test_a_start_that_moves_earlier_after_its_hour_passed_is_queued_at_the_next_run() -> None:
    marks = MemoryCohortMarks()
    small = scheduler({"Asia/Tokyo": 100}, plans_per_minute=100, marks=marks)
    assert small.run(RUN - timedelta(hours=1)).queued == 0  # fits its window: its hour has not come
    # Signups: it now needs to start an hour earlier, at the run that has just passed.
    grown = scheduler({"Asia/Tokyo": 9_000}, plans_per_minute=100, marks=marks)
    assert grown.run(RUN).queued == 9_000
    assert grown.run(RUN + timedelta(minutes=30)).queued == 0


def test_a_cohort_that_cannot_fit_is_queued_at_the_longest_lead_and_reported() -> None:
    planned = scheduler({"Asia/Tokyo": 500_000}, plans_per_minute=100)
    first = next(run for hours in range(24, -1, -1) if (run := planned.run(RUN - timedelta(hours=hours))).queued)
    assert first.cohorts[0].lead_hours == 18
    assert [demand.zone for demand, _ in first.not_fitting] == ["Asia/Tokyo"]


def test_the_earliest_slot_of_the_map_is_every_plans_deadline() -> None:
    assert first_slot_minutes(DEFAULT_SCHEDULE_MAP) == 6 * 60
    assert first_slot_minutes({"late": ["21:00", "09:15"]}) == 9 * 60 + 15


def test_the_schedulers_settings_need_the_marks_table_once_the_limits_are_known() -> None:
    base = {"USERS_TABLE": "users", "NUDGE_QUEUE_URL": "https://queue"}
    assert SchedulerSettings.model_validate(base).plans_per_minute() is None
    with pytest.raises(ValueError, match="SCHEDULES_TABLE is required"):
        SchedulerSettings.model_validate({**base, "OPENAI_TOKENS_PER_MINUTE": "2000000"})
    planned = SchedulerSettings.model_validate(
        {**base, "OPENAI_TOKENS_PER_MINUTE": "2000000", "OPENAI_RATE_LIMIT_SHARE": "0.8", "SCHEDULES_TABLE": "s"}
    )
    assert planned.plans_per_minute() == 0.8 * 2_000_000 / (1_500 + 4_095)
