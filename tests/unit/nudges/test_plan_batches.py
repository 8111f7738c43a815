"""The fan-out's Batch API path with in-memory ports: when a cohort is sent, that it is sent once,
which answers are stored, and when a late job is cancelled (``nudges.plan_batches``)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from lambda_agents.llm import ChatResponse
from lambda_agents.llm.batch_chain import BatchChain, BatchLink
from lambda_agents.llm.batches import BatchAnswer, BatchItem, BatchJobStatus, SubmitUnconfirmed
from lambda_agents.llm.errors import ProviderError, ProviderUnavailable, RequestRejected
from lambda_agents.llm.model_chain import Breaker
from lambda_agents.nudges.batch_answers import key_between, map_bounded, request_id, request_key, requested_user
from lambda_agents.nudges.cohort_batches import BatchRun, CohortBatch
from lambda_agents.nudges.generation import NudgeGenerationService, SlotSettings
from lambda_agents.nudges.plan_batches import PlanBatches
from lambda_agents.nudges.profile import UserProfile
from lambda_agents.nudges.records import ScheduleRecord
from lambda_agents.storage.dynamodb import StorageError, StorageThrottled

from tests.support.nudge_fakes import MemoryCohortBatches, MemorySchedules, MemoryUsers

from .conftest import reply, valid_answer

SLOTS = SlotSettings(schedule_map={"anxiety": ["07:00", "12:00", "21:00"], "procrastination": ["09:00"]})
# 20:10 in Tokyo on 2026-02-01: Tokyo's submit hour; its cohort is for 2026-02-02.
EVENING = datetime(2026, 2, 1, 11, 10, tzinfo=UTC)
# The cohort's cut-off: an hour before 05:00 in Tokyo on 2026-02-02.
CUTOFF = datetime(2026, 2, 1, 19, 0, tzinfo=UTC)


class MemoryBatchModel:
    """The port as the provider behaves (the fake server's rules, from OpenAI's documentation): a
    job starts ``validating``; only an ``in_progress`` job can be cancelled (else refused); the list
    shows every job with its metadata, newest first. ``lose_create_answer``: the job is made but
    the create call's answer is lost; ``unlisted``: jobs the list does not show yet (``list_lags``:
    every new one at first); ``failing``:
    the error every status call of that job raises; ``on_cancel``: what happens to a job as its
    cancel arrives (it may have moved on)."""

    def __init__(self, refuse: Exception | None = None) -> None:
        self.jobs: dict[str, list[BatchItem]] = {}
        self.metadata: dict[str, dict[str, str]] = {}
        self.states: dict[str, str] = {}
        self.answers_of: dict[str, list[BatchAnswer]] = {}
        self.cancelled: list[str] = []
        self.refuse = refuse
        self.lose_create_answer = False
        self.unlisted: set[str] = set()
        self.failing: dict[str, ProviderError] = {}
        self.on_cancel: Callable[[str], None] | None = None
        self.line_bytes = 1_000
        self.list_lags = False  # a new job is unlisted at first

    @property
    def model_name(self) -> str:
        return "memory"

    def request_bytes(self, item: BatchItem) -> int:
        return self.line_bytes

    def submit(self, items: Sequence[BatchItem], metadata: Mapping[str, str]) -> BatchJobStatus:
        if self.refuse is not None:
            raise self.refuse
        batch_id = f"batch-{len(self.jobs)}"
        self.jobs[batch_id] = list(items)
        self.metadata[batch_id] = dict(metadata)
        self.states[batch_id] = "validating"
        if self.list_lags:
            self.unlisted.add(batch_id)
        if self.lose_create_answer:
            raise SubmitUnconfirmed("the job may exist: request timed out")
        return self.status(batch_id)

    def status(self, batch_id: str) -> BatchJobStatus:
        if batch_id in self.failing:
            raise self.failing[batch_id]
        state = self.states[batch_id]
        return BatchJobStatus(batch_id, state, metadata=self.metadata[batch_id], created_at=1_769_900_000)  # type: ignore[arg-type]

    def answers(self, batch_id: str) -> Iterator[BatchAnswer]:
        return iter(self.answers_of.get(batch_id, []))

    def cancel(self, batch_id: str) -> BatchJobStatus:
        if self.on_cancel is not None:
            self.on_cancel(batch_id)
        if self.states[batch_id] != "in_progress":
            raise RequestRejected(f"request rejected (400): the batch is {self.states[batch_id]}")
        self.cancelled.append(batch_id)
        self.states[batch_id] = "cancelling"
        return self.status(batch_id)

    def jobs_since(self, created_after: int) -> list[BatchJobStatus]:
        return [
            BatchJobStatus(batch_id, self.states[batch_id], metadata=self.metadata[batch_id])  # type: ignore[arg-type]
            for batch_id in reversed(self.jobs)
            if batch_id not in self.unlisted
        ]

    def line(self, batch_id: str, user: str, response: ChatResponse | None, error: str | None = None) -> BatchAnswer:
        """The job's result line for ``user``'s request, under the ``custom_id`` the job sent for it."""
        [custom_id] = [item.custom_id for item in self.jobs[batch_id] if requested_user(item.custom_id) == user]
        return BatchAnswer(custom_id, response, error)


def profile(user_id: str, **overrides: Any) -> UserProfile:
    data = {"userId": user_id, "problems": ["anxiety"], "preferredLanguage": "en", "timezone": "Asia/Tokyo"}
    return UserProfile.model_validate({**data, **overrides})


def completed_job_of_three(batches: Any, model: MemoryBatchModel) -> None:
    """u1, u2 and u3's plans submitted in one job, then completed: u1's answer usable (150 tokens),
    u2's a slot short (150 tokens, unusable), u3's never made (expired before it: not billed)."""
    batches.run(EVENING)
    [batch_id] = model.jobs
    model.states[batch_id] = "completed"
    model.answers_of[batch_id] = [
        model.line(batch_id, "u1", reply(valid_answer([0, 1, 2]))),
        model.line(batch_id, "u2", reply(valid_answer([0, 1]))),
        model.line(batch_id, "u3", None, "batch_expired: not executed"),
    ]


def setup(  # type: ignore[no-untyped-def]
    *profiles: UserProfile,
    model: MemoryBatchModel | None = None,
    max_requests: int = 100,
    zones: Sequence[str] = ("Asia/Tokyo", "Europe/Paris"),
    schedules: MemorySchedules | None = None,
    store: MemoryCohortBatches | None = None,
):
    """The run as the function builds it: the storage adapters' errors are each job's trouble."""
    users = MemoryUsers(*profiles)
    schedules = schedules or MemorySchedules()
    clock = lambda: EVENING  # noqa: E731
    generation = NudgeGenerationService(users, schedules, None, slots=SLOTS, clock=clock)
    batches = PlanBatches(
        generation=generation,
        model=model or MemoryBatchModel(),
        users=users,
        store=store or MemoryCohortBatches(),
        generation_hour=5,
        max_requests=max_requests,
        zones=list(zones),
        workers=2,
        storage_errors=(StorageError,),
    )
    return batches, schedules, users


def test_a_zone_in_its_submit_hour_sends_its_next_day_cohort_once() -> None:
    batches, _, _ = setup(profile("u1"), profile("u2"), profile("paris", timezone="Europe/Paris"))

    first = batches.run(EVENING)
    second = batches.run(EVENING.replace(minute=25))

    [job] = first.submitted
    assert (job.zone, job.local_date, job.requests, job.cutoff) == ("Asia/Tokyo", "2026-02-02", 2, CUTOFF.isoformat())
    [items] = batches.model.jobs.values()  # type: ignore[attr-defined]
    assert sorted(requested_user(item.custom_id) for item in items) == ["u1", "u2"]  # Paris is not in its submit hour
    assert all(item.request.max_tokens > 0 and item.request.parameters.json_output is not None for item in items)
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

    assert first.refused == [("Asia/Tokyo 2026-02-02", "memory: provider error (503)")]
    assert second.submitted == [] and model.jobs == {}


def test_only_usable_answers_are_stored() -> None:
    model = MemoryBatchModel()
    batches, schedules, _ = setup(profile("u1"), profile("u2"), profile("u3"), model=model)
    completed_job_of_three(batches, model)

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
    model.answers_of[batch_id] = [model.line(batch_id, "u1", reply(valid_answer([0, 1, 2])))]

    run = batches.run(EVENING.replace(minute=40))

    assert run.collected == {"answer_unusable": 1} and schedules.records == {}


def test_a_job_running_at_its_cut_off_is_cancelled_once() -> None:
    model = MemoryBatchModel()
    batches, _, _ = setup(profile("u1"), model=model)
    batches.run(EVENING)
    [batch_id] = model.jobs
    model.states[batch_id] = "in_progress"

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


def test_a_cohort_whose_file_would_pass_the_providers_200_mb_is_sent_in_parts_within_it() -> None:
    """Three users of 80 MB lines each: two fit one job's file, the third needs a second job."""
    model = MemoryBatchModel()
    model.line_bytes = 80_000_000
    batches, _, _ = setup(profile("u1"), profile("u2"), profile("u3"), model=model)

    run = batches.run(EVENING)

    assert [(job.part, job.requests) for job in run.submitted] == [(0, 2), (1, 1)]


