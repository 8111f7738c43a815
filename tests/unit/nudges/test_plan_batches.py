"""The fan-out's Batch API path with in-memory ports: when a cohort is sent, that it is sent once,
which answers are stored, and when a late job is cancelled (``nudges.plan_batches``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from lambda_agents.llm.batches import BatchAnswer, BatchItem, BatchJobStatus
from lambda_agents.llm.errors import ProviderUnavailable
from lambda_agents.nudges.generation import NudgeGenerationService, SlotSettings
from lambda_agents.nudges.plan_batches import PlanBatches
from lambda_agents.nudges.profile import UserProfile

from tests.support.nudge_fakes import MemoryCohortBatches, MemorySchedules, MemoryUsers

from .conftest import reply, valid_answer

SLOTS = SlotSettings(schedule_map={"anxiety": ["07:00", "12:00", "21:00"], "procrastination": ["09:00"]})
# 20:10 in Tokyo on 2026-02-01: Tokyo's submit hour; its cohort is for 2026-02-02.
EVENING = datetime(2026, 2, 1, 11, 10, tzinfo=UTC)
# The cohort's cut-off: an hour before 05:00 in Tokyo on 2026-02-02.
CUTOFF = datetime(2026, 2, 1, 19, 0, tzinfo=UTC)


class MemoryBatchModel:
    def __init__(self, refuse: Exception | None = None) -> None:
        self.jobs: dict[str, list[BatchItem]] = {}
        self.states: dict[str, str] = {}
        self.answers_of: dict[str, list[BatchAnswer]] = {}
        self.cancelled: list[str] = []
        self.refuse = refuse

    @property
    def model_name(self) -> str:
        return "memory"

    def submit(self, items: Sequence[BatchItem], metadata: Mapping[str, str]) -> BatchJobStatus:
        if self.refuse is not None:
            raise self.refuse
        batch_id = f"batch-{len(self.jobs)}"
        self.jobs[batch_id] = list(items)
        self.states[batch_id] = "in_progress"
        return BatchJobStatus(batch_id, "in_progress", total=len(items))

    def status(self, batch_id: str) -> BatchJobStatus:
        return BatchJobStatus(batch_id, self.states[batch_id])  # type: ignore[arg-type]

    def answers(self, batch_id: str) -> list[BatchAnswer]:
        return self.answers_of.get(batch_id, [])

    def cancel(self, batch_id: str) -> BatchJobStatus:
        self.cancelled.append(batch_id)
        self.states[batch_id] = "cancelling"
        return self.status(batch_id)


def profile(user_id: str, **overrides: Any) -> UserProfile:
    data = {"userId": user_id, "problems": ["anxiety"], "preferredLanguage": "en", "timezone": "Asia/Tokyo"}
    return UserProfile.model_validate({**data, **overrides})


def setup(*profiles: UserProfile, model: MemoryBatchModel | None = None, max_requests: int = 100):  # type: ignore[no-untyped-def]
    users = MemoryUsers(*profiles)
    schedules = MemorySchedules()
    clock = lambda: EVENING  # noqa: E731
    generation = NudgeGenerationService(users, schedules, None, slots=SLOTS, clock=clock)
    batches = PlanBatches(
        generation=generation,
        model=model or MemoryBatchModel(),
        users=users,
        store=MemoryCohortBatches(),
        generation_hour=5,
        max_requests=max_requests,
        zones=["Asia/Tokyo", "Europe/Paris"],
        workers=2,
    )
    return batches, schedules, users


def test_a_zone_in_its_submit_hour_sends_its_next_day_cohort_once() -> None:
    batches, _, _ = setup(profile("u1"), profile("u2"), profile("paris", timezone="Europe/Paris"))

    first = batches.run(EVENING)
    second = batches.run(EVENING.replace(minute=25))

    [job] = first.submitted
    assert (job.zone, job.local_date, job.requests, job.cutoff) == ("Asia/Tokyo", "2026-02-02", 2, CUTOFF.isoformat())
    [items] = batches.model.jobs.values()  # type: ignore[attr-defined]
    assert sorted(item.custom_id for item in items) == ["u1", "u2"]  # Paris is not in its submit hour
    assert all(item.request.max_tokens > 0 and item.request.json_output is not None for item in items)
    assert second.submitted == [] and len(batches.model.jobs) == 1  # type: ignore[attr-defined]


def test_a_cohort_larger_than_a_job_is_sent_in_parts() -> None:
    batches, _, _ = setup(*(profile(f"u{n}") for n in range(5)), max_requests=2)

    run = batches.run(EVENING)

    assert [(job.part, job.requests) for job in run.submitted] == [(0, 2), (1, 2), (2, 1)]


def test_a_user_without_slots_is_not_asked_for() -> None:
    batches, _, _ = setup(profile("u1"), profile("u2", problems=["unknown_problem"]))

    run = batches.run(EVENING)

    assert run.submitted[0].requests == 1 and run.skipped_users == {"skipped_no_slots": 1}


def test_a_refused_upload_leaves_the_cohort_claimed_and_to_the_synchronous_path() -> None:
    model = MemoryBatchModel(refuse=ProviderUnavailable("provider error (503)"))
    batches, _, _ = setup(profile("u1"), model=model)

    first = batches.run(EVENING)
    model.refuse = None
    second = batches.run(EVENING.replace(minute=25))

    assert first.refused == [("Asia/Tokyo 2026-02-02", "provider error (503)")]
    assert second.submitted == [] and model.jobs == {}


def test_only_usable_answers_are_stored() -> None:
    model = MemoryBatchModel()
    batches, schedules, _ = setup(profile("u1"), profile("u2"), profile("u3"), model=model)
    batches.run(EVENING)
    [batch_id] = model.jobs
    model.states[batch_id] = "completed"
    model.answers_of[batch_id] = [
        BatchAnswer("u1", reply(valid_answer([0, 1, 2]))),
        BatchAnswer("u2", reply(valid_answer([0, 1]))),  # a slot short
        BatchAnswer("u3", None, "batch_expired: not executed"),
    ]

    run = batches.run(EVENING.replace(minute=40))

    assert run.collected == {"generated": 1, "answer_unusable": 1, "answer_missing": 1}
    assert run.unusable == {"validation": 1, "batch_expired": 1}
    assert set(schedules.records) == {("u1", "2026-02-02")}
    assert schedules.records[("u1", "2026-02-02")].fallback_used is False
    assert batches.run(EVENING.replace(minute=55)).collected == {}  # collected once


def test_an_answer_to_a_profile_that_changed_since_the_evening_is_not_stored() -> None:
    model = MemoryBatchModel()
    batches, schedules, users = setup(profile("u1"), model=model)
    batches.run(EVENING)
    [batch_id] = model.jobs
    users.put(profile("u1", problems=["anxiety", "procrastination"]))  # a bigger slot table now
    model.states[batch_id] = "completed"
    model.answers_of[batch_id] = [BatchAnswer("u1", reply(valid_answer([0, 1, 2])))]

    run = batches.run(EVENING.replace(minute=40))

    assert run.collected == {"answer_unusable": 1} and schedules.records == {}


def test_a_job_running_at_its_cut_off_is_cancelled_once() -> None:
    model = MemoryBatchModel()
    batches, _, _ = setup(profile("u1"), model=model)
    batches.run(EVENING)

    before = batches.run(CUTOFF - timedelta(minutes=1))
    at = batches.run(CUTOFF)
    after = batches.run(CUTOFF + timedelta(minutes=15))

    assert before.cancelled == [] and len(at.cancelled) == 1 and after.cancelled == []
    assert after.still_running == 1  # "cancelling": collected once the provider has stopped it


def test_a_cohort_whose_cut_off_has_passed_is_not_sent() -> None:
    """Sent at 23:10 for a generation hour of 00:00: the cut-off (23:00) has passed, so the
    synchronous path makes the day and no job is paid for."""
    batches, _, _ = setup(profile("u1"))
    batches.submit_hour, batches.generation_hour = 23, 0

    run = batches.run(datetime(2026, 2, 1, 14, 10, tzinfo=UTC))  # 23:10 in Tokyo

    assert run.submitted == [] and batches.model.jobs == {}  # type: ignore[attr-defined]


def test_a_collected_jobs_tokens_are_counted_once_used_or_not() -> None:
    # The Batch API bills every answer it made; the dashboard's cost counts them (NudgeBatchTokens)
    # when the job is collected, and a job left open by a run out of time is read again by the next.
    model = MemoryBatchModel()
    batches, _, _ = setup(profile("u1"), profile("u2"), profile("u3"), model=model)
    batches.run(EVENING)
    [batch_id] = model.jobs
    model.states[batch_id] = "completed"
    model.answers_of[batch_id] = [
        BatchAnswer("u1", reply(valid_answer([0, 1, 2]))),  # 150 tokens, stored
        BatchAnswer("u2", reply(valid_answer([0, 1]))),  # 150 tokens, unusable: billed all the same
        BatchAnswer("u3", None, "batch_expired: not executed"),  # never made: not billed
    ]
    late = EVENING.replace(minute=40)

    out_of_time = batches.run(late, time_left_s=lambda: 5.0)
    collected = batches.run(late.replace(minute=55))
    again = batches.run(late.replace(hour=late.hour + 1))

    assert out_of_time.tokens == 0  # the job stays open: counted by the run that collects it
    assert collected.tokens == 300
    assert again.tokens == 0
