"""Fault matrix for the nudge generator: one SQS record through the whole handler
(batch processor, idempotency, Commander through the real openai client, DynamoDB on moto) per
fault class, asserting the outcome and what is stored.

For every cell, on the message's last delivery: the user ends with a complete schedule (exactly
the slot table's nudges, all enabled) or with nothing at all and the record is redelivered; posts
exist only with their schedule; a fallback post is never pending; the tokens of failed attempts
are stored. On an earlier delivery a run the provider's rate limit or the clock stopped is
deferred instead: nothing stored, the record back in the queue after the wait.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from lambda_agents.llm.offline_model import sample
from lambda_agents.llm.schema import model_schema
from lambda_agents.nudges.schema import create_agent_output_model
from lambda_agents.storage.nudges import DynamoScheduleRepository

from devtools.fake_openai import FakeOpenAIServer, Fault, Reply, Slow, Step
from functions.nudge_generator import app as generator_app
from tests.support.dynamo_faults import CONDITION_FAILED, THROTTLED, TRANSACTION_CANCELLED, dynamo_fault

from .conftest import MAX_RECEIVES, TODAY, Aws, call_api, context, sqs_event, use_fake_openai

pytestmark = pytest.mark.integration
DATE = TODAY
USER = "matrix-user"
PROBLEMS = ["staying_up_late"]  # 6 slots: small answers, quick cells


def good() -> Reply:
    return Reply(content=json.dumps(sample(model_schema(create_agent_output_model(6)), "en")))


def wrong_length() -> Reply:
    return Reply(content=json.dumps(sample(model_schema(create_agent_output_model(4)), "en")))


@dataclass(frozen=True)
class Cell:
    steps: tuple[Step, ...]
    fallback_reason: str | None  # None: the model's answer was stored


CELLS: dict[str, Cell] = {
    "clean": Cell((good(),), None),
    "length, then a larger max_tokens": Cell((Reply(content='{"appNudges": [', finish_reason="length"), good()), None),
    "wrong array length, fed back": Cell((wrong_length(), good()), None),
    "invalid JSON, fed back": Cell((Reply(content="{not json"), good()), None),
    "429 with Retry-After, then an answer": Cell((Fault(429, retry_after=0.01), good()), None),
    "refusal": Cell((Reply(refusal="I can't help with that."),), "refusal"),
    "content_filter every time": Cell(tuple(Reply(finish_reason="content_filter") for _ in range(3)), "content_filter"),
    "429 every time": Cell(tuple(Fault(429, retry_after=0.01) for _ in range(3)), "rate_limit"),
    "500 every time": Cell(tuple(Fault(500) for _ in range(3)), "server_error"),
    "timeout every time": Cell(tuple(Slow(1.5, good()) for _ in range(3)), "timeout"),
    "invalid JSON every time": Cell(tuple(Reply(content="{not json") for _ in range(3)), "validation"),
}


@pytest.fixture
def generator(aws: Aws, fake_openai: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[float]]:
    """The generator on the fake server, 1 s for the first token, backoff waits recorded, not slept."""
    use_fake_openai(monkeypatch, fake_openai.base_url)
    monkeypatch.setenv("OPENAI_FIRST_TOKEN_TIMEOUT_SECONDS", "1")
    aws.add_user(userId=USER, problems=PROBLEMS)
    waits: list[float] = []
    service = generator_app.dependencies().service
    service._sleep = waits.append
    service._schedules._sleep = waits.append  # type: ignore[attr-defined]
    yield waits


def deliver(delivery: int = MAX_RECEIVES) -> dict[str, Any]:
    event = sqs_event({"userId": USER, "localDate": DATE}, delivery=delivery)
    return generator_app.lambda_handler(event, context())  # type: ignore[no-any-return]


def stored_items(aws: Aws) -> list[dict[str, Any]]:
    return aws.dynamodb.scan(TableName="SchedulesTable")["Items"]  # type: ignore[no-any-return]


def pending_posts() -> int:
    total = 0
    for platform, key in (("tiktok", "tiktokPosts"), ("x", "xPosts")):
        status, body = call_api("GET", f"/api/admin/{platform}/pending", {"date": DATE})
        assert status == 200
        total += len(body[key])
    return total


@pytest.mark.parametrize("name", list(CELLS))
def test_every_model_fault_ends_in_a_complete_schedule_and_never_a_pending_fallback_post(
    name: str, aws: Aws, fake_openai: FakeOpenAIServer, generator: list[float]
) -> None:
    cell = CELLS[name]
    fake_openai.enqueue(*cell.steps)

    result = deliver()

    assert result == {"batchItemFailures": []}
    schedule = DynamoScheduleRepository("SchedulesTable").get(USER, DATE)
    assert schedule is not None
    nudges = schedule["agentRawOutput"]["appNudges"]
    assert len(nudges) == schedule["slotCount"] == 6 and all(n["enabled"] for n in nudges)
    assert schedule["fallbackUsed"] is (cell.fallback_reason is not None)
    assert schedule.get("fallbackReason") == cell.fallback_reason
    assert len(schedule["attempts"]) == len(cell.steps)
    assert len(stored_items(aws)) == 1 + 4  # the schedule and its 2 TikTok + 2 X posts, nothing else
    assert pending_posts() == (0 if cell.fallback_reason else 4)
    if any(isinstance(step, Reply) for step in cell.steps):
        assert schedule["usage"]["totalTokens"] > 0  # failed attempts' tokens are kept


def test_a_redelivery_after_any_outcome_makes_no_second_llm_call(
    aws: Aws, fake_openai: FakeOpenAIServer, generator: list[float]
) -> None:
    fake_openai.enqueue(Reply(refusal="no"))
    deliver()
    calls = len(fake_openai.requests)

    assert deliver() == {"batchItemFailures": []}
    assert len(fake_openai.requests) == calls
    assert len(stored_items(aws)) == 5


def test_a_schedule_write_throttled_once_is_retried_in_place_without_a_second_llm_call(
    aws: Aws, fake_openai: FakeOpenAIServer, generator: list[float]
) -> None:
    fake_openai.enqueue(good())
    with dynamo_fault("TransactWriteItems", TRANSACTION_CANCELLED, reasons=["ThrottlingError"], times=1) as fault:
        result = deliver()
    assert fault.fired == 1 and result == {"batchItemFailures": []}
    assert len(fake_openai.requests) == 1  # the answer in hand was written, not asked for again
    assert len(stored_items(aws)) == 5 and pending_posts() == 4


def test_a_schedule_write_that_stays_throttled_fails_the_record_with_nothing_half_written_and_the_retry_completes(
    aws: Aws, fake_openai: FakeOpenAIServer, generator: list[float]
) -> None:
    fake_openai.enqueue(good(), good())
    with dynamo_fault("TransactWriteItems", TRANSACTION_CANCELLED, reasons=["ThrottlingError", "None"]) as fault:
        result = deliver()
    assert fault.fired == 3  # the write and its two in-place retries
    assert result == {"batchItemFailures": [{"itemIdentifier": "m0"}]}
    assert stored_items(aws) == []  # neither the schedule nor any post

    assert deliver() == {"batchItemFailures": []}  # the idempotency record was released
    assert len(stored_items(aws)) == 5 and pending_posts() == 4


def test_a_throttled_profile_read_fails_the_record_before_any_llm_call(
    aws: Aws, fake_openai: FakeOpenAIServer, generator: list[float]
) -> None:
    with dynamo_fault("GetItem", THROTTLED):
        result = deliver()
    assert result == {"batchItemFailures": [{"itemIdentifier": "m0"}]}
    assert fake_openai.requests == [] and stored_items(aws) == []


def test_a_write_that_lost_the_race_stores_nothing_of_its_own(
    aws: Aws, fake_openai: FakeOpenAIServer, generator: list[float]
) -> None:
    fake_openai.enqueue(good())
    with dynamo_fault("TransactWriteItems", TRANSACTION_CANCELLED, reasons=["ConditionalCheckFailed"]):
        result = deliver()
    assert result == {"batchItemFailures": []}  # someone else's schedule stands: nothing to retry
    assert stored_items(aws) == []


def test_a_refused_idempotency_claim_fails_the_record_without_an_llm_call(
    aws: Aws, fake_openai: FakeOpenAIServer, generator: list[float]
) -> None:
    # Another invocation holds the claim (a concurrent duplicate delivery): this one must not run.
    claims = generator_app.dependencies().persistence.client
    with dynamo_fault("PutItem", CONDITION_FAILED, client=claims) as fault:
        result = deliver()
    assert fault.fired >= 1
    assert result["batchItemFailures"] == [{"itemIdentifier": "m0"}]
    assert fake_openai.requests == [] and stored_items(aws) == []


def at_a_real_pace(monkeypatch: pytest.MonkeyPatch, base_url: str) -> None:
    """The fake server as the provider, and the engine planning with gpt-4o's typical pace: a
    6-slot plan's 1,755 tokens take ~30 s."""
    use_fake_openai(monkeypatch, base_url)
    monkeypatch.setenv("OPENAI_TOKENS_PER_SECOND", "60")
    generator_app.dependencies.reset()


