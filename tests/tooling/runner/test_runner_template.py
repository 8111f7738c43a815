"""Reading template.yaml: intrinsics resolved locally, routes with their authorizers, queues, schedules."""

from __future__ import annotations

import json
from typing import Any

import pytest

from devtools.runner_template import (
    NO_VALUE,
    IntrinsicResolver,
    TemplateError,
    function_environment,
    function_specs,
    queue_specs,
    queue_subscriptions,
    route_specs,
    schedule_specs,
)
from devtools.template import load_template

QUEUE_URLS = {
    name: f"http://127.0.0.1:1/123456789012/{name}"
    for name in (
        "NudgeQueue",
        "NudgeDeadLetterQueue",
        "ChatAnswersQueue",
        "ChatAnswersDeadLetterQueue",
        "InterviewTurnsQueue",
        "InterviewTurnsDeadLetterQueue",
    )
}


def _resolver(**overrides: str) -> IntrinsicResolver:
    return IntrinsicResolver(load_template(), region="us-east-1", queue_urls=QUEUE_URLS, parameter_overrides=overrides)


def test_a_function_env_merges_globals_and_its_own_with_refs_resolved_to_local_names() -> None:
    env = function_environment(load_template(), "NudgeSchedulerFunction", _resolver())

    assert env["USERS_TABLE"] == "UsersTable"
    assert env["NUDGE_QUEUE_URL"] == QUEUE_URLS["NudgeQueue"]
    assert env["POWERTOOLS_SERVICE_NAME"] == "nudge-scheduler"
    assert env["POWERTOOLS_METRICS_NAMESPACE"] == "LambdaAgents"
    assert env["OPENAI_MODEL"] == "gpt-4o-2024-08-06"  # !Ref parameter -> its Default
    assert env["OPENAI_API_KEY_PARAMETER"] == "/lambda-agents/openai-api-key"  # !Sub
    assert env["POWERTOOLS_LOGGER_LOG_EVENT"] == "false"


def test_the_empty_base_url_parameter_drops_openai_base_url_through_no_value() -> None:
    env = function_environment(load_template(), "ChatFunction", _resolver())
    assert "OPENAI_BASE_URL" not in env


def test_a_base_url_parameter_override_turns_the_condition_on() -> None:
    env = function_environment(load_template(), "ChatFunction", _resolver(OpenAIBaseUrl="http://127.0.0.1:8/v1"))
    assert env["OPENAI_BASE_URL"] == "http://127.0.0.1:8/v1"


def test_every_function_of_the_template_resolves_its_environment() -> None:
    template = load_template()
    for logical_id in function_specs(template):
        env = function_environment(template, logical_id, _resolver())
        assert all(isinstance(value, str) for value in env.values()), logical_id


def test_overriding_an_unknown_parameter_is_refused() -> None:
    with pytest.raises(TemplateError, match="unknown parameters: \\['Nope'\\]"):
        _resolver(Nope="x")


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ({"Fn::GetAtt": ["NudgeQueue", "QueueName"]}, "NudgeQueue"),
        ({"Fn::GetAtt": ["NudgeQueue", "Arn"]}, "arn:aws:sqs:us-east-1:123456789012:NudgeQueue"),
        ({"Fn::GetAtt": ["ChatTable", "Arn"]}, "arn:aws:dynamodb:us-east-1:123456789012:table/ChatTable"),
        ({"Fn::Sub": "${ChatTable}-${AWS::Region}-${!Literal}"}, "ChatTable-us-east-1-${Literal}"),
        (
            {"Fn::Sub": ["${Name}/${NudgeQueue.QueueName}", {"Name": {"Ref": "OpenAIModel"}}]},
            "gpt-4o-2024-08-06/NudgeQueue",
        ),
        ({"Fn::Join": ["-", ["a", {"Ref": "LogRetentionDays"}]]}, "a-30"),
        ({"Fn::If": ["HasBaseUrl", "yes", "no"]}, "no"),
        ({"Ref": "AWS::NoValue"}, NO_VALUE),
    ],
)
def test_intrinsics_resolve_against_local_names(expression: dict[str, Any], expected: Any) -> None:
    result = _resolver().resolve(expression)
    assert result is NO_VALUE if expected is NO_VALUE else result == expected


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ({"Fn::ImportValue": "x"}, "cannot resolve Fn::ImportValue"),
        ({"Ref": "Missing"}, "no parameter or resource"),
        ({"Fn::GetAtt": ["ChatTable", "StreamArn"]}, "cannot resolve !GetAtt ChatTable.StreamArn"),
        ({"Fn::If": ["NoSuchCondition", "a", "b"]}, "unknown condition"),
    ],
)
def test_what_the_runner_cannot_resolve_is_named_in_the_error(expression: dict[str, Any], message: str) -> None:
    with pytest.raises(TemplateError, match=message):
        _resolver().resolve(expression)


