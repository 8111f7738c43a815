"""The per-user generation service with in-memory ports (docs/nudges.md#scheduled-generation)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import pytest
from lambda_agents.llm.offline_model import OfflineModel
from lambda_agents.llm.prices import PRICES
from lambda_agents.llm.speeds import DEFAULT_PRIOR
from lambda_agents.nudges import commander
from lambda_agents.nudges.commander import commander_prompt_version
from lambda_agents.nudges.generation import GenerationJob, LocalDateOutOfRange, NudgeGenerationService, SlotSettings
from lambda_agents.nudges.profile import UserProfile
from lambda_agents.nudges.records import ProfileGone, ScheduleRecord

from tests.support.nudge_fakes import MemorySchedules, MemoryUsers
from tests.unit.llm.scripted_model import ScriptedModel

from .conftest import reply, valid_answer

SLOTS = SlotSettings(schedule_map={"anxiety": ["07:00", "12:00", "21:00"]})
JOB = GenerationJob(userId="u1", localDate="2026-02-02")


def service(model: object, *profiles: UserProfile, schedules: MemorySchedules | None = None):  # type: ignore[no-untyped-def]
    store = schedules or MemorySchedules()
    clock = lambda: datetime(2026, 2, 1, 20, 0, tzinfo=UTC)  # noqa: E731
    return NudgeGenerationService(
        MemoryUsers(*profiles),
        store,
        model,
        slots=SLOTS,
        clock=clock,
        sleep=lambda _: None,  # type: ignore[arg-type]
    ), store


def profile(**overrides: object) -> UserProfile:
    data = {"userId": "u1", "problems": ["anxiety"], "preferredLanguage": "ja", "timezone": "Asia/Tokyo"}
    return UserProfile.model_validate({**data, **overrides})


def test_a_user_gets_one_nudge_per_slot_and_the_schedule_keeps_the_audit() -> None:
    model = ScriptedModel(reply(valid_answer([0, 1, 2])))
    svc, store = service(model, profile())
    outcome = svc.generate(JOB)
    assert outcome.status == "generated" and outcome.slot_count == 3 and outcome.nudges_enabled == 3
    record = store.records[("u1", "2026-02-02")]
    assert [s["localTime"] for s in record.slot_table] == ["07:00", "12:00", "21:00"]
    assert record.fallback_used is False and record.model == "scripted"
    assert record.attempts[0]["finish_reason"] == "stop" and record.usage["totalTokens"] == 150
    assert len(record.agent_raw_output["appNudges"]) == 3


def test_a_second_run_for_the_same_local_date_makes_no_llm_call() -> None:
    model = ScriptedModel(reply(valid_answer([0, 1, 2])))
    svc, _ = service(model, profile())
    svc.generate(JOB)
    assert svc.generate(JOB).status == "already_generated"
    assert len(model.requests) == 1


def test_the_fallback_path_stores_the_reason_and_disabled_posts() -> None:
    model = ScriptedModel(reply(None, refusal="no"))
    svc, store = service(model, profile())
    outcome = svc.generate(JOB)
    assert outcome.fallback_used and outcome.fallback_reason == "refusal" and outcome.nudges_enabled == 3
    record = store.records[("u1", "2026-02-02")]
    assert all(not post.enabled for post in record.posts())
    assert {post.platform for post in record.posts()} == {"tiktok", "x"}


def test_the_grounding_carries_profile_language_app_version_and_recent_days() -> None:
    model = ScriptedModel(reply(valid_answer([0, 1, 2])), reply(valid_answer([0, 1, 2])))
    svc, _ = service(model, profile(appVersion="2.3.1"))
    svc.generate(JOB)
    svc.generate(GenerationJob(userId="u1", localDate="2026-02-03"))
    prompt = model.requests[1].messages[1]["content"]
    assert '"appVersion": "2.3.1"' in prompt and '"preferredLanguage": "ja"' in prompt
    assert '"localDate": "2026-02-02"' in prompt and "Put the phone down" in prompt
    assert model.requests[1].hints.language == "ja"


@pytest.mark.parametrize(
    ("profiles", "status"),
    [
        ((), "skipped_unknown_user"),
        ((profile(nudgesEnabled=False),), "skipped_disabled"),
        ((profile(problems=["unknown"]),), "skipped_no_slots"),
    ],
)
def test_users_without_work_make_no_llm_call(profiles: tuple[UserProfile, ...], status: str) -> None:
    model = ScriptedModel()
    svc, store = service(model, *profiles)
    assert svc.generate(JOB).status == status
    assert store.records == {}


class DeletedMeanwhile(MemorySchedules):
    """The user deleted their nudge data while the model answered: the write is refused."""

    def create(self, record: ScheduleRecord) -> bool:
        raise ProfileGone(record.user_id)


def test_given_the_user_deleted_their_data_during_the_run_then_nothing_is_stored_and_the_outcome_says_so() -> None:
    svc, store = service(ScriptedModel(reply(valid_answer([0, 1, 2]))), profile(), schedules=DeletedMeanwhile())
    outcome = svc.generate(JOB)
    assert (outcome.status, outcome.nudges_enabled, outcome.attempts) == ("skipped_profile_deleted", 0, 1)
    assert store.records == {}


def test_with_the_offline_model_15_slots_give_15_nudges() -> None:
    many = SlotSettings(schedule_map={"p": [f"{h:02d}:00" for h in range(6, 24)]}, max_slots=15)
    svc = NudgeGenerationService(
        MemoryUsers(profile(problems=["p"], preferredLanguage="en")),
        MemorySchedules(),
        OfflineModel(),
        slots=many,
        clock=lambda: datetime(2026, 2, 1, 20, 0, tzinfo=UTC),
    )
    outcome = svc.generate(JOB)
    assert (outcome.slot_count, outcome.nudges_enabled, outcome.fallback_used) == (15, 15, False)


def test_a_malformed_job_names_the_field() -> None:
    with pytest.raises(ValueError, match="localDate"):
        GenerationJob.model_validate({"userId": "u1", "localDate": "02/02/2026"})


def test_language_other_than_ja_falls_back_to_en_and_timezones_are_checked() -> None:
    assert profile(preferredLanguage="fr").preferred_language == "en"
    assert profile(preferredLanguage="ja-JP").preferred_language == "ja"
    with pytest.raises(ValueError, match="timezone"):
        profile(timezone="Mars/Olympus")


@pytest.mark.parametrize(
    ("local_date", "generated"),
    [
        ("2026-01-31", True),  # the user's today (Tokyo 2026-02-02 05:00) minus two days: a late redelivery
        ("2026-02-03", True),
        ("2026-01-30", False),
        ("2026-02-04", False),
        ("0001-01-01", False),  # date arithmetic on it used to overflow
        ("9999-12-31", False),
    ],
)
def test_a_local_date_far_from_the_users_today_is_refused_before_any_read_or_llm_call(
    local_date: str, generated: bool
) -> None:
    model = ScriptedModel(*([reply(valid_answer([0, 1, 2]))] if generated else []))
    svc, store = service(model, profile())
    job = GenerationJob(userId="u1", localDate=local_date)
    if generated:
        assert svc.generate(job).status == "generated"
        return
    with pytest.raises(LocalDateOutOfRange, match=r"outside 2026-01-31\.\.2026-02-03.*2026-02-02 in Asia/Tokyo"):
        svc.generate(job)
    assert store.records == {} and model.requests == []


# -- deferral: a run the clock or the provider's rate limit stopped comes back later --------------


def test_given_a_rate_limit_on_an_earlier_delivery_then_the_run_is_deferred_by_the_retry_after_and_nothing_stored() -> (
    None
):
    from lambda_agents.llm.errors import RateLimited
    from lambda_agents.nudges.generation import GenerationDeferred

    model = ScriptedModel(*(RateLimited("429", retry_after_s=20.0) for _ in range(3)))
    svc, store = service(model, profile())
    with pytest.raises(GenerationDeferred) as deferred:
        svc.generate(JOB, may_defer=True)
    assert deferred.value.reason == "rate_limit" and deferred.value.retry_in_s == pytest.approx(23.0)
    assert store.records == {}


def test_given_every_model_resting_the_run_is_deferred_until_the_first_may_be_tried_without_a_fallback() -> None:
    from lambda_agents.llm.model_chain import ModelsResting
    from lambda_agents.nudges.generation import GenerationDeferred

    svc, store = service(ScriptedModel(ModelsResting("every model is resting", 12.0)), profile())
    with pytest.raises(GenerationDeferred) as deferred:
        svc.generate(JOB, may_defer=True)
    assert deferred.value.reason == "models_resting" and deferred.value.retry_in_s == pytest.approx(12 * 1.1 + 1)
    assert store.records == {}


def test_given_a_deadline_on_an_earlier_delivery_then_the_run_is_deferred_with_a_growing_backoff() -> None:
    from lambda_agents.llm.policy import Deadline
    from lambda_agents.nudges.generation import GenerationDeferred

    # At a real model's pace the engine starts no attempt it cannot finish in 0.5 s: no call is made.
    model = ScriptedModel(speed=DEFAULT_PRIOR)
    svc, store = service(model, profile())
    waits = []
    for delivery in (1, 2, 3):
        with pytest.raises(GenerationDeferred) as deferred:
            svc.generate(JOB, Deadline.after(0.5), may_defer=True, delivery=delivery)
        waits.append(deferred.value.retry_in_s)
    assert waits == [15.0, 30.0, 60.0] and store.records == {} and model.requests == []


def test_given_the_last_delivery_then_the_run_out_of_time_stores_the_fallback() -> None:
    from lambda_agents.llm.policy import Deadline

    svc, store = service(ScriptedModel(speed=DEFAULT_PRIOR), profile())  # a real model's pace: 0.5 s is too little
    outcome = svc.generate(JOB, Deadline.after(0.5), may_defer=False)
    assert outcome.fallback_used and outcome.fallback_reason == "deadline" and outcome.nudges_enabled == 3
    assert ("u1", "2026-02-02") in store.records


def test_given_a_refusal_then_the_fallback_is_stored_even_when_a_redelivery_would_come() -> None:
    """Only the clock and the rate limit defer: a refusal or a broken answer is not fixed by waiting."""
    svc, _ = service(ScriptedModel(reply(None, refusal="no")), profile())
    assert svc.generate(JOB, may_defer=True).fallback_reason == "refusal"


def test_a_stored_plan_carries_its_model_prompt_version_tokens_and_cost_fallbacks_included() -> None:
    priced = replace(reply(valid_answer([0, 1, 2])), model="gpt-4o-mini")
    svc, store = service(ScriptedModel(priced), profile())
    outcome = svc.generate(JOB)
    account = store.records[("u1", "2026-02-02")].account
    mini = PRICES["gpt-4o-mini"]
    assert account == {
        "model": "gpt-4o-mini",
        "promptVersion": commander_prompt_version(),
        "promptTokens": 100,
        "cachedTokens": 0,
        "completionTokens": 50,
        "billing": "standard",
        "costUsd": pytest.approx((100 * mini.input + 50 * mini.output) / 1_000_000),
        "attempts": 1,
    }
    assert outcome.as_dict()["costUsd"] == account["costUsd"]  # what the run report sums

    refused = replace(reply(None, refusal="no"), model="gpt-4o-mini")
    svc, store = service(ScriptedModel(refused), profile())
    svc.generate(JOB)
    fallback = store.records[("u1", "2026-02-02")]
    assert fallback.fallback_used and fallback.account is not None
    assert (fallback.account["promptTokens"], fallback.account["attempts"]) == (100, 1)  # billed though refused


def test_the_commanders_prompt_version_is_stable_and_follows_its_instructions(monkeypatch: pytest.MonkeyPatch) -> None:
    version = commander_prompt_version()
    assert version == commander_prompt_version()
    commander_prompt_version.cache_clear()
    monkeypatch.setattr(commander.inspect, "getsource", lambda function: "You are a different Commander.")
    try:
        assert commander_prompt_version() != version
    finally:
        commander_prompt_version.cache_clear()
