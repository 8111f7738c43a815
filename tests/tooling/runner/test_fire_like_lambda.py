"""Spec: ``python -m devtools.runner fire NudgeSchedulerFunction`` delivers the queues the
schedule filled as Lambda's event source does (batch size, batching window, maximum concurrency, a
deferred message back only after its visibility timeout), as ``drain`` does. Under a provider limit
of 20 requests a minute, 40 users are all served by the model: the users the limit refuses are
deferred and come back when it has room, where playing each message's whole life at once (what
``fire`` did, now ``--replay-failures-at-once``) redelivered them within seconds until their last
delivery's fallback.

Time runs 10x faster than real (``devtools.time_scale``): the fake server's model and limit, the
template's timeouts, batching window and visibility timeouts, and the product's own delays in every
container, so the minutes of the model's time the limit needs take seconds here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from lambda_agents.llm.offline_model import sample
from lambda_agents.llm.schema import model_schema
from lambda_agents.nudges.profile import UserProfile
from lambda_agents.nudges.schema import create_agent_output_model

from devtools import time_scale
from devtools.fake_openai import FakeOpenAIServer, RateLimit, Reply, Step
from devtools.local_aws import put_profiles
from devtools.runner import LocalRunner, main
from devtools.template import ROOT, load_template
from devtools.time_scale import container_environment, scaled_template

from .fake_app import write_app

pytestmark = pytest.mark.integration

SCALE = 0.1
USERS = 40
ZONE = "Asia/Tokyo"
LIMIT = RateLimit(requests_per_minute=20, tokens_per_minute=10_000_000)  # the requests bind, not the tokens
PROBLEMS = ("staying_up_late", "procrastination", "anxiety")  # 15 slots


class PlanServer(FakeOpenAIServer):
    """Answers every request the limit lets through with a 15-slot plan of 3,000 tokens at 60 tokens/s."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        content = json.dumps(sample(model_schema(create_agent_output_model(15)), "en"))
        self._plan = Reply(content=content, needs_tokens=3000)

    def _next_step(self, body: dict[str, Any]) -> Step | None:
        return self._plan


def due_now() -> dict[str, Any]:
    """The template, 10x faster, with the scheduler's generation hour the zone's current one (and
    the next, should the hour turn meanwhile)."""
    template = scaled_template(load_template(), SCALE)
    variables = template["Resources"]["NudgeSchedulerFunction"]["Properties"]["Environment"]["Variables"]
    variables["NUDGE_GENERATION_HOUR"] = str(datetime.now(ZoneInfo(ZONE)).hour)
    variables["NUDGE_CATCH_UP_HOURS"] = "2"
    return template


@pytest.fixture
def server() -> Iterator[PlanServer]:
    with PlanServer(time_scale=SCALE, rate_limit=LIMIT) as running:
        yield running


@pytest.fixture
def runner() -> Iterator[LocalRunner]:
    with LocalRunner(template=due_now(), environ={"AWS_DEFAULT_REGION": "us-east-1"}) as local:
        dynamodb = local.aws.client("dynamodb")
        for n in range(USERS):
            put_profiles(dynamodb, UserProfile(user_id=f"fire-{n:02d}", problems=PROBLEMS, timezone=ZONE))
        yield local
        local.aws.reset()


def model_environment(server: FakeOpenAIServer) -> dict[str, str]:
    """The functions' provider is the fake server, the pace they plan with scaled like it; the
    product's delays scaled in every container. Waits for a token keep their real length: a busy
    machine must not turn a slow token into a fallback."""
    return {**time_scale.model_environment(server.base_url, SCALE), **container_environment(SCALE)}


def schedules(runner: LocalRunner) -> list[dict[str, Any]]:
    return list(
        runner.aws.client("dynamodb").scan(
            TableName="SchedulesTable",
            FilterExpression="begins_with(sk, :schedule)",
            ExpressionAttributeValues={":schedule": {"S": "SCHEDULE#"}},
        )["Items"]
    )


def test_fire_under_a_20_requests_a_minute_limit_serves_all_40_users_by_the_model(
    runner: LocalRunner, server: PlanServer
) -> None:
    result, reports = runner.fire("NudgeSchedulerFunction", env_overrides=model_environment(server), time_limit_s=300)

    assert result["queued"] == USERS, result
    (report,) = reports
    assert (report.queue_id, report.succeeded, report.left_in_queue) == ("NudgeQueue", USERS, 0), report.summary()
    assert report.moved_to_dead_letter_queue == 0
    assert max(report.batch_sizes) <= 10 and report.most_at_once <= 5  # the event source's batches and concurrency
    stored = schedules(runner)
    assert len(stored) == USERS
    assert [item["fallbackUsed"]["BOOL"] for item in stored].count(False) == USERS  # every user by the model
    # The limit bound the run: its bucket holds 20 requests and refills 20 a (scaled) minute, so the
    # 40th request the model answered came at least one minute after the first. Whether it also
    # refused some depends on how close together the containers started (it refused about 15 when
    # they started within a second, none on a slower machine, whose first answers' headers taught
    # the product the limit in time): either way every user is the model's.
    answered = sorted(record.started_at for record in server.billing if record.ended == "complete")
    needs_s = (USERS - LIMIT.requests_per_minute) / LIMIT.requests_per_minute * 60 * SCALE
    assert answered[-1] - answered[0] >= needs_s * 0.95, (answered, needs_s)


