"""Fixtures for InterviewFunction and JobsFunction end to end: moto tables built from
template.yaml, the handlers' cached ports cleared, API Gateway-shaped events with the Cognito
identity (applicant) or the IAM caller (employer) in requestContext.

``create()`` does what an applicant's first steps need: the employer's job (created once),
``POST /interviews`` and, unless told otherwise, the consent to the notice."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from functools import partial
from typing import Any

import boto3
import pytest
from lambda_agents.storage.application_events import events_client
from lambda_agents.storage.dynamodb import dynamodb_resource

from devtools.demo_sections.interview import JOB as DEMO_JOB
from devtools.runner_lambda import LambdaContext
from functions.interview import app as interview_app
from functions.jobs import app as jobs_app
from tests.support import api_events
from tests.support.api_events import Answer
from tests.support.lambda_invocation import function_context
from tests.support.model_speeds import fake_server_environment
from tests.support.moto_tables import tables_on_moto

TABLES = ["InterviewsTable", "InterviewIdempotencyTable"]
ENVIRONMENT = {
    "INTERVIEWS_TABLE": "InterviewsTable",
    "IDEMPOTENCY_TABLE": "InterviewIdempotencyTable",
    "APPLICATION_EVENT_BUS": "default",
}
CLEARED = ("AWS_ENDPOINT_URL_EVENTBRIDGE",)
APPLICANT = "applicant-0001"
EMPLOYER = "arn:aws:iam::123456789012:user/hiring-team"

FIELDS = [field for field in DEMO_JOB["fields"] if field["required"]]  # `make demo`'s barista job, less its hobby
JOB = {"jobId": "job-barista-001", "fields": FIELDS}
HOBBY = next(field for field in DEMO_JOB["fields"] if not field["required"])  # the optional field it left out
WITH_HOBBY = {"jobId": "job-with-hobby", "fields": [*FIELDS, HOBBY]}


def clear_caches() -> None:
    dynamodb_resource.cache_clear()
    events_client.cache_clear()
    interview_app.dependencies.reset()
    jobs_app.dependencies.reset()


def use_fake_openai(monkeypatch: pytest.MonkeyPatch, base_url: str) -> None:
    for name, value in fake_server_environment(base_url).items():
        monkeypatch.setenv(name, value)
    interview_app.dependencies.reset()


# An interview route's event (``tests.support.api_events``); the applicant unless told otherwise.
api_event = partial(api_events.api_event, user=APPLICANT)


def context(timeout_s: int = 60) -> LambdaContext:
    return function_context("InterviewFunction", timeout_s)


def invoke(event: dict[str, Any], timeout_s: int = 60, handler: Any = None) -> Answer:
    return Answer.of((handler or interview_app.lambda_handler)(event, context(timeout_s)))


# A JobsFunction route's event, called as the employer (an IAM caller) unless told otherwise.
employer_event = partial(api_events.api_event, admin=EMPLOYER)


def employer(method: str, path: str, body: Any = None, **event: Any) -> Answer:
    """A JobsFunction route's answer; ``event`` as ``employer_event`` takes it."""
    return invoke(employer_event(method, path, body, **event), handler=jobs_app.lambda_handler)


def read_application(session_id: str, job_id: str = JOB["jobId"], *, admin: str | None = EMPLOYER) -> Answer:
    return employer(
        "GET",
        f"/api/admin/jobs/{job_id}/applications/{session_id}",
        admin=admin,
        resource="/api/admin/jobs/{jobId}/applications/{applicationId}",
        path_parameters={"jobId": job_id, "applicationId": session_id},
    )


def create_job(job: dict[str, Any] | None = None) -> Answer:
    """``job`` as ``{jobId, fields[, title]}``; an existing job of that id is left as it is."""
    given = job or JOB
    body = {"title": given.get("title", given["jobId"]), **given}
    return employer("POST", "/api/admin/jobs", body)


def consent(session_id: str, notice_id: str, *, user: str | None = APPLICANT) -> Answer:
    event = api_event(
        "POST",
        f"/interviews/{session_id}/consent",
        {"accepted": True, "noticeId": notice_id},
        user=user,
        path_parameters={"sessionId": session_id},
        resource="/interviews/{sessionId}/consent",
    )
    return invoke(event)


def start(job_id: str, *, user: str | None = APPLICANT) -> Answer:
    return invoke(api_event("POST", "/interviews", {"jobId": job_id}, user=user))


def create(job: dict[str, Any] | None = None, *, user: str | None = APPLICANT, consented: bool = True) -> Answer:
    """The job (when new), the interview, and the consent: the answer of ``POST /interviews``."""
    given = job or JOB
    made = create_job(given)
    assert made.status in (201, 409), made.body
    answer = start(given["jobId"], user=user)
    if consented and answer.status == 201:
        agreed = consent(answer.body["sessionId"], answer.body["notice"]["noticeId"], user=user)
        assert agreed.status == 200, agreed.body
    return answer


def post_message(
    session_id: str,
    text: str,
    *,
    user: str | None = APPLICANT,
    key: str | None = None,
    timeout_s: int = 60,
) -> Answer:
    event = api_event(
        "POST",
        f"/interviews/{session_id}/messages",
        {"text": text},
        user=user,
        headers={"Idempotency-Key": key} if key else None,
        path_parameters={"sessionId": session_id},
        resource="/interviews/{sessionId}/messages",
    )
    return invoke(event, timeout_s)


