"""Data survives a stack's deletion or replacement, and failures reach someone: read on the
SAM-transformed template. Data tables and the user pool are retained and deletion-protected, data
tables are recoverable (PITR) and idempotency tables are not; dead-letter queues are kept. Alarms
watch every function's errors and throttles, the API's 5XX and p95 latency, the share of
fallback answers (from the functions' own Powertools metrics), every failure queue's depth and every
work queue's oldest message, and notify the optional SNS topic: one CloudWatch can publish to. The
API writes access logs, and every function has its log group with the stack's retention."""

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
# Counters of a day that expire two days after it: losing one lets a user spend afresh, no data is lost.
COUNTER_TABLES = {"UserSpendingTable"}


def data_tables() -> set[str]:
    return set(resources_of_type("AWS::DynamoDB::Table")) - IDEMPOTENCY_TABLES - COUNTER_TABLES


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


@pytest.mark.parametrize("table", sorted(IDEMPOTENCY_TABLES | COUNTER_TABLES))
def test_an_idempotency_or_counter_table_holds_only_expiring_records_so_it_has_no_recovery(table: str) -> None:
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


def test_a_batch_job_whose_provider_calls_keep_failing_is_alarmed_on_the_metric_the_function_emits() -> None:
    """The run succeeds when one job's calls fail (its Errors alarm stays quiet): the count it emits
    is what tells. Powertools emits it with the service as its one dimension; the alarm names
    exactly that set, or CloudWatch matches nothing."""
    alarm = alarms({"NudgeFanoutMode": "batch"})["NudgeBatchJobErrorsAlarm"]
    variables = function_variables("NudgeBatchFunction")
    handler = (ROOT / "functions" / "nudge_batches" / "app.py").read_text()

    assert alarm["Namespace"] == variables["POWERTOOLS_METRICS_NAMESPACE"]
    assert alarm["MetricName"] == "NudgeBatchJobErrors"
    assert re.search(r'metrics\.add_metric\(name="NudgeBatchJobErrors"', handler)  # no dimension of its own
    assert alarm["Dimensions"] == [{"Name": "service", "Value": variables["POWERTOOLS_SERVICE_NAME"]}]
    assert (alarm["Statistic"], alarm["Threshold"], alarm["ComparisonOperator"]) == ("Sum", 0, "GreaterThanThreshold")
    # a job still failing in the next run, not a one-off the next run cleared (one run a quarter-hour)
    assert (alarm["Period"], alarm["DatapointsToAlarm"], alarm["EvaluationPeriods"]) == (900, 2, 3)
    notified = alarms({"NudgeFanoutMode": "batch", "AlarmTopicArn": TOPIC})["NudgeBatchJobErrorsAlarm"]
    assert notified["AlarmActions"] == [{"Ref": "AlarmTopicArn"}]
    assert "NudgeBatchJobErrorsAlarm" not in alarms()  # no batch function in the sync mode


def failure_queues() -> set[str]:
    """Queues that only record failures: every queue's dead-letter target and the scheduler's OnFailure destination."""
    queues = resources_of_type("AWS::SQS::Queue")
    targets = {
        body["Properties"]["RedrivePolicy"]["deadLetterTargetArn"]["Fn::GetAtt"][0]
        for body in queues.values()
        if "RedrivePolicy" in body["Properties"]
    }
    return targets | {"NudgeSchedulerFailureQueue"}


def work_queues() -> dict[str, tuple[str, dict[str, Any]]]:
    """Each queue a function consumes -> (the function, its SQS event's properties)."""
    consumed = {}
    for name, body in resources_of_type("AWS::Serverless::Function").items():
        for event in body["Properties"].get("Events", {}).values():
            if event["Type"] == "SQS":
                consumed[event["Properties"]["Queue"]["Fn::GetAtt"][0]] = (name, event["Properties"])
    return consumed


def queue_alarms(metric: str, queue: str) -> list[dict[str, Any]]:
    return [
        alarm
        for alarm in alarms().values()
        if alarm.get("Namespace") == "AWS/SQS"
        and alarm.get("MetricName") == metric
        and alarm["Dimensions"] == [{"Name": "QueueName", "Value": {"Fn::GetAtt": [queue, "QueueName"]}}]
    ]


def test_the_queues_are_work_queues_or_failure_queues() -> None:
    assert failure_queues() == {
        "NudgeDeadLetterQueue",
        "ChatAnswersDeadLetterQueue",
        "InterviewTurnsDeadLetterQueue",
        "NudgeSchedulerFailureQueue",
    }
    assert set(work_queues()) == {"NudgeQueue", "ChatAnswersQueue", "InterviewTurnsQueue"}
    assert set(work_queues()) | failure_queues() == set(resources_of_type("AWS::SQS::Queue"))


