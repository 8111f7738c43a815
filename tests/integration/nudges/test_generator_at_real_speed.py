"""Spec: at a real model's speed every user of a generator batch is served by the model. A plan of
~3,000 tokens takes ~50 s at gpt-4o's 60 tokens/s; served one after another, five of them need
~250 s and the last ones would run out of the invocation's time. The handler serves a batch's
users at once, each with the whole invocation's time.

The fake server plays gpt-4o (first token 0.2-1.2 s, 35-80 tokens/s) twenty times faster than
real (time_scale 0.05: a 50 s plan takes 2.5 s here), and the Lambda's time and the engine's prior
pace are scaled the same way, so the test takes a few seconds of real time.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from lambda_agents.llm.offline_model import sample
from lambda_agents.llm.schema import model_schema
from lambda_agents.nudges.schema import create_agent_output_model
from lambda_agents.storage.nudges import DynamoScheduleRepository

from devtools.fake_openai import GPT_4O, FakeOpenAIServer, Reply
from functions.nudge_generator import app as generator_app
from tests.support.model_speeds import fake_server_environment

from .conftest import TODAY, Aws, context, sqs_event

pytestmark = pytest.mark.integration

SCALE = 0.05
USERS = [f"real-speed-{n}" for n in range(5)]
PROBLEMS = ["staying_up_late", "procrastination", "anxiety"]  # 15 slots: the spec budgets 4,095 tokens
PLAN_TOKENS = 3000


def plan() -> Reply:
    """A schema-valid plan for 15 slots that costs a real plan's 3,000 tokens."""
    return Reply(
        content=json.dumps(sample(model_schema(create_agent_output_model(15)), "en")), needs_tokens=PLAN_TOKENS
    )


@pytest.fixture
def gpt_4o(aws: Aws, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(profile=GPT_4O, time_scale=SCALE, seed=11) as server:
        environment = {
            **fake_server_environment(server.base_url, first_token_timeout_s=30 * SCALE),
            # The engine plans with gpt-4o's typical pace, scaled like the server.
            "OPENAI_TOKENS_PER_SECOND": f"{60 / SCALE:g}",
            "OPENAI_FIRST_TOKEN_SECONDS": f"{1.2 * SCALE:g}",
        }
        for name, value in environment.items():
            monkeypatch.setenv(name, value)
        generator_app._ports.cache_clear()
        for user in USERS:
            aws.add_user(userId=user, problems=PROBLEMS)
        yield server


def test_a_batch_of_five_3000_token_plans_is_served_by_the_model_in_one_invocation(
    aws: Aws, gpt_4o: FakeOpenAIServer
) -> None:
    gpt_4o.enqueue(*(plan() for _ in USERS))
    # 10 s of Lambda here is 200 s of the model's time: one plan takes 38-86 s, five in a row 190-430 s.
    result = generator_app.lambda_handler(
        sqs_event(*({"userId": u, "localDate": TODAY} for u in USERS)), context(timeout_s=10)
    )

    assert result == {"batchItemFailures": []}
    schedules = [DynamoScheduleRepository("SchedulesTable").get(user, TODAY) for user in USERS]
    assert all(s is not None and s["fallbackUsed"] is False and s["slotCount"] == 15 for s in schedules)
    records = sorted(gpt_4o.billing, key=lambda record: record.started_at)
    assert [record.ended for record in records] == ["complete"] * 5
    assert all(record.completion_tokens == PLAN_TOKENS for record in records)
    # All five were generating at once: the last one started before the first one finished.
    assert records[-1].started_at < records[0].started_at + records[0].seconds


def test_the_same_batch_served_one_user_at_a_time_would_not_fit(
    aws: Aws, gpt_4o: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The control: with one record at a time the later users run out of time and are deferred."""
    monkeypatch.setenv("NUDGE_BATCH_CONCURRENCY", "1")
    generator_app._ports.cache_clear()
    gpt_4o.enqueue(*(plan() for _ in USERS))

    result = generator_app.lambda_handler(
        sqs_event(*({"userId": u, "localDate": TODAY} for u in USERS)), context(timeout_s=10)
    )

    deferred = result["batchItemFailures"]
    assert 1 <= len(deferred) < len(USERS)  # some served in time, the rest back to the queue, none in the fallback
    stored = [DynamoScheduleRepository("SchedulesTable").get(user, TODAY) for user in USERS]
    assert all(s is None or s["fallbackUsed"] is False for s in stored)
    gpt_4o.reset()  # plans never asked for: the deferred users' turn comes on their redelivery
