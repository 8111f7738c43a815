"""Data survives a stack's deletion or replacement, and failures reach someone: read on the
SAM-transformed template. Data tables and the user pool are retained and deletion-protected, data
tables are recoverable (PITR) and idempotency tables are not; dead-letter queues are kept. Alarms
watch every function's errors and throttles, the API's 5XX and p95 latency, the share of
fallback answers (from the functions' own Powertools metrics), the dead-letter queue and the
scheduler's failed runs, and notify the optional SNS topic. The API writes access logs, and every
function has its log group with the stack's retention."""

from __future__ import annotations

import json
import re
import tomllib
from typing import Any

import pytest

from devtools.template import ROOT, load_template, resources_of_type
from tests.support.sam_template import resources, transformed

TOPIC = "arn:aws:sns:us-east-1:123456789012:on-call"
IDEMPOTENCY_TABLES = {"NudgeIdempotencyTable", "ChatIdempotencyTable", "InterviewIdempotencyTable"}


def data_tables() -> set[str]:
    return set(resources_of_type("AWS::DynamoDB::Table")) - IDEMPOTENCY_TABLES


def alarms(parameters: dict[str, str] | None = None) -> dict[str, dict[str, Any]]:
    found = resources(transformed(parameters), "AWS::CloudWatch::Alarm")
    return {name: body["Properties"] for name, body in found.items()}


def function_variables(function: str) -> dict[str, Any]:
    template = load_template()
    return {
        **template["Globals"]["Function"]["Environment"]["Variables"],
        **resources_of_type("AWS::Serverless::Function")[function]["Properties"]["Environment"]["Variables"],
    }


# -- data safety ---------------------------------------------------------------------------------


def test_the_idempotency_tables_are_the_ones_holding_powertools_records() -> None:
    named = {
        value["Ref"]
        for body in resources_of_type("AWS::Serverless::Function").values()
        for key, value in body["Properties"].get("Environment", {}).get("Variables", {}).items()
        if key == "IDEMPOTENCY_TABLE"
    }
    assert named == IDEMPOTENCY_TABLES


@pytest.mark.parametrize("table", sorted(data_tables()))
def test_a_data_table_is_retained_deletion_protected_and_recoverable(table: str) -> None:
    body = transformed()["Resources"][table]
    assert (body["DeletionPolicy"], body["UpdateReplacePolicy"]) == ("Retain", "Retain")
    assert body["Properties"]["DeletionProtectionEnabled"] is True
    assert body["Properties"]["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": True}


@pytest.mark.parametrize("table", sorted(IDEMPOTENCY_TABLES))
def test_an_idempotency_table_holds_only_expiring_retry_records_so_it_has_no_recovery(table: str) -> None:
    body = transformed()["Resources"][table]
    assert "PointInTimeRecoverySpecification" not in body["Properties"]
    assert body["Properties"]["TimeToLiveSpecification"]["Enabled"] is True
    assert "DeletionPolicy" not in body


def test_the_user_pool_is_retained_and_deletion_protected() -> None:
    pool = transformed()["Resources"]["UserPool"]
    assert (pool["DeletionPolicy"], pool["UpdateReplacePolicy"]) == ("Retain", "Retain")
    assert pool["Properties"]["DeletionProtection"] == "ACTIVE"


def test_queues_that_record_failures_are_retained() -> None:
    template = transformed()
    failure_queues = {"NudgeDeadLetterQueue", "NudgeSchedulerFailureQueue"}
    for name in failure_queues:
        assert template["Resources"][name]["DeletionPolicy"] == "Retain", name
    assert template["Resources"]["NudgeQueue"].get("DeletionPolicy", "Delete") == "Delete"  # jobs are re-queued hourly


# -- alarms --------------------------------------------------------------------------------------


@pytest.mark.parametrize("function", sorted(resources_of_type("AWS::Serverless::Function")))
@pytest.mark.parametrize("metric", ["Errors", "Throttles"])
def test_every_function_has_an_errors_and_a_throttles_alarm(function: str, metric: str) -> None:
    watching = [
        name
        # the Batch API fan-out's function and its alarms exist only in its modes
        for name, alarm in alarms({"NudgeFanoutMode": "batch"}).items()
        if alarm.get("Namespace") == "AWS/Lambda"
        and alarm["MetricName"] == metric
        and alarm["Dimensions"] == [{"Name": "FunctionName", "Value": {"Ref": function}}]
        and alarm["Threshold"] == 0
    ]
    assert len(watching) == 1