# -- a lost create answer -------------------------------------------------------------------------


def complete(model: MemoryBatchModel, batch_id: str, *users: str) -> None:
    model.states[batch_id] = "completed"
    model.answers_of[batch_id] = [model.line(batch_id, user, reply(valid_answer([0, 1, 2]))) for user in users]


def test_a_job_whose_create_answer_is_lost_is_found_by_its_claim_and_collected_once() -> None:
    model = MemoryBatchModel()
    model.lose_create_answer = True
    batches, schedules, _ = setup(profile("u1"), profile("u2"), model=model)

    first = batches.run(EVENING)
    [batch_id] = model.jobs
    complete(model, batch_id, "u1", "u2")
    model.lose_create_answer = False
    second = batches.run(EVENING + timedelta(minutes=30))
    third = batches.run(EVENING + timedelta(minutes=45))

    assert first.refused == [] and len(first.job_errors) == 1 and "may exist" in first.job_errors[0][1]
    [found] = first.recovered
    assert found.batch_id == batch_id and first.submitted == [found]
    assert model.metadata[batch_id] == {
        "cohort": "Asia/Tokyo 2026-02-02",
        "part": "0",
        "claim": str(found.claim),
        "model": "memory",
    }
    assert second.collected == {"generated": 2} and third.collected == {}
    assert set(schedules.records) == {("u1", "2026-02-02"), ("u2", "2026-02-02")}
    assert list(model.jobs) == [batch_id]  # never sent again


