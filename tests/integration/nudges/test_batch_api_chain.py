"""Spec (docs/nudges.md#the-batch-api-path-through-the-model-chain): the Batch API path goes through
the model chain. A cohort the first model's provider refuses goes to the next model of the chain
that has a batch endpoint; the job is on record at that model, collected from it, and the plans it
made record it. A model marked without a batch endpoint is never sent a job.

Two fake servers play two providers (the real openai client, DynamoDB on moto): the first refuses
the key, the second takes the job.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from lambda_agents.llm.offline_model import sample
from lambda_agents.llm.schema import model_schema
from lambda_agents.nudges.batch_answers import requested_user
from lambda_agents.nudges.schema import create_agent_output_model
from lambda_agents.nudges.slots import DEFAULT_SCHEDULE_MAP, build_slot_table
from lambda_agents.storage.nudges import DynamoScheduleRepository

from devtools.fake_openai import BatchScript, FakeOpenAIServer, Reply
from functions.nudge_batches import app as batches_app

from .conftest import Aws, context, use_fake_openai

pytestmark = pytest.mark.integration

ZONE = ZoneInfo("Asia/Tokyo")
PROBLEMS = ["staying_up_late"]
SLOTS = len(build_slot_table(PROBLEMS, DEFAULT_SCHEDULE_MAP))
USERS = ["u1", "u2"]
SCALE = 0.001
SECOND_MODEL = "gpt-4o-mini"


def tomorrow() -> str:
    return (datetime.now(ZONE).date() + timedelta(days=1)).isoformat()


def run_batches() -> dict[str, Any]:
    at = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    event = {"source": "aws.events", "detail-type": "Scheduled Event", "time": at}
    return batches_app.lambda_handler(event, context("NudgeBatchFunction", 900))  # type: ignore[no-any-return]


def two_providers(about: str, **first: Any) -> Any:
    """A fixture: the Batch run due now for USERS, on a first model whose fake provider takes
    ``first``'s options, with a second model that takes the job as its fallback."""

    @pytest.fixture
    def fixture(aws: Aws, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[FakeOpenAIServer, FakeOpenAIServer]]:
        with FakeOpenAIServer(time_scale=SCALE, **first) as failing, FakeOpenAIServer(time_scale=SCALE) as taking:
            use_fake_openai(monkeypatch, failing.base_url)
            fallback = [{"model": SECOND_MODEL, "baseUrl": taking.base_url}]
            monkeypatch.setenv("OPENAI_FALLBACK_MODELS", json.dumps(fallback))
            hour = datetime.now(ZONE).hour
            monkeypatch.setenv("NUDGE_BATCH_SUBMIT_HOUR", str(hour))
            monkeypatch.setenv("NUDGE_GENERATION_HOUR", str((hour + 3) % 24))
            monkeypatch.setenv("NUDGE_FANOUT_MODE", "batch_then_sync")
            batches_app.dependencies.reset()
            for user in USERS:
                aws.add_user(userId=user, problems=PROBLEMS)
            yield failing, taking
            batches_app.dependencies.reset()

    fixture.__doc__ = about
    return fixture


providers = two_providers(
    "The first model's provider refuses the key; the fallback model's takes the job.",
    api_keys=frozenset({"a-key-we-do-not-have"}),
)
quota_providers = two_providers(
    "The first model's account has room for almost no enqueued tokens; the fallback model's has.",
    enqueued_token_quota=1_000,
)


def test_a_cohort_the_first_provider_refuses_is_made_by_the_next_model_and_its_plans_record_it(
    aws: Aws, providers: tuple[FakeOpenAIServer, FakeOpenAIServer]
) -> None:
    refusing, taking = providers
    plan = json.dumps(sample(model_schema(create_agent_output_model(SLOTS)), "en"))
    answers = {user: Reply(content=plan) for user in USERS}
    taking.batches.script_next(BatchScript(running_s=300, answers=answers, key_of=requested_user))

    sent = run_batches()

    [job] = sent["submitted"]
    assert job["model"] == SECOND_MODEL and job["requests"] == len(USERS)
    [passed] = sent["passedOn"]
    assert passed["model"] != SECOND_MODEL and "401" in passed["why"]
    assert sent["refused"] == [] and refusing.batches.jobs == {} and len(taking.batches.jobs) == 1
    [uploaded] = [f for f in taking.batches.files.values() if f.purpose == "batch"]
    assert {json.loads(line)["body"]["model"] for line in uploaded.data.decode().splitlines()} == {SECOND_MODEL}

    time.sleep(300.2 * SCALE + 0.05)
    collected = run_batches()

    assert collected["collected"] == {"generated": len(USERS)} and collected["jobErrors"] == []
    for user in USERS:
        schedule = DynamoScheduleRepository("SchedulesTable").get(user, tomorrow())
        assert schedule is not None and schedule["fallbackUsed"] is False and schedule["model"] == SECOND_MODEL
    assert [record.batch for record in taking.billing] == [True, True] and refusing.billing == []


def test_a_model_without_a_batch_endpoint_is_never_sent_a_job(
    aws: Aws, providers: tuple[FakeOpenAIServer, FakeOpenAIServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    _, taking = providers
    fallback = {"model": SECOND_MODEL, "baseUrl": taking.base_url, "batch": False}
    monkeypatch.setenv("OPENAI_FALLBACK_MODELS", json.dumps([fallback]))
    batches_app.dependencies.reset()

    sent = run_batches()

    assert sent["submitted"] == [] and len(sent["refused"]) == 1 and "401" in sent["refused"][0]["why"]
    assert taking.batches.jobs == {} and taking.batches.files == {}


def test_a_job_the_provider_fails_for_its_enqueued_token_quota_is_made_by_the_next_model(
    aws: Aws, quota_providers: tuple[FakeOpenAIServer, FakeOpenAIServer]
) -> None:
    """OpenAI reports its batch queue's quota after accepting the job: ``failed`` with
    ``token_limit_exceeded``. That says nothing of the users' requests: the next model takes them."""
    full, taking = quota_providers
    plan = json.dumps(sample(model_schema(create_agent_output_model(SLOTS)), "en"))
    answers = {user: Reply(content=plan) for user in USERS}
    taking.batches.script_next(BatchScript(running_s=300, answers=answers, key_of=requested_user))

    sent = run_batches()
    time.sleep(0.1 * SCALE + 0.05)  # the first provider validates the job, and fails it
    moved = run_batches()
    time.sleep(300.2 * SCALE + 0.05)
    collected = run_batches()

    [first_job] = full.batches.jobs.values()
    assert sent["submitted"][0]["model"] != SECOND_MODEL
    [passed] = moved["passedOn"]
    assert "token_limit_exceeded" in passed["why"] and moved["refused"] == []
    [job] = moved["submitted"]
    assert (job["model"], job["part"], job["requests"]) == (SECOND_MODEL, 0, len(USERS))
    assert first_job.final == "failed" and full.billing == []
    assert collected["collected"] == {"generated": len(USERS)}
    for user in USERS:
        schedule = DynamoScheduleRepository("SchedulesTable").get(user, tomorrow())
        assert schedule is not None and schedule["model"] == SECOND_MODEL
