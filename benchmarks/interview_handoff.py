"""interview_handoff_bench's machinery: InterviewFunction and InterviewTurnFunction driven in this
process, as Lambda would call them, on DynamoDB and SQS in moto and the fake provider.

The request function answers API Gateway events with a Lambda context whose time is the
benchmark's (``HandlerTime``: API Gateway's 29 s at the run's time scale, or a shorter deadline
that cuts a turn); a turn it hands over is delivered at once to the worker, as Lambda's SQS poller
takes a message as soon as it is sent, with the worker's 300 s.

How it runs, and why: benchmarks/README.md (section ``interview_handoff_bench``).
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

AREA = "us-east-1"
TABLES = ["InterviewsTable", "InterviewIdempotencyTable"]
QUEUE = "InterviewTurnsQueue"
JOB_ID = "job-handoff-bench"
# What a function's own environment holds here (template.yaml's, and moto's credentials); the model's
# settings are each scenario's.
ENVIRONMENT = {
    "AWS_DEFAULT_REGION": AREA,
    "AWS_ACCESS_KEY_ID": "bench",
    "AWS_SECRET_ACCESS_KEY": "bench",
    "INTERVIEWS_TABLE": "InterviewsTable",
    "IDEMPOTENCY_TABLE": "InterviewIdempotencyTable",
    "APPLICATION_EVENT_BUS": "default",
    "POWERTOOLS_LOG_LEVEL": "ERROR",
    "POWERTOOLS_METRICS_NAMESPACE": "LambdaAgentsBench",
}
# Settings a developer's shell may hold that would point the functions elsewhere.
POINTING_ELSEWHERE = (
    "AWS_ENDPOINT_URL",
    "AWS_ENDPOINT_URL_DYNAMODB",
    "AWS_ENDPOINT_URL_SQS",
    "AWS_ENDPOINT_URL_EVENTBRIDGE",
    "USER_DAILY_TOKEN_BUDGET",
    "USER_SPENDING_TABLE",
)


@dataclass
class HandlerTime:
    """The Lambda context a handler reads its time from: ``seconds`` from when it was made."""

    seconds: float
    function_name: str = "InterviewFunction"
    memory_limit_in_mb: str = "512"
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    _started: float = field(default_factory=time.monotonic)

    @property
    def invoked_function_arn(self) -> str:
        return f"arn:aws:lambda:{AREA}:123456789012:function:{self.function_name}"

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self.seconds - (time.monotonic() - self._started)) * 1000))


@dataclass(frozen=True)
class Answer:
    status: int
    body: Any
    headers: dict[str, str]


def _event(method: str, path: str, resource: str, body: Any, user: str, params: dict[str, str]) -> dict[str, Any]:
    """The REST proxy event of an applicant's request (what the handler reads of it)."""
    headers = {"Content-Type": "application/json"}
    return {
        "resource": resource,
        "path": path,
        "httpMethod": method,
        "headers": headers,
        "multiValueHeaders": {name: [value] for name, value in headers.items()},
        "queryStringParameters": None,
        "multiValueQueryStringParameters": None,
        "pathParameters": params or None,
        "stageVariables": None,
        "body": None if body is None else json.dumps(body, ensure_ascii=False),
        "isBase64Encoded": False,
        "requestContext": {
            "resourcePath": resource,
            "httpMethod": method,
            "path": f"/v1{path}",
            "stage": "v1",
            "requestId": str(uuid.uuid4()),
            "identity": {"sourceIp": "127.0.0.1"},
            "authorizer": {"claims": {"sub": user, "token_use": "id"}},
        },
    }