def test_a_lost_job_the_list_does_not_show_yet_is_looked_up_by_later_runs_and_cancelled_when_late() -> None:
    model = MemoryBatchModel()
    model.lose_create_answer = model.list_lags = True
    batches, _, _ = setup(profile("u1"), model=model)

    first = batches.run(EVENING)
    [batch_id] = model.jobs
    model.lose_create_answer = False
    model.unlisted.clear()  # the list shows it now, still running at the cohort's cut-off
    model.states[batch_id] = "in_progress"
    late = batches.run(CUTOFF + timedelta(minutes=5))

    assert first.submitted == [] and first.recovered == [] and first.unconfirmed == 1 and first.refused == []
    assert [job.batch_id for job in late.recovered] == [batch_id] and late.cancelled == [batch_id]
    assert list(model.jobs) == [batch_id]


def test_a_claimed_part_whose_job_never_shows_stays_open_and_is_never_sent_again() -> None:
    model = MemoryBatchModel()
    model.lose_create_answer = model.list_lags = True
    batches, _, _ = setup(profile("u1"), model=model)

    runs = [batches.run(EVENING + timedelta(minutes=15 * n)) for n in range(3)]

    assert [run.unconfirmed for run in runs] == [1, 1, 1]
    assert [len(run.job_errors) for run in runs] == [1, 0, 0]  # a look-up that finds nothing is no error
    assert len(model.jobs) == 1 and [run.submitted for run in runs] == [[], [], []]


# -- one job's trouble is its own ------------------------------------------------------------------

# 20:10 in Brisbane (UTC+10) and in Singapore (UTC+8) on 2026-02-01.
BRISBANE_EVENING = datetime(2026, 2, 1, 10, 10, tzinfo=UTC)
SINGAPORE_EVENING = datetime(2026, 2, 1, 12, 10, tzinfo=UTC)


def test_a_job_whose_status_call_always_fails_delays_only_itself() -> None:
    model = MemoryBatchModel()
    zones = ("Australia/Brisbane", "Asia/Singapore")
    batches, schedules, _ = setup(
        profile("bne", timezone="Australia/Brisbane"),
        profile("sin", timezone="Asia/Singapore"),
        model=model,
        zones=zones,
    )
    batches.run(BRISBANE_EVENING)
    [brisbane] = model.jobs
    model.failing[brisbane] = ProviderUnavailable("provider error (503)")

    between = batches.run(BRISBANE_EVENING + timedelta(minutes=15))
    evening = batches.run(SINGAPORE_EVENING)
    [singapore] = [batch_id for batch_id in model.jobs if batch_id != brisbane]
    complete(model, singapore, "sin")
    collected = batches.run(SINGAPORE_EVENING + timedelta(minutes=15))

    assert between.job_errors == [(brisbane, "provider error (503)")]
    assert [job.zone for job in evening.submitted] == ["Asia/Singapore"]
    assert evening.job_errors == [(brisbane, "provider error (503)")]
    assert collected.collected == {"generated": 1} and len(collected.job_errors) == 1
    assert set(schedules.records) == {("sin", "2026-02-02")}
    model.failing.clear()  # the provider answers again: the job is collected as any other
    complete(model, brisbane, "bne")
    assert batches.run(SINGAPORE_EVENING + timedelta(minutes=30)).collected == {"generated": 1}


def test_a_list_that_cannot_be_read_is_counted_and_the_other_jobs_go_on() -> None:
    model = MemoryBatchModel()
    batches, schedules, _ = setup(profile("u1"), model=model)
    batches.run(EVENING)
    [batch_id] = model.jobs
    complete(model, batch_id, "u1")
    batches.store.save(
        CohortBatch("Europe/Paris", "2026-02-02", 0, CUTOFF.isoformat(), claim="t", claimed_at=EVENING.isoformat())
    )

    def broken_list(created_after: int) -> list[BatchJobStatus]:
        raise ProviderUnavailable("provider error (500)")

    model.jobs_since = broken_list  # type: ignore[method-assign]
    run = batches.run(EVENING + timedelta(minutes=15))

    assert run.job_errors == [("the batch list of memory", "provider error (500)")] and run.unconfirmed == 1
    assert run.collected == {"generated": 1} and set(schedules.records) == {("u1", "2026-02-02")}


# -- only an in-progress job is cancelled ----------------------------------------------------------


@pytest.mark.parametrize("state", ["validating", "finalizing", "cancelling"])
def test_at_the_cut_off_a_job_that_is_not_in_progress_is_left_to_go_on(state: str) -> None:
    model = MemoryBatchModel()
    batches, _, _ = setup(profile("u1"), model=model)
    batches.run(EVENING)
    [batch_id] = model.jobs
    model.states[batch_id] = state

    run = batches.run(CUTOFF + timedelta(minutes=5))

    assert model.cancelled == [] and run.cancelled == [] and run.job_errors == [] and run.still_running == 1


