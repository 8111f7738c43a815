"""Fixtures for the nudge handlers end to end: moto tables and queues built from template.yaml,
the handlers' cached ports cleared, API events shaped like API Gateway's (identity in
requestContext only)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

import boto3
import pytest
from lambda_agents.nudges.profile import UserProfile
from lambda_agents.storage.dynamodb import dynamodb_resource
from lambda_agents.storage.users import DynamoUserRepository

from devtools.runner_lambda import LambdaContext
from functions.nudge_generator import app as generator_app
from functions.nudge_scheduler import app as scheduler_app
from functions.nudges_api import app as nudges_api_app
from functions.pending_posts import app as pending_app
from tests.support import api_events
from tests.support.lambda_invocation import function_context
from tests.support.model_speeds import fake_server_environment
from tests.support.moto_tables import tables_on_moto
from tests.support.serial_moto import serialise_moto_calls

ADMIN_ARN = "arn:aws:iam::123456789012:user/release-bot"
TABLES = ["UsersTable", "SchedulesTable", "NudgeIdempotencyTable"]
ENVIRONMENT = {
    "USERS_TABLE": "UsersTable",
    "SCHEDULES_TABLE": "SchedulesTable",
    "IDEMPOTENCY_TABLE": "NudgeIdempotencyTable",
}
CLEARED = ("AWS_ENDPOINT_URL_SQS",)


# The generator only works on dates near the user's today (every test user lives in Tokyo).
TODAY = datetime.now(ZoneInfo("Asia/Tokyo")).date().isoformat()
MAX_RECEIVES = 5  # the template's NudgeQueue maxReceiveCount


@dataclass
class Aws:
    dynamodb: Any
    sqs: Any
    queue_url: str
    dlq_url: str

    def add_user(self, **fields: Any) -> UserProfile:
        profile = UserProfile.model_validate(
            {"problems": ["staying_up_late"], "preferredLanguage": "en", "timezone": "Asia/Tokyo", **fields}
        )
        DynamoUserRepository("UsersTable").put(profile)
        return profile


def clear_caches() -> None:
    dynamodb_resource.cache_clear()
    generator_app.dependencies.reset()
    scheduler_app.dependencies.reset()
    pending_app.dependencies.reset()
    nudges_api_app.dependencies.reset()


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[Aws]:
    serialise_moto_calls(monkeypatch)
    with tables_on_moto(
        monkeypatch, TABLES, environment=ENVIRONMENT, cleared=CLEARED, reset_ports=clear_caches
    ) as dynamodb:
        sqs = boto3.client("sqs")
        dlq_url = sqs.create_queue(QueueName="NudgeDeadLetterQueue")["QueueUrl"]
        dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        queue_url = sqs.create_queue(
            QueueName="NudgeQueue",
            Attributes={
                "VisibilityTimeout": "0",
                "RedrivePolicy": json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": str(MAX_RECEIVES)}),
            },
        )["QueueUrl"]
        monkeypatch.setenv("NUDGE_QUEUE_URL", queue_url)
        monkeypatch.setenv("NUDGE_MAX_RECEIVE_COUNT", str(MAX_RECEIVES))
        yield Aws(dynamodb, sqs, queue_url, dlq_url)


def use_fake_openai(monkeypatch: pytest.MonkeyPatch, base_url: str) -> None:
    for name, value in fake_server_environment(base_url).items():
        monkeypatch.setenv(name, value)
    generator_app.dependencies.reset()


def context(name: str = "NudgeGeneratorFunction", timeout_s: int = 120) -> LambdaContext:
    return function_context(name, timeout_s)


def sqs_event(*bodies: Any, ids: list[str] | None = None, delivery: int = 1) -> dict[str, Any]:
    """The event of a batch; ``delivery``: the messages' ApproximateReceiveCount (MAX_RECEIVES: the last)."""
    records = []
    for index, body in enumerate(bodies):
        records.append(
            {
                "messageId": (ids or [])[index] if ids else f"m{index}",
                "receiptHandle": f"r{index}",
                "body": body if isinstance(body, str) else json.dumps(body),
                "attributes": {"ApproximateReceiveCount": str(delivery)},
                "messageAttributes": {},
                "md5OfBody": "",
                "eventSource": "aws:sqs",
                "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:NudgeQueue",
                "awsRegion": "us-east-1",
            }
        )
    return {"Records": records}


def api_event(
    method: str, path: str, query: dict[str, str] | None = None, *, admin: str | None = ADMIN_ARN
) -> dict[str, Any]:
    """A pending-posts route's event (``tests.support.api_events``): an IAM caller, the admin by default."""
    return api_events.api_event(method, path, admin=admin, query=query, stage="Prod")


def call_api(method: str, path: str, query: dict[str, str] | None = None, **kwargs: Any) -> tuple[int, Any]:
    result = pending_app.lambda_handler(api_event(method, path, query, **kwargs), context("PendingPostsFunction", 30))
    return result["statusCode"], json.loads(result["body"])


def generate(*bodies: Any) -> dict[str, Any]:
    return generator_app.lambda_handler(sqs_event(*bodies), context())  # type: ignore[no-any-return]


def user_event(
    method: str, path: str, body: Any = None, query: dict[str, str] | None = None, *, user: str | None = "user-1"
) -> dict[str, Any]:
    """A nudges route's event (``tests.support.api_events``): the user in ``requestContext.authorizer.claims`` only."""
    return api_events.api_event(method, path, body, user=user, query=query, stage="Prod")


def call_user_api(
    method: str, path: str, body: Any = None, query: dict[str, str] | None = None, *, user: str | None = "user-1"
) -> tuple[int, Any]:
    result = nudges_api_app.lambda_handler(
        user_event(method, path, body, query, user=user), context("NudgesApiFunction", 30)
    )
    return result["statusCode"], json.loads(result["body"])