def _api_alarm(metric: str) -> dict[str, Any]:
    (api,) = resources(transformed(), "AWS::ApiGateway::RestApi").values()
    (found,) = [a for a in alarms().values() if a.get("Namespace") == "AWS/ApiGateway" and a["MetricName"] == metric]
    api_name = api["Properties"]["Name"]
    assert found["Dimensions"] == [{"Name": "ApiName", "Value": api_name}, {"Name": "Stage", "Value": "v1"}]
    return found


def test_the_api_5xx_are_alarmed() -> None:
    alarm = _api_alarm("5XXError")
    assert (alarm["Statistic"], alarm["ComparisonOperator"]) == ("Sum", "GreaterThanThreshold")


def test_the_api_p95_latency_is_alarmed_below_api_gateways_29_s() -> None:
    alarm = _api_alarm("Latency")
    assert alarm["ExtendedStatistic"] == "p95"
    assert alarm["Threshold"] < 29_000


@pytest.mark.parametrize(
    ("alarm_name", "function", "fallbacks", "total"),
    [
        ("ChatFallbackShareAlarm", "ChatFunction", "ChatFallbacks", "ChatMessages"),
        ("NudgeFallbackShareAlarm", "NudgeGeneratorFunction", "NudgeFallbacks", "NudgeUsersProcessed"),
    ],
)
def test_the_share_of_fallback_answers_is_alarmed_on_the_metrics_the_function_emits(
    alarm_name: str, function: str, fallbacks: str, total: str
) -> None:
    alarm = alarms()[alarm_name]
    stats = {query["Id"]: query["MetricStat"]["Metric"] for query in alarm["Metrics"] if "MetricStat" in query}
    variables = function_variables(function)
    for metric in stats.values():
        assert metric["Namespace"] == variables["POWERTOOLS_METRICS_NAMESPACE"]
        # Powertools Metrics adds the service as the one dimension
        assert metric["Dimensions"] == [{"Name": "service", "Value": variables["POWERTOOLS_SERVICE_NAME"]}]
    assert sorted(metric["MetricName"] for metric in stats.values()) == sorted([fallbacks, total])
    code_uri = resources_of_type("AWS::Serverless::Function")[function]["Properties"]["CodeUri"]
    handler = (ROOT / code_uri / "app.py").read_text()
    for name in (fallbacks, total):
        assert re.search(rf'name="{name}"', handler), f"{function} does not emit {name}"
    (share,) = [query for query in alarm["Metrics"] if "Expression" in query]
    assert share["ReturnData"] is True and "/" in share["Expression"]
    assert 0 < alarm["Threshold"] <= 1


@pytest.mark.parametrize("queue", ["NudgeDeadLetterQueue", "NudgeSchedulerFailureQueue"])
def test_a_message_in_a_failure_queue_is_alarmed(queue: str) -> None:
    watched = [
        alarm
        for alarm in alarms().values()
        if alarm.get("MetricName") == "ApproximateNumberOfMessagesVisible"
        and alarm["Dimensions"] == [{"Name": "QueueName", "Value": {"Fn::GetAtt": [queue, "QueueName"]}}]
    ]
    assert len(watched) == 1 and watched[0]["Threshold"] == 0


def test_the_schedulers_failed_asynchronous_runs_go_to_its_failure_queue_after_two_retries() -> None:
    (config,) = resources(transformed(), "AWS::Lambda::EventInvokeConfig").values()
    assert config["Properties"]["FunctionName"] == {"Ref": "NudgeSchedulerFunction"}
    assert config["Properties"]["MaximumRetryAttempts"] == 2
    assert config["Properties"]["DestinationConfig"]["OnFailure"]["Destination"] == {
        "Fn::GetAtt": ["NudgeSchedulerFailureQueue", "Arn"]
    }