class InterviewFunctions:
    """The two functions of the interview on one moto, with the worker's queue."""

    def __init__(self, queue_url: str) -> None:
        from functions.interview import app as request_app
        from functions.interview_turns import app as worker_app

        self.queue_url = queue_url
        self.request_app = request_app
        self.worker_app = worker_app

    def new_containers(self) -> None:
        """Both functions built again from the environment at their next call (new containers)."""
        self.request_app.dependencies.reset()
        self.worker_app.dependencies.reset()

    def call(self, method: str, path: str, resource: str, body: Any, user: str, seconds: float = 29.0) -> Answer:
        params = dict(zip(("sessionId", "turnId"), [part for part in path.split("/")[2::2]], strict=False))
        result = self.request_app.lambda_handler(
            _event(method, path, resource, body, user, params), HandlerTime(seconds)
        )
        headers = dict(result.get("headers") or {})
        headers.update({name: values[-1] for name, values in (result.get("multiValueHeaders") or {}).items()})
        return Answer(result["statusCode"], json.loads(result["body"]) if result.get("body") else None, headers)

    def start(self, user: str) -> str:
        """A consented interview of the benchmark's job: its session id."""
        created = self.call("POST", "/interviews", "/interviews", {"jobId": JOB_ID}, user)
        assert created.status == 201, created.body
        session = str(created.body["sessionId"])
        notice = created.body["notice"]["noticeId"]
        consent = {"accepted": True, "noticeId": notice}
        agreed = self.call("POST", f"/interviews/{session}/consent", "/interviews/{sessionId}/consent", consent, user)
        assert agreed.status == 200, agreed.body
        return session

    def send(self, session: str, text: str, user: str, seconds: float) -> Answer:
        return self.call(
            "POST", f"/interviews/{session}/messages", "/interviews/{sessionId}/messages", {"text": text}, user, seconds
        )

    def read(self, location: str, user: str) -> Answer:
        path = location.removeprefix("/v1")
        return self.call("GET", path, "/interviews/{sessionId}/turns/{turnId}", None, user)

    def deliver(self) -> dict[str, Any]:
        """The one waiting message to InterviewTurnFunction, as Lambda's poller hands it over."""
        import boto3

        from devtools.runner_event_sources import sqs_event
        from devtools.runner_template import QueueSpec

        sqs = boto3.client("sqs", region_name=AREA)
        (message,) = sqs.receive_message(QueueUrl=self.queue_url, AttributeNames=["All"])["Messages"]
        event = sqs_event([message], QueueSpec(logical_id=QUEUE, name=QUEUE), AREA)
        result: dict[str, Any] = self.worker_app.lambda_handler(event, HandlerTime(300.0, "InterviewTurnFunction"))
        if not result["batchItemFailures"]:
            sqs.delete_message(QueueUrl=self.queue_url, ReceiptHandle=message["ReceiptHandle"])
        return result

    def answered(self, sent: Answer, user: str) -> Answer:
        """The turn's answer: the request's own, or (202) the worker's, read at its Location."""
        if sent.status != 202:
            return sent
        assert self.deliver() == {"batchItemFailures": []}
        return self.read(sent.headers["Location"], user)

    def deliver_later(self, session: str, text: str, user: str) -> Answer:
        """``text`` sent with ``Prefer: respond-async``: the worker answers it."""
        event = _event(
            "POST",
            f"/interviews/{session}/messages",
            "/interviews/{sessionId}/messages",
            {"text": text},
            user,
            {"sessionId": session},
        )
        event["headers"]["Prefer"] = "respond-async"
        event["multiValueHeaders"]["Prefer"] = ["respond-async"]
        result = self.request_app.lambda_handler(event, HandlerTime(29.0))
        assert result["statusCode"] == 202, result
        assert self.deliver() == {"batchItemFailures": []}
        return Answer(200, None, {})

    def without_shared_sizes(self) -> None:
        """The request function as it was before it read the worker's output sizes: its pace still shared."""
        from dataclasses import replace

        service = self.request_app.dependencies().service
        assert service.learned is not None
        learned = replace(service.learned, budgets=None)
        service.learned = learned
        if service.handover is not None:
            service.handover = replace(service.handover, shared=learned)

    def usage_total(self, session: str) -> int:
        import boto3

        table = boto3.resource("dynamodb", region_name=AREA).Table("InterviewsTable")
        item = table.get_item(Key={"pk": f"SESSION#{session}", "sk": "SESSION"}, ConsistentRead=True)["Item"]
        return int(item["usageTotal"]["totalTokens"])


@contextmanager
def interview_functions(
    model_environment: dict[str, str], fields: list[dict[str, Any]]
) -> Iterator[InterviewFunctions]:
    """Both functions with ``model_environment`` as their LLM settings, on a fresh moto holding the
    interview's tables, the worker's queue and a job of ``fields``; the environment as it was after."""
    import boto3
    from lambda_agents.interview.catalog.jobs import JobDraft, JobService
    from lambda_agents.interview.rules.models import FieldDefinition
    from lambda_agents.storage.application_events import events_client
    from lambda_agents.storage.dynamodb import dynamodb_resource
    from lambda_agents.storage.jobs import DynamoJobRepository
    from moto import mock_aws

    from devtools.template import create_tables

    saved = dict(os.environ)
    try:
        for name in POINTING_ELSEWHERE:
            os.environ.pop(name, None)
        os.environ.update({**ENVIRONMENT, **model_environment})
        with mock_aws():
            dynamodb_resource.cache_clear()
            events_client.cache_clear()
            create_tables(boto3.client("dynamodb", region_name=AREA), TABLES)
            attributes = {"VisibilityTimeout": "0"}  # the benchmark delivers each message itself, once
            url = boto3.client("sqs", region_name=AREA).create_queue(QueueName=QUEUE, Attributes=attributes)
            os.environ["INTERVIEW_TURNS_QUEUE_URL"] = url["QueueUrl"]
            draft = JobDraft(title="handoff bench", fields=[FieldDefinition.model_validate(f) for f in fields])
            JobService(DynamoJobRepository("InterviewsTable")).create(draft, "bench", JOB_ID)
            functions = InterviewFunctions(url["QueueUrl"])
            functions.new_containers()
            try:
                yield functions
            finally:
                functions.new_containers()
                dynamodb_resource.cache_clear()
                events_client.cache_clear()
    finally:
        os.environ.clear()
        os.environ.update(saved)