def get_interview(session_id: str, *, user: str | None = APPLICANT) -> Answer:
    event = api_event(
        "GET",
        f"/interviews/{session_id}",
        user=user,
        path_parameters={"sessionId": session_id},
        resource="/interviews/{sessionId}",
    )
    return invoke(event)


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    with interview_tables(monkeypatch) as client:
        yield client


def interview_tables(monkeypatch: pytest.MonkeyPatch, daily_budget: int = 0) -> AbstractContextManager[Any]:
    """The interview's tables on moto (``daily_budget``: the users' daily tokens; 0: off)."""
    wiring = {"environment": ENVIRONMENT, "cleared": CLEARED, "reset_ports": clear_caches}
    return tables_on_moto(monkeypatch, TABLES, daily_budget=daily_budget, **wiring)


def stored_items(client: Any, session_id: str) -> list[dict[str, Any]]:
    from boto3.dynamodb.types import TypeDeserializer

    items = client.query(
        TableName="InterviewsTable",
        KeyConditionExpression="pk = :pk",
        ExpressionAttributeValues={":pk": {"S": f"SESSION#{session_id}"}},
    )["Items"]
    return [{key: TypeDeserializer().deserialize(value) for key, value in item.items()} for item in items]


def no_waits() -> list[float]:
    """Record the backoff / Retry-After waits instead of sleeping: the function is built again
    with that ``sleep`` (after the test's environment is set)."""
    waits: list[float] = []
    interview_app.dependencies.rebuild(sleep=waits.append)
    return waits


def assert_nothing_written(client: Any, session_id: str, version: int = 1) -> None:
    """Only what was there before the turn: by default a session just consented to (version 1)."""
    items = stored_items(client, session_id)
    head = next(item for item in items if item["sk"] == "SESSION")
    assert head["version"] == version
    assert len([item for item in items if item["sk"].startswith("MSG#")]) == head["messageCount"]


@dataclass
class TeamQueue:
    """A hiring team's subscription: an EventBridge rule on the bus sending the interview's
    events to an SQS queue (moto delivers PutEvents to the rule's targets)."""

    sqs: Any
    url: str

    def received(self) -> list[dict[str, Any]]:
        events = []
        while True:
            batch = self.sqs.receive_message(QueueUrl=self.url, MaxNumberOfMessages=10).get("Messages", [])
            if not batch:
                return events
            for message in batch:
                events.append(json.loads(message["Body"]))
                self.sqs.delete_message(QueueUrl=self.url, ReceiptHandle=message["ReceiptHandle"])


@pytest.fixture
def team_queue(aws: Any) -> TeamQueue:
    sqs = boto3.client("sqs")
    events = boto3.client("events")
    url = sqs.create_queue(QueueName="hiring-team")["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    events.put_rule(Name="applications", EventPattern=json.dumps({"source": ["lambda-agents.interview"]}))
    events.put_targets(Rule="applications", Targets=[{"Id": "team", "Arn": arn}])
    return TeamQueue(sqs, url)


def scan_all(client: Any) -> dict[str, list[dict[str, Any]]]:
    """Every item of every table, deserialised: what a deletion must leave nothing of."""
    from boto3.dynamodb.types import TypeDeserializer

    found: dict[str, list[dict[str, Any]]] = {}
    for name in client.list_tables()["TableNames"]:
        items = client.scan(TableName=name, ConsistentRead=True)["Items"]
        found[name] = [{key: TypeDeserializer().deserialize(value) for key, value in item.items()} for item in items]
    return found


SCRIPT = [
    "こんにちは",
    "日本語でお願いします。日本に住んでいます。",
    "5年です。東京のカフェ森で働いていました。",
    "コーヒーが大好きで、お客様と話すのが好きだからです。",
]


def complete(session_id: str, *, keys: bool = False) -> Answer:
    """The offline applicant's answers to JOB, until the interview has finished."""
    answer = None
    for turn, text in enumerate(SCRIPT, start=1):
        answer = post_message(session_id, text, key=f"turn-{turn}" if keys else None)
        assert answer.status == 200, answer.body
    assert answer is not None and answer.body["status"] == "completed", answer.body
    return answer


def applicant_route(
    method: str,
    session_id: str,
    action: str = "",
    body: Any = None,
    *,
    field_id: str | None = None,
    user: str | None = APPLICANT,
    key: str | None = None,
) -> Answer:
    """``/interviews/{id}[/action]`` or ``/interviews/{id}/fields/{fieldId}/action``."""
    tail = f"/fields/{{fieldId}}/{action}" if field_id else (f"/{action}" if action else "")
    params = {"sessionId": session_id, **({"fieldId": field_id} if field_id else {})}
    event = api_event(
        method,
        f"/interviews/{session_id}" + tail.replace("{fieldId}", field_id or ""),
        body,
        user=user,
        headers={"Idempotency-Key": key} if key else None,
        path_parameters=params,
        resource="/interviews/{sessionId}" + tail,
    )
    return invoke(event)
