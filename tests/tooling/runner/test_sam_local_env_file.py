"""sam-local.env.json from the template: local names on the local endpoint, or a deployed stack's."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from devtools.sam_local import DEFAULT_ENDPOINT, env_file_document, stack_resources
from devtools.template import resources_of_type
from tests.support.commands import run_command

TABLES = sorted(resources_of_type("AWS::DynamoDB::Table"))


class FakeCloudFormation:
    """list_stack_resources in two pages, as CloudFormation pages a large stack."""

    def __init__(self, resources: dict[str, str]) -> None:
        self._summaries = [{"LogicalResourceId": k, "PhysicalResourceId": v} for k, v in resources.items()]

    def get_paginator(self, operation: str) -> FakeCloudFormation:
        assert operation == "list_stack_resources"
        return self

    def paginate(self, StackName: str) -> Iterator[dict[str, Any]]:  # noqa: N803 (boto3's spelling)
        assert StackName == "lambda-agents-dev"
        half = len(self._summaries) // 2
        yield {"StackResourceSummaries": self._summaries[:half]}
        yield {"StackResourceSummaries": [*self._summaries[half:], {"LogicalResourceId": "Pending"}]}


def test_given_the_local_endpoint_then_every_function_gets_mock_mode_endpoints_and_local_names() -> None:
    document = env_file_document()

    assert document["Parameters"]["AI_AGENT_MODE"] == "mock"
    assert document["Parameters"]["AWS_ENDPOINT_URL_DYNAMODB"] == DEFAULT_ENDPOINT
    assert document["ChatFunction"] == {
        "CHAT_TABLE": "ChatTable",
        "IDEMPOTENCY_TABLE": "ChatIdempotencyTable",
        "TEMPLATES_TABLE": "ProcessTemplatesTable",
        "CHAT_ANSWERS_QUEUE_URL": f"{DEFAULT_ENDPOINT}/123456789012/ChatAnswersQueue",
        "USER_SPENDING_TABLE": "UserSpendingTable",
        "CONNECTIONS_TABLE": "",  # no WebSocket API under sam local: nothing is pushed
        "SOCKET_API_ENDPOINT": "",
    }
    assert document["NudgeSchedulerFunction"]["NUDGE_QUEUE_URL"] == f"{DEFAULT_ENDPOINT}/123456789012/NudgeQueue"


def test_given_a_deployed_stack_then_its_physical_names_are_used_and_no_endpoint_is_set() -> None:
    physical = {name: f"lambda-agents-dev-{name}-1A2B3C" for name in TABLES}
    physical["NudgeQueue"] = "https://sqs.us-east-1.amazonaws.com/111122223333/lambda-agents-dev-NudgeQueue-9Z"
    physical["ChatAnswersQueue"] = "https://sqs.us-east-1.amazonaws.com/111122223333/lambda-agents-dev-ChatAnswers-8Y"
    physical["InterviewTurnsQueue"] = "https://sqs.us-east-1.amazonaws.com/111122223333/lambda-agents-dev-Turns-7X"
    deployed = stack_resources(FakeCloudFormation(physical), "lambda-agents-dev")

    document = env_file_document(deployed=deployed)

    assert "AWS_ENDPOINT_URL_DYNAMODB" not in document["Parameters"]
    assert document["ChatFunction"]["CHAT_TABLE"] == "lambda-agents-dev-ChatTable-1A2B3C"
    assert document["NudgeSchedulerFunction"]["NUDGE_QUEUE_URL"] == physical["NudgeQueue"]
    assert "Pending" not in deployed  # a resource without a physical ID yet is left out


def _env_file_for_a_stack(tmp_path: Path, **environment: str) -> subprocess.CompletedProcess[str]:
    """``python -m devtools.sam_local env-file --stack ...`` as a newcomer runs it, with no AWS set-up
    but ``environment``: no profile, no config files, no instance metadata to ask."""
    kept = {k: v for k, v in os.environ.items() if not k.startswith("AWS_") and k != "PYTHONPATH"}
    kept.update(
        {
            "AWS_CONFIG_FILE": str(tmp_path / "no-config"),
            "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "no-credentials"),
            "AWS_EC2_METADATA_DISABLED": "true",
            **environment,
        }
    )
    return run_command(
        [sys.executable, "-m", "devtools.sam_local", "env-file", "--stack", "lambda-agents-dev"], cwd=tmp_path, env=kept
    )


def test_given_no_region_when_a_stack_is_named_then_the_error_says_how_to_set_one_without_a_traceback(
    tmp_path: Path,
) -> None:
    done = _env_file_for_a_stack(tmp_path)

    assert done.returncode == 2
    assert done.stdout == ""
    assert "Traceback" not in done.stderr
    assert "AWS_REGION" in done.stderr and "lambda-agents-dev" in done.stderr


def test_given_no_credentials_when_a_stack_is_named_then_the_error_says_which_are_missing_without_a_traceback(
    tmp_path: Path,
) -> None:
    done = _env_file_for_a_stack(tmp_path, AWS_REGION="us-east-1")

    assert done.returncode == 2
    assert done.stdout == ""
    assert "Traceback" not in done.stderr
    assert "credentials" in done.stderr and "AWS_PROFILE" in done.stderr