def test_a_record_started_with_too_little_time_for_a_plan_is_deferred_without_an_llm_call(
    aws: Aws, fake_openai: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    at_a_real_pace(monkeypatch, fake_openai.base_url)
    aws.add_user(userId=USER, problems=PROBLEMS)
    short = context(timeout_s=20)  # 17 s for the model: a plan needs ~30 s
    result = generator_app.lambda_handler(sqs_event({"userId": USER, "localDate": DATE}), short)
    assert result == {"batchItemFailures": [{"itemIdentifier": "m0"}]}
    assert fake_openai.requests == [] and stored_items(aws) == []


def test_on_its_last_delivery_a_user_out_of_time_gets_the_fallback_not_the_dead_letter_queue(
    aws: Aws, fake_openai: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    at_a_real_pace(monkeypatch, fake_openai.base_url)
    aws.add_user(userId=USER, problems=PROBLEMS)
    event = sqs_event({"userId": USER, "localDate": DATE}, delivery=MAX_RECEIVES)
    assert generator_app.lambda_handler(event, context(timeout_s=20)) == {"batchItemFailures": []}
    schedule = DynamoScheduleRepository("SchedulesTable").get(USER, DATE)
    assert schedule is not None and schedule["fallbackReason"] == "deadline" and fake_openai.requests == []


def test_a_user_the_providers_rate_limit_holds_back_waits_out_its_retry_after_in_the_queue(
    aws: Aws, fake_openai: FakeOpenAIServer, generator: list[float]
) -> None:
    fake_openai.enqueue(*(Fault(429, retry_after=2.0) for _ in range(3)))
    aws.sqs.send_message(QueueUrl=aws.queue_url, MessageBody=json.dumps({"userId": USER, "localDate": DATE}))
    (message,) = aws.sqs.receive_message(QueueUrl=aws.queue_url, AttributeNames=["All"], VisibilityTimeout=0)[
        "Messages"
    ]
    event = sqs_event({"userId": USER, "localDate": DATE}, delivery=1)
    event["Records"][0]["receiptHandle"] = message["ReceiptHandle"]

    assert generator_app.lambda_handler(event, context()) == {"batchItemFailures": [{"itemIdentifier": "m0"}]}
    assert stored_items(aws) == []  # no fallback: the user's plan is still the model's to make
    # The message stays invisible for the Retry-After (and a little more), not the queue's 30 minutes.
    assert aws.sqs.receive_message(QueueUrl=aws.queue_url).get("Messages") is None