def test_alarms_notify_the_topic_given_else_an_email_topic_the_stack_creates_else_nothing() -> None:
    assert all("AlarmActions" not in alarm for alarm in alarms().values())
    assert resources(transformed(), "AWS::SNS::Topic") == {}
    notified = alarms({"AlarmTopicArn": TOPIC}).values()
    assert all(alarm["AlarmActions"] == [{"Ref": "AlarmTopicArn"}] for alarm in notified)
    emailed = transformed({"AlarmEmail": "oncall@example.com"})
    (topic,) = resources(emailed, "AWS::SNS::Topic").values()
    assert topic["Properties"]["Subscription"] == [{"Protocol": "email", "Endpoint": {"Ref": "AlarmEmail"}}]
    assert all(
        alarm["AlarmActions"] == [{"Ref": "AlarmEmailTopic"}] for alarm in alarms({"AlarmEmail": "o@x.io"}).values()
    )
    both = alarms({"AlarmTopicArn": TOPIC, "AlarmEmail": "oncall@example.com"}).values()
    assert all(alarm["AlarmActions"] == [{"Ref": "AlarmTopicArn"}] for alarm in both)


def test_prod_refuses_to_deploy_without_somewhere_to_send_alarms() -> None:
    rule = load_template()["Rules"]["AlarmsGoSomewhere"]
    assert rule["RuleCondition"] == {"Fn::Equals": [{"Ref": "RequireAlarmTarget"}, "true"]}
    prod = tomllib.loads((ROOT / "samconfig.toml").read_text(encoding="utf-8"))["prod"]["deploy"]["parameters"]
    assert "RequireAlarmTarget=true" in prod["parameter_overrides"].split()


def test_alarms_have_generated_names_so_two_stacks_do_not_collide() -> None:
    assert all("AlarmName" not in alarm for alarm in alarms().values())


# -- access logs ---------------------------------------------------------------------------------


def test_the_api_writes_access_logs_without_bodies_or_query_strings() -> None:
    (stage,) = resources(transformed(), "AWS::ApiGateway::Stage").values()
    setting = stage["Properties"]["AccessLogSetting"]
    assert setting["DestinationArn"] == {"Fn::GetAtt": ["ApiAccessLogs", "Arn"]}
    document = json.loads(re.sub(r"\$context\.[A-Za-z.]+", "x", setting["Format"]))
    assert {"requestId", "status", "route", "latencyMs"} <= set(document)
    assert not re.search(r"\$input|requestOverride|querystring|\.body", setting["Format"])
    log_group = transformed()["Resources"]["ApiAccessLogs"]["Properties"]
    assert log_group["RetentionInDays"] == {"Ref": "LogRetentionDays"}


def _function_whose_log_group(body: dict[str, Any]) -> str | None:
    """``F`` for a group named ``!Sub /aws/lambda/${F}``: Lambda writes function F's logs there."""
    name = body["Properties"].get("LogGroupName")  # the API's access log has a generated name
    sub = name.get("Fn::Sub", "") if isinstance(name, dict) else ""
    found = re.fullmatch(r"/aws/lambda/\$\{(\w+)\}", sub)
    return found.group(1) if found else None


@pytest.mark.parametrize("mode", ["sync", "batch"])
def test_every_function_has_exactly_one_log_group_with_the_stacks_retention(mode: str) -> None:
    # Each fan-out mode's template: a function that exists only in one mode (NudgeBatchFunction)
    # needs its group there, and no group may be left without its function.
    template = transformed({"NudgeFanoutMode": mode})
    functions = sorted(resources(template, "AWS::Lambda::Function"))
    groups = {
        name: _function_whose_log_group(body)
        for name, body in resources(template, "AWS::Logs::LogGroup").items()
        if _function_whose_log_group(body) is not None
    }
    owners = list(groups.values())
    assert {function: owners.count(function) for function in functions} == dict.fromkeys(functions, 1)
    assert set(owners) <= set(functions)
    for name in groups:
        assert template["Resources"][name]["Properties"]["RetentionInDays"] == {"Ref": "LogRetentionDays"}, name


def test_api_gateway_has_the_accounts_cloudwatch_role_before_the_api_exists() -> None:
    template = transformed()
    assert template["Resources"]["ApiGatewayAccount"]["Properties"]["CloudWatchRoleArn"] == {
        "Fn::GetAtt": ["ApiGatewayCloudWatchRole", "Arn"]
    }
    (api_name,) = resources(template, "AWS::ApiGateway::RestApi")
    assert template["Resources"][api_name]["DependsOn"] == "ApiGatewayAccount"
    assert template["Resources"]["ApiGatewayCloudWatchRole"]["DeletionPolicy"] == "Retain"  # other APIs may use it