def test_a_late_job_that_finishes_between_its_status_and_its_cancel_is_collected_without_an_error() -> None:
    model = MemoryBatchModel()
    batches, schedules, _ = setup(profile("u1"), model=model)
    batches.run(EVENING)
    [batch_id] = model.jobs
    model.states[batch_id] = "in_progress"
    model.on_cancel = lambda job: complete(model, job, "u1")

    run = batches.run(CUTOFF + timedelta(minutes=5))

    assert run.cancelled == [] and run.job_errors == [] and run.collected == {"generated": 1}
    assert set(schedules.records) == {("u1", "2026-02-02")}


def test_a_cancel_the_provider_refuses_while_the_job_runs_is_counted_and_tried_again() -> None:
    model = MemoryBatchModel()
    batches, _, _ = setup(profile("u1"), model=model)
    batches.run(EVENING)
    [batch_id] = model.jobs
    model.states[batch_id] = "in_progress"

    def refuse(job: str) -> None:
        raise ProviderUnavailable("provider error (500)")

    model.on_cancel = refuse
    refused = batches.run(CUTOFF + timedelta(minutes=5))
    model.on_cancel = None
    retried = batches.run(CUTOFF + timedelta(minutes=20))

    assert refused.job_errors == [(batch_id, "provider error (500)")] and refused.cancelled == []
    assert retried.cancelled == [batch_id] and retried.job_errors == []


# -- answers as they arrive ----------------------------------------------------------------------


def test_map_bounded_takes_items_only_as_its_results_are_used() -> None:
    pulled: list[int] = []

    def items() -> Iterator[int]:
        for number in range(1_000):
            pulled.append(number)
            yield number

    results = map_bounded(lambda number: number * 2, items(), workers=2)
    first = [next(results) for _ in range(3)]
    results.close()

    assert first == [0, 2, 4] and len(pulled) <= 3 + 2 * 2


def test_a_run_out_of_time_stops_reading_the_jobs_answers_and_leaves_the_job_open() -> None:
    model = MemoryBatchModel()
    batches, _, _ = setup(profile("u1"), model=model)
    batches.run(EVENING)
    [batch_id] = model.jobs
    model.states[batch_id] = "completed"
    read: list[str] = []
    closed: list[bool] = []

    def answers(job: str) -> Iterator[BatchAnswer]:
        try:
            for number in range(10_000):
                read.append(f"u{number}")
                yield model.line(job, "u1", reply(valid_answer([0, 1, 2])))
        finally:
            closed.append(True)

    model.answers = answers  # type: ignore[method-assign]
    run = batches.run(EVENING + timedelta(minutes=30), time_left_s=lambda: 5.0)

    assert run.collected == {} and closed == [True] and len(read) < 100
    assert batches.store.open_batches(["2026-02-02"])[0].state == "submitted"  # collected by a later run


def test_a_collected_jobs_tokens_are_counted_once_used_or_not() -> None:
    # The Batch API bills every answer it made; the dashboard's cost counts them (NudgeBatchTokens)
    # when the job is collected, and a job left open by a run out of time is read again by the next.
    model = MemoryBatchModel()
    batches, _, _ = setup(profile("u1"), profile("u2"), profile("u3"), model=model)
    completed_job_of_three(batches, model)  # 150 tokens stored, 150 unusable (billed all the same), u3's not billed
    late = EVENING.replace(minute=40)

    out_of_time = batches.run(late, time_left_s=lambda: 5.0)
    collected = batches.run(late.replace(minute=55))
    again = batches.run(late.replace(hour=late.hour + 1))

    assert out_of_time.tokens == 0  # the job stays open: counted by the run that collects it
    assert collected.tokens == 300
    assert again.tokens == 0


# -- through the model chain ----------------------------------------------------------------------


class NamedBatchModel(MemoryBatchModel):
    """One model of the chain, with its own jobs and list (its own endpoint and account)."""

    def __init__(self, name: str, refuse: Exception | None = None) -> None:
        super().__init__(refuse)
        self.name = name
        self.submits = 0
        self.lists = 0

    @property
    def model_name(self) -> str:
        return self.name

    def submit(self, items: Sequence[BatchItem], metadata: Mapping[str, str]) -> BatchJobStatus:
        self.submits += 1
        return super().submit(items, metadata)

    def jobs_since(self, created_after: int) -> list[BatchJobStatus]:
        self.lists += 1
        return super().jobs_since(created_after)


def chain_setup(*links: BatchLink, store: MemoryCohortBatches | None = None):  # type: ignore[no-untyped-def]
    users = MemoryUsers(profile("u1"), profile("u2"))
    schedules = MemorySchedules()
    generation = NudgeGenerationService(users, schedules, None, slots=SLOTS, clock=lambda: EVENING)
    batches = PlanBatches(
        generation=generation,
        model=BatchChain(links),
        users=users,
        store=store or MemoryCohortBatches(),
        generation_hour=5,
        zones=["Asia/Tokyo"],
        workers=2,
    )
    return batches, schedules


