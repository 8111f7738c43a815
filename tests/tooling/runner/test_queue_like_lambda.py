"""Spec: the local runner drains a queue the way Lambda's SQS event source does: batches of the
event source's size, at most its maximum concurrency of them at once, each in a container process
of its own that is reused for the next batch; a failed message waits out its visibility timeout
and after the queue's maxReceiveCount goes to the dead-letter queue. The real template and the
real generator run (offline model), so the local fan-out is the deployed one's shape."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from datetime import datetime
from zoneinfo import ZoneInfo

import pytest
from lambda_agents.nudges.profile import UserProfile

from devtools.local_aws import put_profiles
from devtools.runner import LocalRunner
from devtools.template import load_template

pytestmark = pytest.mark.integration

TODAY = datetime.now(ZoneInfo("Asia/Tokyo")).date().isoformat()
USERS = 75  # eight batches of up to ten: more than the five containers allowed


def seed(runner: LocalRunner, users: int) -> None:
    profiles = [
        UserProfile(user_id=f"fan-{n}", problems=("staying_up_late",), timezone="Asia/Tokyo") for n in range(users)
    ]
    put_profiles(runner.aws.client("dynamodb"), *profiles)


def local_runner(visibility_timeout_s: int | None = None) -> Iterator[LocalRunner]:
    template = copy.deepcopy(load_template())
    if visibility_timeout_s is not None:
        queue = template["Resources"]["NudgeQueue"]["Properties"]
        queue["VisibilityTimeout"] = visibility_timeout_s
        queue["RedrivePolicy"]["maxReceiveCount"] = 2
    with LocalRunner(template=template, environ={"AWS_DEFAULT_REGION": "us-east-1", "AI_AGENT_MODE": "mock"}) as local:
        yield local
        local.aws.reset()


@pytest.fixture
def runner() -> Iterator[LocalRunner]:
    yield from local_runner()  # the template's queue: a 1,800 s visibility timeout


@pytest.fixture
def quick_redrive() -> Iterator[LocalRunner]:
    """Failures back after 10 s (longer than a container's cold start and the 5 s batching window,
    as a visibility timeout must be) and dead-lettered on their second receive."""
    yield from local_runner(visibility_timeout_s=10)


def test_a_fan_out_runs_batches_side_by_side_up_to_the_maximum_concurrency_in_reused_containers(
    runner: LocalRunner,
) -> None:
    seed(runner, USERS)
    for n in range(USERS):
        runner.send_message("NudgeQueue", json.dumps({"userId": f"fan-{n}", "localDate": TODAY}))

    report = runner.drain_like_lambda("NudgeQueue", time_limit_s=300)

    assert report.succeeded == USERS and report.failed_deliveries == 0 and report.left_in_queue == 0
    assert max(report.batch_sizes) <= 10 and sum(report.batch_sizes) == USERS
    assert 2 <= report.most_at_once <= 5  # NudgeGeneratorConcurrency's default: batches ran side by side
    assert 2 <= report.containers <= 5 < report.batches  # containers were reused, never more than allowed
    schedules = runner.aws.client("dynamodb").scan(TableName="SchedulesTable", Select="COUNT")["Count"]
    assert schedules >= USERS  # each user's day (and its posts) stored


def test_a_message_that_keeps_failing_waits_out_its_visibility_timeout_then_goes_to_the_dead_letter_queue(
    quick_redrive: LocalRunner,
) -> None:
    runner = quick_redrive
    runner.send_message("NudgeQueue", "this is not a job")

    report = runner.drain_like_lambda("NudgeQueue", time_limit_s=120)

    assert report.succeeded == 0
    assert report.failed_deliveries == 2  # received twice (maxReceiveCount 2), then redriven
    assert report.moved_to_dead_letter_queue == 1 and report.left_in_queue == 0


def test_a_function_that_cannot_start_fails_its_batches_and_the_drain_ends(runner: LocalRunner) -> None:
    """A container whose cold start fails (here: its settings cannot be read) fails each batch it is
    given, as Lambda's init errors do; the drain does not hang or crash, and the messages stay."""
    runner.send_message("NudgeQueue", json.dumps({"userId": "fan-0", "localDate": TODAY}))

    report = runner.drain_like_lambda(
        "NudgeQueue", time_limit_s=20, env_overrides={"NUDGE_MAX_RECEIVE_COUNT": "not a number"}
    )

    assert report.succeeded == 0 and report.failed_deliveries >= 1 and report.left_in_queue == 1
