"""Class: a user with slots always gets the day's nudges (everything around the Commander is caught:
docs/nudges.md#exactly-n-nudges). Whatever the model port raises, on whichever call (an engine error, or a bug in an
adapter: KeyError, TypeError, a custom exception), the schedule is stored with one enabled nudge
per slot and no post to publish; the record is not redelivered. Only storage failures, which a
redelivery can fix, reach the caller, and those before the model call cost no model call."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lambda_agents.llm import ChatRequest, ChatResponse
from lambda_agents.llm.errors import ProviderUnavailable, RateLimited, RequestRejected
from lambda_agents.nudges.generation import GenerationJob, NudgeGenerationService, SlotSettings
from lambda_agents.nudges.profile import UserProfile
from lambda_agents.storage.dynamodb import StorageError, StorageThrottled

from tests.support.logs import captured_logs
from tests.support.nudge_fakes import MemorySchedules, MemoryUsers

from .conftest import reply, valid_answer

SLOTS = SlotSettings(schedule_map={"anxiety": ["07:00", "12:00", "21:00"]})
JOB = GenerationJob(userId="u1", localDate="2026-02-02")
PROFILE = UserProfile.model_validate(
    {"userId": "u1", "problems": ["anxiety"], "preferredLanguage": "ja", "timezone": "Asia/Tokyo"}
)


class AdapterBug(Exception):
    pass


FAILURES = st.sampled_from(
    [
        KeyError("choices"),
        TypeError("'NoneType' object is not subscriptable"),
        AttributeError("usage"),
        ValueError("bad header"),
        AdapterBug("boom"),
        RuntimeError("event loop closed"),
        ProviderUnavailable("500"),
        RateLimited("429", 1.0),
        RequestRejected("400"),
    ]
)


class FailingModel:
    """Answers valid JSON until call ``fail_at``, then raises ``error`` on every call."""

    def __init__(self, error: Exception, fail_at: int) -> None:
        self.error, self.fail_at, self.calls = error, fail_at, 0

    @property
    def model_name(self) -> str:
        return "failing"

    def complete(self, request: ChatRequest) -> ChatResponse:
        self.calls += 1
        if self.calls >= self.fail_at:
            raise self.error
        return reply('{"not": "the schema"}')


def service(model: Any, schedules: Any) -> NudgeGenerationService:
    return NudgeGenerationService(
        MemoryUsers(PROFILE),
        schedules,
        model,
        slots=SLOTS,
        clock=lambda: datetime(2026, 2, 1, 20, 0, tzinfo=UTC),
        sleep=lambda _: None,
    )


@settings(max_examples=60, deadline=None)
@given(FAILURES, st.integers(min_value=1, max_value=3))
def test_property_whatever_the_model_port_raises_the_user_gets_every_slot_s_nudge(
    error: Exception, fail_at: int
) -> None:
    store = MemorySchedules()
    outcome = service(FailingModel(error, fail_at), store).generate(JOB)
    assert outcome.status == "generated" and outcome.fallback_used and outcome.nudges_enabled == 3
    record = store.records[("u1", "2026-02-02")]
    assert all(nudge["enabled"] for nudge in record.agent_raw_output["appNudges"])
    assert not any(post.enabled for post in record.posts())


def test_given_an_adapter_bug_then_the_fallback_reason_names_it_and_the_stack_trace_is_logged() -> None:
    store = MemorySchedules()
    with captured_logs() as buffer:
        outcome = service(FailingModel(AdapterBug("boom"), 1), store).generate(JOB)
    assert outcome.fallback_reason == "unexpected_error"
    assert store.records[("u1", "2026-02-02")].fallback_reason == "unexpected_error"
    (line,) = [json.loads(line) for line in buffer.getvalue().splitlines() if "commander failed" in line]
    assert line["error_type"] == "AdapterBug" and "Traceback" in line["exception"]


class BrokenStore(MemorySchedules):
    def __init__(self, fail: str, error: Exception) -> None:
        super().__init__()
        self.fail, self.error = fail, error

    def recent(self, user_id: str, local_date: str, days: int) -> list[dict[str, Any]]:
        if self.fail == "recent":
            raise self.error
        return super().recent(user_id, local_date, days)

    def create(self, record: Any) -> bool:
        if self.fail == "create":
            raise self.error
        return super().create(record)


class CountingModel:
    def __init__(self) -> None:
        self.calls = 0

    @property
    def model_name(self) -> str:
        return "counting"

    def complete(self, request: ChatRequest) -> ChatResponse:
        self.calls += 1
        return reply(valid_answer([0, 1, 2]))


@pytest.mark.parametrize("error", [StorageThrottled("throttled"), StorageError("unavailable")])
def test_given_storage_failing_before_the_model_call_then_the_record_is_redelivered_without_a_model_call(
    error: Exception,
) -> None:
    model = CountingModel()
    with pytest.raises(type(error)):
        service(model, BrokenStore("recent", error)).generate(JOB)
    assert model.calls == 0


def test_given_storage_failing_after_the_model_answered_then_the_failure_reaches_the_caller_for_a_redelivery() -> None:
    # The answer cannot be stored anywhere: redelivery is the only way not to lose the day.
    with pytest.raises(StorageError):
        service(CountingModel(), BrokenStore("create", StorageError("unavailable"))).generate(JOB)


@pytest.mark.parametrize(
    "stored",
    [
        {"localDate": "2026-02-01", "agentRawOutput": "legacy text"},
        {"localDate": "2026-02-01", "agentRawOutput": {"appNudges": ["x", None, {"hook": 3, "enabled": True}]}},
        {"localDate": "2026-02-01", "agentRawOutput": {"tiktokPosts": {"caption": "c"}, "xPosts": [1]}},
    ],
)
def test_given_a_malformed_past_day_then_today_is_still_generated(stored: dict[str, Any]) -> None:
    class LegacyStore(MemorySchedules):
        def recent(self, user_id: str, local_date: str, days: int) -> list[dict[str, Any]]:
            return [stored]

    store = LegacyStore()
    outcome = service(CountingModel(), store).generate(JOB)
    assert outcome.status == "generated" and not outcome.fallback_used