def test_a_queue_ref_before_the_queues_exist_is_a_clear_error() -> None:
    resolver = IntrinsicResolver(load_template(), region="us-east-1")
    with pytest.raises(TemplateError, match="NudgeQueue: the queue has no local URL"):
        resolver.resolve({"Ref": "NudgeQueue"})


def test_a_parameter_without_default_must_be_given() -> None:
    template = {"Parameters": {"Stage": {"Type": "String"}}, "Resources": {}}
    with pytest.raises(TemplateError, match="parameter 'Stage' has no Default"):
        IntrinsicResolver(template, region="us-east-1").resolve({"Ref": "Stage"})


def test_functions_map_code_uri_and_handler_to_a_module_with_template_timeouts() -> None:
    specs = function_specs(load_template())

    chat = specs["ChatFunction"]
    assert (chat.module_name, chat.handler_attribute, chat.module_path) == (
        "functions.chat.app",
        "lambda_handler",
        "functions/chat/app.py",
    )
    assert (chat.timeout_s, chat.memory_mb) == (29, 512)  # Globals: API Gateway's limit
    assert specs["NudgeSchedulerFunction"].timeout_s == 300
    assert chat.layer_dirs == ("layers/common/python",)


def test_routes_take_the_api_default_cognito_authorizer_unless_they_say_aws_iam() -> None:
    specs = route_specs(load_template())
    routes = {(route.method, route.path): route for route in specs}

    assert routes[("POST", "/ai-agent/sessions/{sessionId}/messages")].auth == "cognito"
    assert routes[("GET", "/api/admin/tiktok/pending")].auth == "iam"
    assert routes[("POST", "/judge")].auth == "iam"
    assert routes[("GET", "/interviews/{sessionId}")].function_id == "InterviewFunction"
    assert routes[("DELETE", "/ai-agent/sessions/{sessionId}")].function_id == "ChatFunction"
    assert routes[("GET", "/nudges/schedule")].auth == "cognito"
    assert routes[("DELETE", "/interviews/{sessionId}")].auth == "cognito"
    assert routes[("POST", "/api/admin/jobs")].auth == "iam"
    assert routes[("GET", "/api/admin/jobs/{jobId}/applications/{applicationId}")].function_id == "JobsFunction"
    assert len(routes) == len(specs)  # no route is declared twice


def test_an_unsupported_authorizer_is_refused() -> None:
    template = {
        "Resources": {
            "Api": {
                "Type": "AWS::Serverless::Api",
                "Properties": {"Auth": {"DefaultAuthorizer": "Fn", "Authorizers": {"Fn": {"FunctionArn": "x"}}}},
            },
            "F": {
                "Type": "AWS::Serverless::Function",
                "Properties": {
                    "Events": {
                        "E": {"Type": "Api", "Properties": {"RestApiId": {"Ref": "Api"}, "Path": "/", "Method": "get"}}
                    }
                },
            },
        }
    }
    with pytest.raises(TemplateError, match="neither Cognito nor AWS_IAM"):
        route_specs(template)


def test_queues_come_dead_letter_first_with_the_redrive_policy_resolved() -> None:
    queues = queue_specs(load_template(), _resolver())

    assert list(queues) == [
        "NudgeDeadLetterQueue",
        "NudgeSchedulerFailureQueue",
        "ChatAnswersDeadLetterQueue",
        "InterviewTurnsDeadLetterQueue",
        "ChatAnswersQueue",
        "InterviewTurnsQueue",
        "NudgeQueue",
    ]
    nudge = queues["NudgeQueue"]
    assert (nudge.dead_letter_queue_id, nudge.max_receive_count) == ("NudgeDeadLetterQueue", 5)
    assert json.loads(nudge.attributes["RedrivePolicy"]) == {
        "deadLetterTargetArn": "arn:aws:sqs:us-east-1:123456789012:NudgeDeadLetterQueue",
        "maxReceiveCount": "5",
    }
    assert nudge.attributes["VisibilityTimeout"] == "1800"


def test_the_nudge_queue_is_consumed_in_batches_of_ten_with_partial_failures() -> None:
    subscription = queue_subscriptions(load_template())["NudgeQueue"]

    assert subscription.function_id == "NudgeGeneratorFunction"
    assert subscription.batch_size == 10
    assert subscription.report_batch_item_failures is True


def test_the_scheduler_has_its_hourly_schedule() -> None:
    (schedule,) = schedule_specs(load_template())["NudgeSchedulerFunction"]
    assert (schedule.event_name, schedule.expression) == ("Hourly", "cron(5 * * * ? *)")