def test_a_cohort_the_first_model_refuses_is_sent_to_the_next_model_of_the_chain_and_on_record_there() -> None:
    first = NamedBatchModel("gpt-4o", refuse=RequestRejected("request rejected (400): model not available for batch"))
    second = NamedBatchModel("gpt-4o-mini")
    store = MemoryCohortBatches()
    batches, _ = chain_setup(BatchLink(first), BatchLink(second), store=store)

    run = batches.run(EVENING)

    [job] = run.submitted
    assert job.model == "gpt-4o-mini" and job.batch_id in second.jobs and first.jobs == {}
    assert run.refused == [] and [(model, part) for part, model, _ in run.passed_on] == [
        ("gpt-4o", "Asia/Tokyo 2026-02-02 part 0")
    ]
    assert store.items[("Asia/Tokyo", "2026-02-02", 0)].model == "gpt-4o-mini"


def test_a_job_at_the_second_model_is_collected_there_and_its_plans_record_that_model() -> None:
    first = NamedBatchModel("gpt-4o", refuse=ProviderUnavailable("provider error (429): batch queue full"))
    second = NamedBatchModel("gpt-4o-mini")
    batches, schedules = chain_setup(BatchLink(first), BatchLink(second))
    batches.run(EVENING)
    [batch_id] = second.jobs
    second.states[batch_id] = "completed"
    second.answers_of[batch_id] = [
        second.line(batch_id, user, replace(reply(valid_answer([0, 1, 2])), model="gpt-4o-mini-2024-07-18"))
        for user in ("u1", "u2")
    ]

    run = batches.run(EVENING.replace(minute=40))

    assert run.collected == {"generated": 2} and run.job_errors == []
    assert {record.model for record in schedules.records.values()} == {"gpt-4o-mini-2024-07-18"}
    assert first.jobs == {}  # its status was never asked of the first model


def test_a_model_whose_breaker_is_open_is_passed_over_without_a_call() -> None:
    first = NamedBatchModel("gpt-4o")
    resting = Breaker("gpt-4o", failures_to_open=1, cooldown_s=600)
    resting.failed(ProviderUnavailable("provider error (500)"))
    second = NamedBatchModel("gpt-4o-mini")
    batches, _ = chain_setup(BatchLink(first, resting), BatchLink(second))

    [job] = batches.run(EVENING).submitted

    assert first.submits == 0 and job.model == "gpt-4o-mini"


def test_a_lost_create_answer_is_never_sent_to_another_model_and_is_looked_for_where_it_was_sent() -> None:
    first = NamedBatchModel("gpt-4o")
    first.lose_create_answer = True
    first.list_lags = True  # not listed yet: the part stays claimed at the first model
    second = NamedBatchModel("gpt-4o-mini")
    batches, _ = chain_setup(BatchLink(first), BatchLink(second))

    run = batches.run(EVENING)
    first.unlisted.clear()
    later = batches.run(EVENING + timedelta(minutes=15))

    assert run.submitted == [] and run.unconfirmed == 1
    assert second.submits == 0 and second.lists == 0  # never paid twice: the second model never saw it
    [found] = later.recovered
    assert found.model == "gpt-4o" and found.batch_id in first.jobs and len(first.jobs) == 1


def test_when_every_model_refuses_the_cohort_is_left_to_the_synchronous_path_and_not_sent_again() -> None:
    first = NamedBatchModel("gpt-4o", refuse=RequestRejected("request rejected (400): no"))
    second = NamedBatchModel("gpt-4o-mini", refuse=RequestRejected("request rejected (403): no batch"))
    batches, _ = chain_setup(BatchLink(first), BatchLink(second))

    run = batches.run(EVENING)
    again = batches.run(EVENING.replace(minute=25))

    assert run.refused == [
        ("Asia/Tokyo 2026-02-02", "gpt-4o: request rejected (400): no; gpt-4o-mini: request rejected (403): no batch")
    ]
    assert again.submitted == again.refused == [] and first.submits == second.submits == 1


def test_a_job_on_record_at_a_model_the_chain_no_longer_has_is_that_jobs_error_and_the_others_go_on() -> None:
    store = MemoryCohortBatches()
    first = NamedBatchModel("gpt-4o")
    batches, _ = chain_setup(BatchLink(first), store=store)
    batches.run(EVENING)
    part = store.items[("Asia/Tokyo", "2026-02-02", 0)]
    store.change(replace(part, model="retired-model"), was="submitted")

    run = batches.run(EVENING.replace(minute=40))

    [(_, why)] = run.job_errors
    assert why == "the job is at retired-model, which is no longer a model of the chain"


def test_a_job_over_the_providers_limits_gives_back_the_breakers_trial_so_the_next_cohort_may_try() -> None:
    clock = [0.0]
    breaker = Breaker("gpt-4o", failures_to_open=1, cooldown_s=60, clock=lambda: clock[0])
    breaker.failed(ProviderUnavailable("provider error (500)"))
    clock[0] = 61.0  # past the cool-down: the next call is the trial
    first = NamedBatchModel("gpt-4o", refuse=ValueError("a batch job's file holds at most 200000000 bytes"))
    batches, _ = chain_setup(BatchLink(first, breaker))

    run = batches.run(EVENING)

    assert first.submits == 1 and len(run.refused) == 1
    assert breaker.allows()  # the trial was given back: not stuck as running


# -- only the job's own requests, each once ---------------------------------------------------------