@pytest.mark.parametrize("queue", sorted(failure_queues()))
def test_a_message_in_a_failure_queue_is_alarmed(queue: str) -> None:
    watched = queue_alarms("ApproximateNumberOfMessagesVisible", queue)
    assert len(watched) == 1 and watched[0]["Threshold"] == 0
    assert (watched[0]["Statistic"], watched[0]["ComparisonOperator"]) == ("Maximum", "GreaterThanThreshold")
    # its depth alarm fires at the first message and stays in ALARM while one is left: no age alarm
    assert queue_alarms("ApproximateAgeOfOldestMessage", queue) == []


@pytest.mark.parametrize("queue", sorted(work_queues()))
def test_a_work_queue_whose_oldest_message_outlived_every_delivery_is_alarmed(queue: str) -> None:
    # Older than maxReceiveCount deliveries, each back after at most the visibility timeout, plus
    # the batching window before the first: had anyone received it, it would be in the dead-letter
    # queue by now. Nobody is consuming the queue.
    function, event = work_queues()[queue]
    properties = resources_of_type("AWS::SQS::Queue")[queue]["Properties"]
    visibility = properties["VisibilityTimeout"]
    deliveries = properties["RedrivePolicy"]["maxReceiveCount"]
    longest_life = deliveries * visibility + event.get("MaximumBatchingWindowInSeconds", 0)
    timeout = resources_of_type("AWS::Serverless::Function")[function]["Properties"]["Timeout"]
    assert visibility >= 6 * timeout  # AWS's advice: a retried invocation never finds its message visible again

    (alarm,) = queue_alarms("ApproximateAgeOfOldestMessage", queue)

    assert alarm["Threshold"] == longest_life
    assert (alarm["Statistic"], alarm["ComparisonOperator"]) == ("Maximum", "GreaterThanThreshold")
    assert alarm["TreatMissingData"] == "notBreaching"  # SQS stops reporting a queue idle for six hours
    assert str(longest_life) in alarm["AlarmDescription"]


def test_the_schedulers_failed_asynchronous_runs_go_to_its_failure_queue_after_two_retries() -> None:
    (config,) = resources(transformed(), "AWS::Lambda::EventInvokeConfig").values()
    assert config["Properties"]["FunctionName"] == {"Ref": "NudgeSchedulerFunction"}
    assert config["Properties"]["MaximumRetryAttempts"] == 2
    assert config["Properties"]["DestinationConfig"]["OnFailure"]["Destination"] == {
        "Fn::GetAtt": ["NudgeSchedulerFailureQueue", "Arn"]
    }


def test_the_alarm_email_topic_is_one_cloudwatch_can_publish_to() -> None:
    # An alarm's action fails silently on a topic CloudWatch cannot encrypt for: the AWS managed key
    # alias/aws/sns does not let cloudwatch.amazonaws.com use it. Every action of every alarm must be
    # a plain topic, or one whose customer managed key lets CloudWatch's alarms generate data keys.
    template = transformed({"AlarmEmail": "oncall@example.com"})
    actions = {
        json.dumps(action) for alarm in alarms({"AlarmEmail": "o@x.io"}).values() for action in alarm["AlarmActions"]
    }
    assert actions == {json.dumps({"Ref": "AlarmEmailTopic"})}
    topic = template["Resources"]["AlarmEmailTopic"]["Properties"]
    key_id = topic.get("KmsMasterKeyId")
    if key_id is None:
        return  # a plain topic: CloudWatch publishes to it
    assert not (isinstance(key_id, str) and key_id.startswith("alias/aws/")), f"{key_id}: an AWS managed key"
    key = template["Resources"][key_id["Ref"]]
    assert key["Type"] == "AWS::KMS::Key"
    properties = key["Properties"]
    assert properties["EnableKeyRotation"] is True
    statements = properties["KeyPolicy"]["Statement"]
    root = {"AWS": {"Fn::Sub": "arn:${AWS::Partition}:iam::${AWS::AccountId}:root"}}
    assert any(s["Principal"] == root and s["Action"] == "kms:*" and s["Effect"] == "Allow" for s in statements)
    (cloudwatch,) = [s for s in statements if s["Principal"] == {"Service": "cloudwatch.amazonaws.com"}]
    # Exactly the statement AWS documents for CloudWatch publishing to an encrypted topic (the SNS
    # guide, "Enable compatibility between event sources from AWS services and encrypted topics"):
    # no condition. A global condition key the caller does not send (IAM: not every request has
    # aws:SourceAccount or aws:SourceArn) would deny every notification, and nothing would say so.
    documented = {"Effect": "Allow", "Principal": {"Service": "cloudwatch.amazonaws.com"}, "Resource": "*"}
    assert {name: value for name, value in cloudwatch.items() if name not in ("Sid", "Action")} == documented
    assert set(cloudwatch["Action"]) == {"kms:Decrypt", "kms:GenerateDataKey*"}
    assert key.get("Condition") == template["Resources"]["AlarmEmailTopic"].get("Condition")