# -- the CLI, on an application of its own ----------------------------------------------------------

APP_TEMPLATE = """\
Globals:
  Function:
    Handler: app.lambda_handler
    Timeout: 10
Resources:
  WorkDeadLetterQueue:
    Type: AWS::SQS::Queue
  WorkQueue:
    Type: AWS::SQS::Queue
    Properties:
      VisibilityTimeout: 60
      RedrivePolicy:
        deadLetterTargetArn: !GetAtt WorkDeadLetterQueue.Arn
        maxReceiveCount: 3
  ProducerFunction:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: fire_handlers/producer/
      Environment:
        Variables:
          WORK_QUEUE_URL: !Ref WorkQueue
      Events:
        Hourly:
          Type: Schedule
          Properties:
            Schedule: rate(1 hour)
  ConsumerFunction:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: fire_handlers/consumer/
      Environment:
        Variables:
          WORK_QUEUE_URL: !Ref WorkQueue
          DEFER_SECONDS: "2"
      Events:
        Work:
          Type: SQS
          Properties:
            Queue: !GetAtt WorkQueue.Arn
            BatchSize: 2
            FunctionResponseTypes: [ReportBatchItemFailures]
            ScalingConfig:
              MaximumConcurrency: 2
"""
PRODUCER = """
import os, boto3
def lambda_handler(event, context):
    sqs = boto3.client("sqs")
    for n in range(4):
        sqs.send_message(QueueUrl=os.environ["WORK_QUEUE_URL"], MessageBody=f"job-{n}")
    return {"queued": 4}
"""
# Defers every message on its first delivery, as the generator defers a rate-limited user (back after
# DEFER_SECONDS, not the queue's visibility timeout), and refuses one received again before that:
# SQS never hands out a message it was told to keep invisible, so an early one is the runner's fault.
CONSUMER = """
import os, time, boto3
def lambda_handler(event, context):
    sqs = boto3.client("sqs")
    defer_s = int(os.environ["DEFER_SECONDS"])
    failures = []
    for record in event["Records"]:
        attributes = record["attributes"]
        if attributes["ApproximateReceiveCount"] == "1":
            sqs.change_message_visibility(
                QueueUrl=os.environ["WORK_QUEUE_URL"], ReceiptHandle=record["receiptHandle"], VisibilityTimeout=defer_s
            )
            failures.append({"itemIdentifier": record["messageId"]})
        elif time.time() - int(attributes["ApproximateFirstReceiveTimestamp"]) / 1000 < defer_s:
            failures.append({"itemIdentifier": record["messageId"]})
    return {"batchItemFailures": failures}
"""


@pytest.fixture
def app_dir(tmp_path: Path) -> Path:
    return write_app(tmp_path, APP_TEMPLATE, "fire_handlers", {"producer": PRODUCER, "consumer": CONSUMER})


def fire(*args: str) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AWS_ENDPOINT_URL"))}
    environment |= {"PYTHONPATH": f"{ROOT / 'layers/common/python'}:{ROOT}", "AWS_DEFAULT_REGION": "us-east-1"}
    command = [sys.executable, "-m", "devtools.runner", *args]
    return subprocess.run(command, cwd=ROOT, env=environment, capture_output=True, text=True, timeout=180, check=False)


def test_the_cli_fire_gives_back_a_deferred_message_only_after_the_visibility_its_consumer_set(app_dir: Path) -> None:
    """Each of the four messages is deferred on its first delivery and served on its next, once its
    visibility timeout has passed, in batches of the event source's size: none reaches the DLQ."""
    done = fire("-t", str(app_dir / "template.yaml"), "fire", "ProducerFunction")

    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout) == {"queued": 4}
    assert "WorkQueue -> ConsumerFunction:" in done.stderr
    summary = done.stderr[done.stderr.index("WorkQueue -> ConsumerFunction:") :].splitlines()[0]
    assert "8 deliveries, 4 succeeded, 4 failed deliveries, 0 left in queue, 0 moved to the DLQ" in summary
    assert "at most 2 batches at once" in summary


def test_the_cli_names_what_the_quick_replay_skips(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["fire", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())

    assert "--replay-failures-at-once" in help_text
    assert "skips visibility timeouts, backoffs, the batching window and concurrency" in help_text