def test_a_line_for_a_request_the_job_never_sent_stores_nothing_and_is_counted() -> None:
    """A London user's id, or another cohort's request id for a user of this one: neither is a
    request this job sent, so nobody is given a plan made for someone else's day or zone."""
    model = MemoryBatchModel()
    batches, schedules, _ = setup(
        profile("u1"), profile("u2"), profile("london", timezone="Europe/London"), model=model
    )
    batches.run(EVENING)
    [batch_id] = model.jobs
    model.states[batch_id] = "completed"
    model.answers_of[batch_id] = [
        model.line(batch_id, "u1", reply(valid_answer([0, 1, 2]))),
        BatchAnswer("london", reply(valid_answer([0, 1, 2]))),
        BatchAnswer(request_id("another-cohorts-claim", "u2"), reply(valid_answer([0, 1, 2]))),
    ]

    run = batches.run(EVENING.replace(minute=40))

    assert set(schedules.records) == {("u1", "2026-02-02")}
    assert run.collected == {"generated": 1} and run.unusable == {"unknown_request": 2}
    assert run.tokens == 3 * 150  # the provider bills what it made, ours or not


def test_an_unreadable_line_is_counted_as_unusable_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    model = MemoryBatchModel()
    batches, _, _ = setup(profile("u1"), model=model)
    batches.run(EVENING)
    [batch_id] = model.jobs
    model.states[batch_id] = "completed"
    model.answers_of[batch_id] = [
        BatchAnswer("", None, "unreadable_line: not a result line (118 characters)"),
        model.line(batch_id, "u1", reply(valid_answer([0, 1, 2]))),
    ]

    run = batches.run(EVENING.replace(minute=40))

    assert run.unusable == {"unreadable_line": 1} and run.collected == {"generated": 1}
    [logged] = [record for record in caplog.records if getattr(record, "why", None) == "unreadable_line"]
    assert logged.batchId == batch_id  # type: ignore[attr-defined]


def test_a_duplicated_line_is_taken_once_and_its_tokens_counted_once() -> None:
    model = MemoryBatchModel()
    batches, _, _ = setup(profile("u1"), profile("u2"), model=model)
    batches.run(EVENING)
    [batch_id] = model.jobs
    model.states[batch_id] = "completed"
    twice = model.line(batch_id, "u1", reply(valid_answer([0, 1, 2])))
    model.answers_of[batch_id] = [twice, model.line(batch_id, "u2", reply(valid_answer([0, 1, 2]))), twice]

    run = batches.run(EVENING.replace(minute=40))

    assert run.collected == {"generated": 2} and run.unusable == {"duplicate_line": 1}
    assert run.tokens == 2 * 150


def test_a_job_sent_before_request_ids_existed_is_collected_by_user_id() -> None:
    model = MemoryBatchModel()
    store = MemoryCohortBatches()
    batches, schedules, _ = setup(profile("u1"), model=model, store=store)
    batches.run(EVENING)
    [batch_id] = model.jobs
    part = store.items[("Asia/Tokyo", "2026-02-02", 0)]
    store.items[("Asia/Tokyo", "2026-02-02", 0)] = replace(part, signed_ids=False)  # as such a job's record reads
    complete_with_user_ids = [BatchAnswer("u1", reply(valid_answer([0, 1, 2])))]
    model.states[batch_id], model.answers_of[batch_id] = "completed", complete_with_user_ids

    run = batches.run(EVENING.replace(minute=40))

    assert run.collected == {"generated": 1} and set(schedules.records) == {("u1", "2026-02-02")}


# -- a storage error is one job's trouble -----------------------------------------------------------


class FlakySchedules(MemorySchedules):
    """DynamoDB failing (after its retries) for the writes of ``failing`` users."""

    def __init__(self, *failing: str) -> None:
        super().__init__()
        self.failing = set(failing)

    def create(self, record: ScheduleRecord) -> bool:
        if record.user_id in self.failing:
            raise StorageThrottled("DynamoDB throttled the request (ProvisionedThroughputExceededException)")
        return super().create(record)


def test_a_storage_error_while_storing_one_answer_is_that_jobs_trouble_and_the_job_is_read_again_next_run() -> None:
    model = MemoryBatchModel()
    schedules = FlakySchedules("bne-2")
    zones = ("Australia/Brisbane", "Asia/Singapore")
    brisbane = [profile(user, timezone="Australia/Brisbane") for user in ("bne-1", "bne-2", "bne-3")]
    batches, _, _ = setup(
        *brisbane, profile("sin", timezone="Asia/Singapore"), model=model, zones=zones, schedules=schedules
    )
    batches.run(BRISBANE_EVENING)
    batches.run(SINGAPORE_EVENING)
    brisbane_job, singapore_job = model.jobs
    complete(model, brisbane_job, "bne-1", "bne-2", "bne-3")
    complete(model, singapore_job, "sin")

    troubled = batches.run(SINGAPORE_EVENING + timedelta(minutes=15))
    schedules.failing.clear()
    again = batches.run(SINGAPORE_EVENING + timedelta(minutes=30))
    after = batches.run(SINGAPORE_EVENING + timedelta(minutes=45))

    [(job, why)] = troubled.job_errors
    assert job == brisbane_job and "1 answer(s) could not be stored" in why and "throttled" in why
    # the other answers of that job, and the other job, are stored; the troubled job's tokens wait
    assert troubled.collected == {"generated": 3, "storage_failed": 1}
    assert troubled.tokens == 150  # Singapore's, collected whole
    assert again.collected == {"generated": 1, "already_generated": 2} and again.job_errors == []
    assert again.tokens == 3 * 150 and after.collected == {} and after.tokens == 0
    assert set(schedules.records) == {(user, "2026-02-02") for user in ("bne-1", "bne-2", "bne-3", "sin")}


