"""With AWS_SAM_STACK_NAME (and AWS credentials allowed to read the stack and set its alarms' state):
an alarm of the deployed stack put into ALARM by hand publishes its notification, as
docs/deploy.md#after-a-deploy-do-alarms-reach-someone does after each deploy. CloudWatch records in the
alarm's history whether the action worked: a topic, or a topic key, CloudWatch may not use reads
"Failed to execute action" there and nowhere else."""

from __future__ import annotations

import json
import os
import time
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest

from tests.live.conftest import require_live

ALARM = "NudgeSchedulerErrorsAlarm"  # in every stack; notifies wherever the stack's alarms go
POLLS = 30  # the history is read at most this many times, POLL_S apart
POLL_S = 2.0


def stack_alarm(session: Any, stack: str) -> dict[str, Any]:
    cloudformation = session.client("cloudformation")
    name = cloudformation.describe_stack_resource(StackName=stack, LogicalResourceId=ALARM)["StackResourceDetail"][
        "PhysicalResourceId"
    ]
    (alarm,) = session.client("cloudwatch").describe_alarms(AlarmNames=[name])["MetricAlarms"]
    return dict(alarm)


def action_items_since(cloudwatch: Any, name: str, since: datetime) -> list[dict[str, Any]]:
    history = cloudwatch.describe_alarm_history(
        AlarmName=name, HistoryItemType="Action", StartDate=since, ScanBy="TimestampDescending"
    )
    return list(history["AlarmHistoryItems"])


def test_given_the_deployed_stack_when_an_alarm_goes_off_then_its_notification_is_published() -> None:
    stack = require_live("AWS_SAM_STACK_NAME")["AWS_SAM_STACK_NAME"]
    session = boto3.Session(profile_name=os.environ.get("AWS_PROFILE") or None)
    alarm = stack_alarm(session, stack)
    if not alarm.get("AlarmActions"):
        pytest.skip("live test: the stack's alarms notify nothing (deploy with AlarmEmail or AlarmTopicArn)")
    cloudwatch = session.client("cloudwatch")
    name = alarm["AlarmName"]
    since = datetime.now(UTC)
    # From OK, so that ALARM is a change of state (only a change runs the alarm's actions).
    cloudwatch.set_alarm_state(AlarmName=name, StateValue="OK", StateReason="live test: alarm delivery")
    cloudwatch.set_alarm_state(AlarmName=name, StateValue="ALARM", StateReason="live test: alarm delivery")

    items: list[dict[str, Any]] = []
    for _ in range(POLLS):
        items = action_items_since(cloudwatch, name, since)
        if items:
            break
        time.sleep(POLL_S)

    assert items, f"{name}: no action was recorded after it went into ALARM"
    latest = items[0]
    data = json.loads(latest.get("HistoryData") or "{}")
    assert latest["HistorySummary"].startswith("Successfully executed action"), (latest["HistorySummary"], data)
    assert data.get("actionState") == "Succeeded", data
