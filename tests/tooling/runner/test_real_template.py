"""The runner on the real template.yaml: tables, queues and each function's environment."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from moto.server import ThreadedMotoServer

from devtools.local_aws import LocalAws
from devtools.runner import LocalRunner
from devtools.runner_api import HttpRequest
from devtools.runner_lambda import FunctionUnavailable
from devtools.runner_template import FunctionSpec
from devtools.template import ROOT
from tests.support.logs import captured_logs

pytestmark = pytest.mark.integration


@pytest.fixture
def real_runner() -> Iterator[LocalRunner]:
    with LocalRunner(environ={"AWS_DEFAULT_REGION": "eu-west-1"}) as runner:
        yield runner
        runner.aws.reset()


def test_the_template_tables_are_created_with_their_indexes_and_ttl(real_runner: LocalRunner) -> None:
    dynamodb = real_runner.aws.client("dynamodb")

    table = dynamodb.describe_table(TableName="SchedulesTable")["Table"]
    ttl = dynamodb.describe_time_to_live(TableName="SchedulesTable")["TimeToLiveDescription"]

    assert "UsersTable" in dynamodb.list_tables()["TableNames"]
    assert [index["IndexName"] for index in table["GlobalSecondaryIndexes"]] == ["PendingPostsIndex"]
    assert (ttl["AttributeName"], ttl["TimeToLiveStatus"]) == ("expiresAt", "ENABLED")


def test_the_nudge_queue_redrives_to_its_dead_letter_queue_after_five_receives(real_runner: LocalRunner) -> None:
    attributes = real_runner.sqs.get_queue_attributes(
        QueueUrl=real_runner.queue_urls["NudgeQueue"], AttributeNames=["All"]
    )["Attributes"]

    redrive = json.loads(attributes["RedrivePolicy"])
    assert redrive["deadLetterTargetArn"].endswith(":NudgeDeadLetterQueue")
    assert int(redrive["maxReceiveCount"]) == 5
    assert attributes["VisibilityTimeout"] == "1800"  # six times the generator's 300 s


def test_the_scheduler_env_names_the_local_table_and_queue_and_points_at_local_endpoints(
    real_runner: LocalRunner,
) -> None:
    env = real_runner.environment_for("NudgeSchedulerFunction")
    endpoints = real_runner.aws.endpoints

    assert env["USERS_TABLE"] == "UsersTable"
    assert env["NUDGE_QUEUE_URL"] == real_runner.queue_urls["NudgeQueue"]
    assert env["AWS_ENDPOINT_URL_DYNAMODB"] == endpoints.dynamodb
    assert env["AWS_ENDPOINT_URL_SQS"] == endpoints.sqs
    assert endpoints.dynamodb.startswith("http://127.0.0.1:")
    assert env["AWS_REGION"] == "eu-west-1"
    assert (env["AWS_ACCESS_KEY_ID"], env["AWS_SECRET_ACCESS_KEY"]) == ("local", "local")
    assert env["AI_AGENT_MODE"] == "mock"  # the template says openai; no key locally means mock
    assert env["OTEL_SDK_DISABLED"] == "true"  # no tracing locally
    assert env["POWERTOOLS_SERVICE_NAME"] == "nudge-scheduler"
    assert env["AWS_LAMBDA_FUNCTION_NAME"] == "NudgeSchedulerFunction"


def test_a_function_sees_the_variables_lambdas_python_runtime_adds_as_sam_local_shows_them(
    real_runner: LocalRunner,
) -> None:
    """Seen in the runtime under `sam local invoke` (tests/docker): Powertools and awslambdaric read
    AWS_EXECUTION_ENV (the JSON encoding of answers) and LAMBDA_TASK_ROOT ("in Lambda")."""
    env = real_runner.environment_for("NudgeSchedulerFunction")

    assert env["AWS_EXECUTION_ENV"] == "AWS_Lambda_python3.13"
    assert env["LAMBDA_TASK_ROOT"] == str(ROOT / "functions" / "nudge_scheduler")
    assert env["_HANDLER"] == "app.lambda_handler"
    assert env["AWS_LAMBDA_LOG_GROUP_NAME"] == "/aws/lambda/NudgeSchedulerFunction"
    assert env["AWS_LAMBDA_INITIALIZATION_TYPE"] == "on-demand"
    assert env["AWS_LAMBDA_FUNCTION_MEMORY_SIZE"] == "512"


def test_with_an_openai_key_the_local_mode_is_openai_and_the_shell_base_url_is_honoured() -> None:
    environ = {"OPENAI_API_KEY": "sk-local", "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}
    with LocalAws(environ) as aws:
        runner = LocalRunner(environ=environ, local_aws=aws)
        env = runner.environment_for("ChatFunction")
        aws.reset()

    assert env["AI_AGENT_MODE"] == "openai"
    assert env["OPENAI_BASE_URL"] == "http://127.0.0.1:9/v1"
    assert env["OPENAI_API_KEY_PARAMETER"] == "/lambda-agents/openai-api-key"
    assert "OPENAI_API_KEY" not in env  # the key stays in the shell's environment, never in a listing


def test_a_dynamodb_endpoint_in_the_environment_is_used_instead_of_the_embedded_server() -> None:
    own = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    own.start()
    host, port = own.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    try:
        environ = {"AWS_ENDPOINT_URL_DYNAMODB": endpoint, "AWS_DEFAULT_REGION": "us-east-1"}
        with LocalRunner(environ=environ) as runner:
            assert runner.aws.endpoints.dynamodb == endpoint
            assert runner.aws.endpoints.sqs != endpoint  # SQS still embedded
            assert runner.environment_for("ChatFunction")["AWS_ENDPOINT_URL_DYNAMODB"] == endpoint
            tables = runner.aws.client("dynamodb").list_tables()["TableNames"]
            assert "ChatTable" in tables
            runner.aws.reset()
    finally:
        own.stop()


def test_a_function_whose_code_is_not_written_gives_a_clear_error_not_a_crash() -> None:
    missing = FunctionSpec("GhostFunction", "functions/ghost/", "app.lambda_handler", 3, 128)
    with LocalAws({}) as aws:
        runner = LocalRunner(environ={}, local_aws=aws)
        runner.functions["GhostFunction"] = missing
        runner.template["Resources"]["GhostFunction"] = {"Type": "AWS::Serverless::Function", "Properties": {}}
        with pytest.raises(FunctionUnavailable, match=r"functions/ghost/app.py does not exist yet"):
            runner.invoke("GhostFunction", {})
        aws.reset()


def test_each_function_logs_and_counts_metrics_under_its_own_service_name_in_one_runner(
    real_runner: LocalRunner, capsys: pytest.CaptureFixture[str]
) -> None:
    # The shared Powertools logger and metrics are built once per process, by whichever function
    # is imported first; in Lambda that is the only function, in the runner every one.
    services = {
        logical_id: real_runner.environment_for(logical_id)["POWERTOOLS_SERVICE_NAME"]
        for logical_id in ("NudgeSchedulerFunction", "PendingPostsFunction")
    }
    request = HttpRequest("GET", "/api/admin/tiktok/pending", "", [("X-Local-Admin", "ops")], b"")
    capsys.readouterr()
    with captured_logs() as logs:
        for _ in range(2):  # a cold start, then a warm one, of each, interleaved
            real_runner.invoke("NudgeSchedulerFunction", {})
            assert real_runner.handle_http(request).status == 200

    lines = [json.loads(line) for line in logs.getvalue().splitlines()]
    seen = {(line["function_name"], line["service"]) for line in lines if "function_name" in line}
    assert seen == {(function, service) for function, service in services.items()}
    emitted = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith('{"_aws"')]
    by_metric = {name: blob["service"] for blob in emitted for name in blob if name[0].isupper()}
    assert (by_metric["NudgeUsersQueued"], by_metric["PendingPostsRequests"]) == (
        services["NudgeSchedulerFunction"],
        services["PendingPostsFunction"],
    )