class UnreadableSchedules(MemorySchedules):
    """DynamoDB failing (after its retries) for the reads of ``failing`` users' recent days."""

    def __init__(self, *failing: str) -> None:
        super().__init__()
        self.failing = set(failing)

    def recent(self, user_id: str, local_date: str, days: int) -> list[dict[str, Any]]:
        if user_id in self.failing:
            raise StorageThrottled("DynamoDB throttled the request (ProvisionedThroughputExceededException)")
        return super().recent(user_id, local_date, days)


def test_a_storage_error_while_reading_one_user_leaves_that_user_to_the_synchronous_path_and_sends_the_rest() -> None:
    model = MemoryBatchModel()
    batches, _, _ = setup(profile("u1"), profile("u2"), profile("u3"), model=model, schedules=UnreadableSchedules("u2"))

    run = batches.run(EVENING)

    [batch_id] = model.jobs
    assert sorted(requested_user(item.custom_id) for item in model.jobs[batch_id]) == ["u1", "u3"]
    assert [job.requests for job in run.submitted] == [2] and run.skipped_users == {"storage_failed": 1}


class FlakyBatchRecords(MemoryCohortBatches):
    def __init__(self, failing_zone: str) -> None:
        super().__init__()
        self.failing_zone = failing_zone

    def claim(self, batch: CohortBatch) -> bool:
        if batch.zone == self.failing_zone:
            raise StorageError("DynamoDB is unavailable (InternalServerError)")
        return super().claim(batch)


def test_a_storage_error_on_one_cohort_leaves_the_others_to_be_sent() -> None:
    model = MemoryBatchModel()
    store = FlakyBatchRecords("Asia/Seoul")  # Seoul and Tokyo share an hour
    batches, _, _ = setup(
        profile("seoul", timezone="Asia/Seoul"),
        profile("tokyo"),
        model=model,
        zones=("Asia/Seoul", "Asia/Tokyo"),
        store=store,
    )

    run = batches.run(EVENING)
    store.failing_zone = ""
    retried = batches.run(EVENING.replace(minute=25))

    assert run.job_errors == [("Asia/Seoul 2026-02-02", "DynamoDB is unavailable (InternalServerError)")]
    assert [job.zone for job in run.submitted] == ["Asia/Tokyo"]
    assert [job.zone for job in retried.submitted] == ["Asia/Seoul"]  # its claim was never written


# -- overlapping runs ----------------------------------------------------------------------------


def test_two_overlapping_runs_collect_a_job_once_and_count_its_tokens_once() -> None:
    """EventBridge may deliver a schedule twice: the second run reads the same open job while the
    first is still storing its answers."""
    model = MemoryBatchModel()
    store = MemoryCohortBatches()
    first, _, _ = setup(profile("u1"), profile("u2"), model=model, store=store)
    second = replace(first)
    first.run(EVENING)
    [batch_id] = model.jobs
    complete(model, batch_id, "u1", "u2")
    later = EVENING.replace(minute=40)
    runs: list[BatchRun] = []
    answers = model.answers

    def answers_while_the_other_run_goes(job: str) -> Iterator[BatchAnswer]:
        if not runs:
            model.answers = answers  # type: ignore[method-assign]
            runs.append(second.run(later))  # the other delivery, to the end, while this one reads
        return answers(job)

    model.answers = answers_while_the_other_run_goes  # type: ignore[method-assign]
    overlapped = first.run(later)
    model.answers = answers  # type: ignore[method-assign]
    next_run = first.run(later.replace(minute=55))

    [other] = runs
    assert other.tokens + overlapped.tokens == 2 * 150
    assert other.collected["generated"] + overlapped.collected["generated"] == 2
    assert next_run.collected == {} and next_run.tokens == 0  # not reopened
    assert store.items[("Asia/Tokyo", "2026-02-02", 0)].state == "collected"


def test_a_run_that_finds_a_lost_job_after_another_run_collected_it_does_not_reopen_it() -> None:
    model = MemoryBatchModel()
    model.lose_create_answer = model.list_lags = True
    store = MemoryCohortBatches()
    first, _, _ = setup(profile("u1"), model=model, store=store)
    second = replace(first)
    first.run(EVENING)  # the create answer is lost and the list does not show the job yet
    [batch_id] = model.jobs
    model.lose_create_answer = False
    model.unlisted.clear()
    complete(model, batch_id, "u1")
    runs: list[BatchRun] = []
    jobs_since = model.jobs_since

    def listed_while_the_other_run_goes(created_after: int) -> list[BatchJobStatus]:
        listed = jobs_since(created_after)
        if not runs:
            model.jobs_since = jobs_since  # type: ignore[method-assign]
            runs.append(second.run(EVENING.replace(minute=40)))  # finds it, collects it
        return listed

    model.jobs_since = listed_while_the_other_run_goes  # type: ignore[method-assign]
    overlapped = first.run(EVENING.replace(minute=40))
    model.jobs_since = jobs_since  # type: ignore[method-assign]
    next_run = first.run(EVENING.replace(minute=55))

    [other] = runs
    assert [job.batch_id for job in other.recovered] == [batch_id] and other.tokens == 150
    assert overlapped.recovered == [] and overlapped.tokens == 0
    assert next_run.collected == {} and next_run.tokens == 0
    assert store.items[("Asia/Tokyo", "2026-02-02", 0)].state == "collected"