def test_an_operators_own_alarm_topic_is_told_what_cloudwatch_needs_of_it() -> None:
    # A topic given as AlarmTopicArn is outside the stack: its requirement is stated where it is set.
    description = " ".join(load_template()["Parameters"]["AlarmTopicArn"]["Description"].split())
    assert "cloudwatch.amazonaws.com" in description and "kms:GenerateDataKey*" in description
    assert "not alias/aws/sns" in description


def test_alarms_notify_the_topic_given_else_an_email_topic_the_stack_creates_else_nothing() -> None:
    assert all("AlarmActions" not in alarm for alarm in alarms().values())
    assert resources(transformed(), "AWS::SNS::Topic") == {}
    assert resources(transformed(), "AWS::KMS::Key") == {}  # no key without its topic
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


def _function_whose_log_group(
    body: dict[str, Any], group: str = "", template: dict[str, Any] | None = None
) -> str | None:
    """``F`` for a group named ``/aws/lambda/<F's name>`` (``!Sub /aws/lambda/${F}``, or a Sub
    whose variable is ``!Ref F``), or the group F's LoggingConfig names: Lambda writes F's logs there."""
    for function, resource in (template or {}).get("Resources", {}).items():
        logging = resource.get("Properties", {}).get("LoggingConfig", {})
        if resource["Type"] == "AWS::Lambda::Function" and logging.get("LogGroup") == {"Ref": group}:
            return str(function)
    name = body["Properties"].get("LogGroupName")  # the API's access log has a generated name
    sub = name.get("Fn::Sub", "") if isinstance(name, dict) else ""
    text, variables = (sub[0], sub[1]) if isinstance(sub, list) else (sub, {})
    found = re.fullmatch(r"/aws/lambda/\$\{(\w+)\}", text)
    if found is None:
        return None
    variable = variables.get(found.group(1))
    if variable is None:
        return found.group(1)
    return variable["Ref"] if isinstance(variable, dict) and set(variable) == {"Ref"} else None


@pytest.mark.parametrize("mode", ["sync", "batch"])
def test_every_function_has_exactly_one_log_group_with_the_stacks_retention(mode: str) -> None:
    # Each fan-out mode's template: a function that exists only in one mode (NudgeBatchFunction)
    # needs its group there, and no group may be left without its function.
    template = transformed({"NudgeFanoutMode": mode})
    functions = sorted(resources(template, "AWS::Lambda::Function"))
    groups = {
        name: _function_whose_log_group(body, name, template)
        for name, body in resources(template, "AWS::Logs::LogGroup").items()
        if _function_whose_log_group(body, name, template) is not None
    }
    owners = list(groups.values())
    assert {function: owners.count(function) for function in functions} == dict.fromkeys(functions, 1)
    assert set(owners) <= set(functions)
    for name in groups:
        assert template["Resources"][name]["Properties"]["RetentionInDays"] == {"Ref": "LogRetentionDays"}, name


def test_the_batch_functions_group_is_named_by_the_stack_so_a_stack_that_ran_it_before_can_update() -> None:
    """Stacks ran NudgeBatchFunction before they declared its group, so Lambda made
    /aws/lambda/<its name> for it: a group of that name in the template fails their update (it
    exists already). The stack's group has its own name, and the function writes there."""
    template = transformed({"NudgeFanoutMode": "batch"})
    function = template["Resources"]["NudgeBatchFunction"]["Properties"]
    assert function["LoggingConfig"] == {"LogGroup": {"Ref": "NudgeBatchLogs"}}
    name = template["Resources"]["NudgeBatchLogs"]["Properties"]["LogGroupName"]
    assert name == {"Fn::Sub": "/aws/lambda/${AWS::StackName}/NudgeBatchFunction"}
    assert _function_whose_log_group({"Properties": {"LogGroupName": name}}) is None  # not Lambda's own name
    template_text = (ROOT / "template.yaml").read_text(encoding="utf-8")
    assert "deploy.md#a-stack-that-ran-the-batch-api-modes-before-its-log-group" in template_text
    guide = (ROOT / "docs" / "deploy.md").read_text(encoding="utf-8")
    assert "\n## A stack that ran the Batch API modes before its log group\n" in guide


def test_api_gateway_has_the_accounts_cloudwatch_role_before_the_api_exists() -> None:
    template = transformed()
    assert template["Resources"]["ApiGatewayAccount"]["Properties"]["CloudWatchRoleArn"] == {
        "Fn::GetAtt": ["ApiGatewayCloudWatchRole", "Arn"]
    }
    (api_name,) = resources(template, "AWS::ApiGateway::RestApi")
    assert template["Resources"][api_name]["DependsOn"] == "ApiGatewayAccount"
    assert template["Resources"]["ApiGatewayCloudWatchRole"]["DeletionPolicy"] == "Retain"  # other APIs may use it
