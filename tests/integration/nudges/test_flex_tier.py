"""Spec (docs/nudges.md#flex-processing): with NUDGE_SERVICE_TIER=flex the generator's synchronous
plans go out at OpenAI's flex tier (``service_tier: "flex"`` on the wire, through the real openai
client against the fake), are billed at Batch prices, and wait for a first token as long as the flex
guide advises; a 429 "Resource Unavailable" from flex short of capacity defers the user like the
provider's rate limit (nothing stored, the message back in the queue) and is never a rule-based
plan before the message's last delivery."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from lambda_agents.config import LLMSettings, load_settings
from lambda_agents.llm.model_chain import ModelChain
from lambda_agents.llm.offline_model import sample
from lambda_agents.llm.prices import cost_usd
from lambda_agents.llm.schema import model_schema
from lambda_agents.llm.types import Usage
from lambda_agents.nudges.schema import create_agent_output_model
from lambda_agents.storage.nudges import DynamoScheduleRepository

from devtools.fake_openai import FakeOpenAIServer, FlexCapacity, Reply
from functions.nudge_generator import app as generator_app

from .conftest import MAX_RECEIVES, TODAY, Aws, context, sqs_event, use_fake_openai

pytestmark = pytest.mark.integration
USER = "flex-user"
PROBLEMS = ["staying_up_late"]  # 6 slots
MODEL = "o4-mini"


def good() -> Reply:
    return Reply(content=json.dumps(sample(model_schema(create_agent_output_model(6)), "en")))


@pytest.fixture
def flex(aws: Aws, fake_openai: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[float]]:
    """The generator on the fake at the flex tier; backoff waits recorded, not slept."""
    use_fake_openai(monkeypatch, fake_openai.base_url)
    monkeypatch.setenv("OPENAI_MODEL", MODEL)
    monkeypatch.setenv("NUDGE_SERVICE_TIER", "flex")
    generator_app.dependencies.reset()
    aws.add_user(userId=USER, problems=PROBLEMS)
    waits: list[float] = []
    generator_app.dependencies().service._sleep = waits.append
    yield waits
    generator_app.dependencies.reset()


def stored_items(aws: Aws) -> list[dict[str, Any]]:
    return aws.dynamodb.scan(TableName="SchedulesTable")["Items"]  # type: ignore[no-any-return]


def test_a_flex_plan_asks_for_flex_on_the_wire_and_is_billed_at_batch_prices(
    aws: Aws, fake_openai: FakeOpenAIServer, flex: list[float]
) -> None:
    fake_openai.enqueue(good())

    outcome = generator_app.dependencies().generate_once({"userId": USER, "localDate": TODAY})

    assert [request.get("service_tier") for request in fake_openai.requests] == ["flex"]
    assert outcome["status"] == "generated" and outcome["fallbackUsed"] is False
    assert outcome["billing"] == "flex"
    (billed,) = fake_openai.billing
    assert billed.service_tier == "flex"
    usage = Usage(billed.prompt_tokens, billed.completion_tokens)
    assert outcome["costUsd"] == cost_usd(MODEL, usage, "flex") == pytest.approx(cost_usd(MODEL, usage) / 2)  # type: ignore[operator]


def test_flex_short_of_capacity_defers_the_user_with_nothing_stored_and_nothing_billed(
    aws: Aws, fake_openai: FakeOpenAIServer, flex: list[float]
) -> None:
    fake_openai.set_flex_capacity(FlexCapacity(short=True, retry_after_s=2.0))
    aws.sqs.send_message(QueueUrl=aws.queue_url, MessageBody=json.dumps({"userId": USER, "localDate": TODAY}))
    (message,) = aws.sqs.receive_message(QueueUrl=aws.queue_url, AttributeNames=["All"], VisibilityTimeout=0)[
        "Messages"
    ]
    event = sqs_event({"userId": USER, "localDate": TODAY}, delivery=1)
    event["Records"][0]["receiptHandle"] = message["ReceiptHandle"]

    result = generator_app.lambda_handler(event, context())

    assert result == {"batchItemFailures": [{"itemIdentifier": "m0"}]}
    assert stored_items(aws) == []  # no rule-based plan: the day is still the model's to make
    assert fake_openai.requests and all(request.get("service_tier") == "flex" for request in fake_openai.requests)
    assert all(record.ended == "rate_limited" and record.completion_tokens == 0 for record in fake_openai.billing)
    # Back in the queue after flex's Retry-After (and a little more), not the queue's visibility timeout.
    assert aws.sqs.receive_message(QueueUrl=aws.queue_url).get("Messages") is None


def test_on_its_last_delivery_a_user_flex_could_not_serve_gets_the_rule_based_plan(
    aws: Aws, fake_openai: FakeOpenAIServer, flex: list[float]
) -> None:
    fake_openai.set_flex_capacity(FlexCapacity(short=True))
    event = sqs_event({"userId": USER, "localDate": TODAY}, delivery=MAX_RECEIVES)

    assert generator_app.lambda_handler(event, context()) == {"batchItemFailures": []}
    schedule = DynamoScheduleRepository("SchedulesTable").get(USER, TODAY)
    assert schedule is not None and schedule["fallbackReason"] == "rate_limit"


def test_at_the_flex_tier_the_first_token_is_waited_for_as_the_flex_guide_advises(
    flex: list[float], monkeypatch: pytest.MonkeyPatch
) -> None:
    chain = generator_app.dependencies().service._model
    assert isinstance(chain, ModelChain)
    assert chain.links[0].model.pacer.timeouts.first_token_s == generator_app.FLEX_FIRST_TOKEN_TIMEOUT_S == 900.0  # type: ignore[attr-defined]
    monkeypatch.setenv("NUDGE_SERVICE_TIER", "standard")
    generator_app.dependencies.reset()
    chain = generator_app.dependencies().service._model
    assert isinstance(chain, ModelChain)
    configured = load_settings(LLMSettings).first_token_timeout_s  # the test environment's own
    assert configured < 900.0 and chain.links[0].model.pacer.timeouts.first_token_s == configured  # type: ignore[attr-defined]


def test_an_unknown_tier_fails_the_function_at_start_naming_the_variable(
    aws: Aws, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NUDGE_SERVICE_TIER", "cheap")
    generator_app.dependencies.reset()
    with pytest.raises(Exception, match="NUDGE_SERVICE_TIER"):
        generator_app.dependencies()
    generator_app.dependencies.reset()