# -- the provider's queue quota ------------------------------------------------------------------

OVER_QUOTA = BatchJobStatus(
    "",
    "failed",
    errors=("token_limit_exceeded: Enqueued token limit reached for gpt-4o.",),
    error_codes=("token_limit_exceeded",),
)


def fail_for_the_quota(model: MemoryBatchModel, batch_id: str) -> None:
    model.states[batch_id] = "failed"
    status = model.status

    def status_over_quota(job: str) -> BatchJobStatus:
        found = status(job)
        return replace(OVER_QUOTA, batch_id=job, metadata=found.metadata) if job == batch_id else found

    model.status = status_over_quota  # type: ignore[method-assign]


def test_a_job_failed_for_the_providers_queue_quota_is_asked_of_the_next_model_with_its_own_users() -> None:
    first, second = NamedBatchModel("gpt-4o"), NamedBatchModel("gpt-4o-mini")
    users = MemoryUsers(*(profile(f"u{n}") for n in range(5)))
    schedules, store = MemorySchedules(), MemoryCohortBatches()
    batches = PlanBatches(
        generation=NudgeGenerationService(users, schedules, None, slots=SLOTS, clock=lambda: EVENING),
        model=BatchChain([BatchLink(first), BatchLink(second)]),
        users=users,
        store=store,
        generation_hour=5,
        max_requests=2,
        zones=["Asia/Tokyo"],
        workers=2,
    )
    batches.run(EVENING)
    _, part_1, _ = first.jobs
    fail_for_the_quota(first, part_1)

    moved = batches.run(EVENING.replace(minute=25))

    [job] = moved.submitted
    assert (job.part, job.model, job.requests) == (1, "gpt-4o-mini", 2)
    [items] = second.jobs.values()
    part_users = sorted(requested_user(item.custom_id) for item in first.jobs[part_1])
    assert sorted(requested_user(item.custom_id) for item in items) == part_users  # the part's own users
    assert moved.refused == [] and [(part, model) for part, model, _ in moved.passed_on] == [
        ("Asia/Tokyo 2026-02-02 part 1", "gpt-4o")
    ]
    assert "token_limit_exceeded" in moved.passed_on[0][2]
    assert second.metadata[job.batch_id or ""]["model"] == "gpt-4o-mini"
    complete(second, str(job.batch_id), *part_users)
    collected = batches.run(EVENING.replace(minute=40))
    assert collected.collected == {"generated": 2}
    assert sorted(user for user, _ in schedules.records) == part_users


def test_a_parts_stored_key_range_holds_exactly_its_users_and_names_none_of_them() -> None:
    model = MemoryBatchModel()
    store = MemoryCohortBatches()
    users = [f"user-{n:02d}" for n in range(9)]
    batches, _, _ = setup(*(profile(user) for user in users), model=model, max_requests=2, store=store)

    batches.run(EVENING)

    parts = sorted(store.items.values(), key=lambda part: part.part)
    assert len(parts) == 5 and parts[0].keys_from == "" and parts[-1].keys_below == ""
    for part in parts:
        low, high = str(part.keys_from), str(part.keys_below)
        in_range = {user for user in users if request_key(str(part.claim), user) >= low}
        in_range = {user for user in in_range if not high or request_key(str(part.claim), user) < high}
        sent = {requested_user(item.custom_id) for item in model.jobs[str(part.batch_id)]}
        assert in_range == sent, part.part
        assert not any(user in low + high for user in users)


@pytest.mark.parametrize(("below", "above", "bound"), [("3a", "3b", "3b"), ("3a7f", "3b01", "3b"), ("1f", "a0", "a")])
def test_a_bound_between_two_keys_is_the_shortest_start_of_the_upper_one_above_the_lower(
    below: str, above: str, bound: str
) -> None:
    assert key_between(below, above) == bound and below < bound <= above


def test_a_job_failed_for_the_quota_with_no_model_after_it_is_left_to_the_synchronous_path() -> None:
    model = MemoryBatchModel()
    batches, _, _ = setup(profile("u1"), model=model)
    batches.run(EVENING)
    [batch_id] = model.jobs
    fail_for_the_quota(model, batch_id)

    run = batches.run(EVENING.replace(minute=25))
    again = batches.run(EVENING.replace(minute=40))

    assert run.refused == [
        ("Asia/Tokyo 2026-02-02", "memory: token_limit_exceeded: Enqueued token limit reached for gpt-4o.")
    ]
    assert len(model.jobs) == 1 and again.refused == [] and again.submitted == []
