"""Every AWS call a function makes is allowed by its role, and its role allows nothing the product
never does: the real handlers run a scenario through the local runner over the template's own
routes, queue and schedule (offline model, embedded moto); each call is recorded with the function
that made it, turned into the IAM action and resource it needs, and compared with the statements
of the SAM-transformed template.

A transaction's items are authorised one by one (Put -> PutItem on its table), a Query on an index
needs the index, SendMessageBatch is authorised as SendMessage. Grants the scenario cannot reach
are listed with the reason."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import botocore.client
import pytest

from devtools import runner_lambda
from devtools.runner import LocalRunner
from devtools.runner_api import HttpRequest
from devtools.template import resources_of_type
from tests.unit.bundle.sam_template import granted, transformed

pytestmark = pytest.mark.integration

ADMIN = "release-bot"
USER = "user-0001"
SCHEDULE_TIME = "2026-02-01T20:05:00Z"  # 05:05 in Tokyo: a Tokyo user is due for 2026-02-02

# (function, action, resource) granted but not reached offline, and why.
NOT_REACHED = {
    # The offline model needs no key; in AWS Powertools Parameters reads it with GetParameter.
    ("NudgeGeneratorFunction", "ssm:GetParameter", "parameter:OpenAIApiKeyParameterName"),
    ("ChatFunction", "ssm:GetParameter", "parameter:OpenAIApiKeyParameterName"),
    ("StatusJudgeFunction", "ssm:GetParameter", "parameter:OpenAIApiKeyParameterName"),
    ("InterviewFunction", "ssm:GetParameter", "parameter:OpenAIApiKeyParameterName"),
    # Powertools idempotency reads a record with GetItem only when a refused write does not return it
    # (DynamoDB returns it with the refusal), and deletes its record when the guarded call fails.
    ("NudgeGeneratorFunction", "dynamodb:GetItem", "table:NudgeIdempotencyTable"),
    ("ChatFunction", "dynamodb:GetItem", "table:ChatIdempotencyTable"),
    ("InterviewFunction", "dynamodb:GetItem", "table:InterviewIdempotencyTable"),
    ("NudgeGeneratorFunction", "dynamodb:DeleteItem", "table:NudgeIdempotencyTable"),
    ("ChatFunction", "dynamodb:DeleteItem", "table:ChatIdempotencyTable"),
    ("InterviewFunction", "dynamodb:DeleteItem", "table:InterviewIdempotencyTable"),
    # Lambda itself sends a failed asynchronous run to the scheduler's OnFailure destination.
    ("NudgeSchedulerFunction", "sqs:SendMessage", "queue:NudgeSchedulerFailureQueue"),
}


class CallRecorder:
    """AWS calls made while a function runs in the runner, as (function, action, resource)."""

    def __init__(self) -> None:
        self.function: str | None = None
        self.calls: set[tuple[str, str, str]] = set()

    def record(self, service: str, operation: str, params: dict[str, Any]) -> None:
        if self.function is None:
            return  # the scenario's own set-up and checks
        for action, resource in needed_permissions(service, operation, params):
            self.calls.add((self.function, action, resource))


def needed_permissions(service: str, operation: str, params: dict[str, Any]) -> list[tuple[str, str]]:
    if service == "dynamodb":
        if operation == "TransactWriteItems":
            kinds = {"Put": "PutItem", "Update": "UpdateItem", "Delete": "DeleteItem"}
            kinds["ConditionCheck"] = "ConditionCheckItem"
            return [
                (f"dynamodb:{kinds[kind]}", f"table:{body['TableName']}")
                for item in params["TransactItems"]
                for kind, body in item.items()
            ]
        if operation == "TransactGetItems":
            return [("dynamodb:GetItem", f"table:{item['Get']['TableName']}") for item in params["TransactItems"]]
        if operation in {"BatchGetItem", "BatchWriteItem"}:
            return [(f"dynamodb:{operation}", f"table:{name}") for name in params["RequestItems"]]
        target = f"table:{params['TableName']}"
        if params.get("IndexName"):
            target = f"index:{params['TableName']}/{params['IndexName']}"
        return [(f"dynamodb:{operation}", target)]
    if service == "sqs":
        action = "SendMessage" if operation == "SendMessageBatch" else operation
        return [(f"sqs:{action}", f"queue:{params['QueueUrl'].rsplit('/', 1)[-1]}")]
    return [(f"{service}:{operation}", f"{service}:{json.dumps(params, default=str)[:80]}")]


def resource_name(target: str) -> str:
    """The transformed template's resource notation -> the recorder's."""
    value = json.loads(target)
    if "Fn::GetAtt" in value:
        name = value["Fn::GetAtt"][0]
        kind = transformed()["Resources"][name]["Type"]
        return f"{'queue' if kind == 'AWS::SQS::Queue' else 'table'}:{name}"
    text = value["Fn::Sub"]
    if "/index/" in text:
        table, index = text.split("/index/")
        return f"index:{table.strip('${}').removesuffix('.Arn')}/{index}"
    return f"parameter:{text.rsplit('${', 1)[-1].rstrip('}')}"


def allowed() -> set[tuple[str, str, str]]:
    template = transformed()
    return {
        (function, action, resource_name(target))
        for function in resources_of_type("AWS::Serverless::Function")
        for target, actions in granted(template, function).items()
        for action in actions
    }


@pytest.fixture
def recorder(monkeypatch: pytest.MonkeyPatch) -> Iterator[CallRecorder]:
    recording = CallRecorder()
    make_api_call = botocore.client.BaseClient._make_api_call
    invoke = runner_lambda.InProcessLambda.invoke

    def recorded_call(client: Any, operation: str, params: dict[str, Any]) -> Any:
        recording.record(client.meta.service_model.service_name, operation, params)
        return make_api_call(client, operation, params)

    def attributed_invoke(self: Any, function: Any, event: Any, environment: Any) -> Any:
        recording.function = function.logical_id
        try:
            return invoke(self, function, event, environment)
        finally:
            recording.function = None

    monkeypatch.setattr(botocore.client.BaseClient, "_make_api_call", recorded_call)
    monkeypatch.setattr(runner_lambda.InProcessLambda, "invoke", attributed_invoke)
    yield recording


@pytest.fixture
def runner() -> Iterator[LocalRunner]:
    with LocalRunner(environ={"AWS_DEFAULT_REGION": "us-east-1"}) as local:
        yield local
        local.aws.reset()


def http(runner: LocalRunner, method: str, target: str, body: Any = None, **headers: str) -> tuple[int, Any]:
    path, _, query = target.partition("?")
    sent = [("Content-Type", "application/json"), *headers.items()]
    payload = b"" if body is None else json.dumps(body, ensure_ascii=False).encode()
    request = HttpRequest(method, path, query, [(key.replace("_", "-"), value) for key, value in sent], payload)
    response = runner.handle_http(request)
    return response.status, json.loads(response.body or b"null")


def user(runner: LocalRunner, method: str, path: str, body: Any = None, **headers: str) -> tuple[int, Any]:
    return http(runner, method, path, body, X_Local_User=USER, **headers)


def admin(runner: LocalRunner, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    return http(runner, method, path, body, X_Local_Admin=ADMIN)


def run_nudges(runner: LocalRunner) -> None:
    runner.aws.client("dynamodb").put_item(
        TableName="UsersTable",
        Item={
            "userId": {"S": "user-tokyo"},
            "preferredLanguage": {"S": "ja"},
            "timezone": {"S": "Asia/Tokyo"},
            "problems": {"L": [{"S": "staying_up_late"}]},
            "appVersion": {"S": "2.4.0"},
            "nudgesEnabled": {"BOOL": True},
        },
    )
    assert runner.invoke("NudgeSchedulerFunction", {"time": SCHEDULE_TIME, "detail-type": "Scheduled Event"})[
        "queued"
    ] == 1
    assert runner.deliver("NudgeQueue").succeeded == 1
    status, page = admin(runner, "GET", "/api/admin/tiktok/pending")
    assert status == 200 and page["count"] >= 1, page
    post_id = page["tiktokPosts"][0]["postId"]
    assert admin(runner, "POST", f"/api/admin/tiktok/posts/{post_id}/posted")[0] == 200
    assert admin(runner, "POST", f"/api/admin/tiktok/posts/{post_id}/posted")[1]["alreadyPosted"] is True


def run_chat_and_templates(runner: LocalRunner) -> None:
    status, session = user(runner, "POST", "/ai-agent/sessions", {"context": {"processType": "中途採用"}})
    assert status == 201, session
    messages = f"/ai-agent/sessions/{session['sessionId']}/messages"
    assert user(runner, "POST", messages, {"message": "面接の流れを作りたいです"})[0] == 200
    assert user(runner, "POST", messages, {"message": "選考は3段階です"}, Idempotency_Key="k-1")[0] == 200
    assert user(runner, "POST", messages, {"message": "選考は3段階です"}, Idempotency_Key="k-1")[0] == 200
    from_session = f"/ai-agent/sessions/{session['sessionId']}/process-template"
    assert user(runner, "POST", from_session, {})[0] == 201  # the offline answer ends with a valid draft
    status, again = user(runner, "POST", from_session, {})  # a retry returns the template made the first time
    assert (status, again["created"]) == (200, False), again
    steps = [{"seq": 1, "name": "書類選考", "basis": "goal", "offsetDays": -10}]
    status, created = user(runner, "POST", "/process-templates", {"name": "中途採用の流れ", "stepTemplates": steps})
    assert status == 201, created
    assert user(runner, "GET", "/process-templates")[0] == 200
    assert user(runner, "GET", "/process-templates?search=%E6%8E%A1%E7%94%A8")[0] == 200


def run_judge(runner: LocalRunner) -> None:
    rules = [{"condition": "approved", "tag": "[REVIEW:1]"}, {"condition": "fixes", "tag": "[REVIEW:2]"}]
    status, judged = admin(runner, "POST", "/judge", {"movement": "review", "rules": rules, "output": "[REVIEW:2]"})
    assert status == 200, judged


def run_interview(runner: LocalRunner) -> None:
    field = {
        "field_id": "experience",
        "label": "経験",
        "intent": "How long the applicant worked as a barista",
        "required": True,
        "required_facts": ["years"],
        "done_criteria": "The number of years is known",
    }
    status, created = user(runner, "POST", "/interviews", {"jobId": "job-1", "fields": [field]})
    assert status == 201, created
    messages = f"/interviews/{created['sessionId']}/messages"
    assert user(runner, "POST", messages, {"text": "こんにちは"}, Idempotency_Key="i-1")[0] == 200
    assert user(runner, "POST", messages, {"text": "日本語でお願いします"})[0] == 200
    assert user(runner, "GET", f"/interviews/{created['sessionId']}")[0] == 200


def test_every_call_the_product_makes_is_allowed_and_every_grant_is_used(
    runner: LocalRunner, recorder: CallRecorder
) -> None:
    run_nudges(runner)
    run_chat_and_templates(runner)
    run_judge(runner)
    run_interview(runner)

    granted_calls = allowed()
    assert recorder.calls - granted_calls == set()  # nothing the code does is refused in AWS
    assert granted_calls - recorder.calls == NOT_REACHED  # nothing granted that the code never does
