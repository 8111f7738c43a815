"""Least privilege, read on the transformed template: each function's role allows exactly the calls
its code makes, on exactly the tables, indexes, queues and parameters it makes them on; nothing
else (no Scan, no DeleteItem or BatchWriteItem on data, no wildcard). The managed policies are the
ones SAM attaches for logs, X-Ray and the SQS poller.

Where each call comes from (storage/ is the only code that calls AWS):
- Powertools idempotency: GetItem, PutItem, UpdateItem, DeleteItem on its table;
  Powertools Parameters (the OpenAI key, the audit salt): ssm:GetParameter.
- a transaction's Put / Update is authorised as PutItem / UpdateItem on the item's table.
`tests/integration/deploy/test_policies_cover_the_demo.py` runs the product and checks that every
call it makes is allowed by these statements.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from devtools.template import resources_of_type

from .sam_template import granted, resources, role_of, statements_of, transformed

BASIC = "arn:aws:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole"
XRAY = "arn:aws:iam::aws:policy/AWSXrayWriteOnlyAccess"
SQS_POLLER = "arn:aws:iam::aws:policy/service-role/AWSLambdaSQSQueueExecutionRole"
IDEMPOTENCY = {"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem"}


def table(name: str) -> str:
    return json.dumps({"Fn::GetAtt": [name, "Arn"]}, sort_keys=True)


def index(name: str, index_name: str) -> str:
    return json.dumps({"Fn::Sub": f"${{{name}.Arn}}/index/{index_name}"}, sort_keys=True)


def queue(name: str) -> str:
    return json.dumps({"Fn::GetAtt": [name, "Arn"]}, sort_keys=True)


def parameter(name_parameter: str) -> str:
    arn = f"arn:${{AWS::Partition}}:ssm:${{AWS::Region}}:${{AWS::AccountId}}:parameter/${{{name_parameter}}}"
    return json.dumps({"Fn::Sub": arn}, sort_keys=True)


OPENAI_KEY = {parameter("OpenAIApiKeyParameterName"): {"ssm:GetParameter"}}

EXPECTED: dict[str, dict[str, set[str]]] = {
    "NudgeSchedulerFunction": {
        index("UsersTable", "TimezoneIndex"): {"dynamodb:Query"},  # users.pages_in_timezone
        queue("NudgeQueue"): {"sqs:SendMessage"},  # SqsNudgeJobQueue.send (SendMessageBatch)
        queue("NudgeSchedulerFailureQueue"): {"sqs:SendMessage"},  # Lambda's OnFailure destination
    },
    "NudgeGeneratorFunction": {
        table("UsersTable"): {"dynamodb:GetItem"},  # users.get
        # schedules.recent (BatchGetItem), schedules.create (a transaction of Puts)
        table("SchedulesTable"): {"dynamodb:BatchGetItem", "dynamodb:PutItem"},
        table("NudgeIdempotencyTable"): IDEMPOTENCY,
        **OPENAI_KEY,
    },
    "PendingPostsFunction": {
        index("SchedulesTable", "PendingPostsIndex"): {"dynamodb:Query"},  # query_pending
        # mark_posted: a conditional update, then a read of why it was refused
        table("SchedulesTable"): {"dynamodb:UpdateItem", "dynamodb:GetItem"},
    },
    "ChatFunction": {
        # sessions (Put, consistent Get), messages (transactions of Update + Put), history (Query), rate limit (Update)
        table("ChatTable"): {"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:Query"},
        table("ChatIdempotencyTable"): IDEMPOTENCY,
        **OPENAI_KEY,
    },
    "ProcessTemplatesFunction": {
        # create (a transaction of Puts), get (Query), search by owner (Query on GSI1)
        table("ProcessTemplatesTable"): {"dynamodb:PutItem", "dynamodb:Query"},
        index("ProcessTemplatesTable", "GSI1"): {"dynamodb:Query"},
        table("ChatTable"): {"dynamodb:GetItem", "dynamodb:Query"},  # the session and its drafts, read only
    },
    "StatusJudgeFunction": {
        table("JudgmentsTable"): {"dynamodb:PutItem"},  # judgments and failed runs are only written
        **OPENAI_KEY,
    },
    "InterviewFunction": {
        # load (Query), create / commit_turn (transactions of Puts), RunSteps (Put, then Update)
        table("InterviewsTable"): {"dynamodb:Query", "dynamodb:PutItem", "dynamodb:UpdateItem"},
        table("InterviewIdempotencyTable"): IDEMPOTENCY,
        **OPENAI_KEY,
    },
}


def test_every_function_of_the_template_is_covered_here() -> None:
    assert set(EXPECTED) == set(resources_of_type("AWS::Serverless::Function"))


@pytest.mark.parametrize("function", sorted(EXPECTED))
def test_the_role_allows_exactly_the_calls_the_functions_code_makes(function: str) -> None:
    assert granted(transformed(), function) == EXPECTED[function]


@pytest.mark.parametrize("function", sorted(EXPECTED))
def test_the_managed_policies_are_only_logs_x_ray_and_the_sqs_poller(function: str) -> None:
    expected = [BASIC, XRAY] + ([SQS_POLLER] if function == "NudgeGeneratorFunction" else [])
    assert role_of(transformed(), function)["ManagedPolicyArns"] == expected


@pytest.mark.parametrize("function", sorted(EXPECTED))
def test_no_statement_uses_a_wildcard_and_every_one_names_its_purpose(function: str) -> None:
    template = transformed({"AuditSaltParameterName": "lambda-agents/ai-audit-salt"})
    for statement in statements_of(template, function):
        text = json.dumps({"Action": statement["Action"], "Resource": statement["Resource"]})
        assert "*" not in text, statement
        sam_generated = statement.get("Sid") is None and statement["Action"] == "sqs:SendMessage"
        assert statement.get("Sid") or sam_generated, statement  # SAM writes the OnFailure grant itself


def test_the_judge_only_writes_judgments() -> None:
    grants = granted(transformed(), "StatusJudgeFunction")
    assert grants[table("JudgmentsTable")] == {"dynamodb:PutItem"}


def test_the_chat_reads_the_audit_salt_only_when_one_is_configured() -> None:
    salt = parameter("AuditSaltParameterName")
    assert salt not in granted(transformed(), "ChatFunction")
    configured = granted(transformed({"AuditSaltParameterName": "lambda-agents/ai-audit-salt"}), "ChatFunction")
    assert configured[salt] == {"ssm:GetParameter"}


def test_only_the_functions_that_call_a_model_may_read_the_openai_key() -> None:
    readers = {name for name, grants in EXPECTED.items() if parameter("OpenAIApiKeyParameterName") in grants}
    assert readers == {"NudgeGeneratorFunction", "ChatFunction", "StatusJudgeFunction", "InterviewFunction"}


def test_no_role_may_scan_or_delete_data() -> None:
    template = transformed()
    idempotency = {table(name) for name in resources(template, "AWS::DynamoDB::Table") if "Idempotency" in name}
    for function in EXPECTED:
        for target, actions in granted(template, function).items():
            assert "dynamodb:Scan" not in actions and "dynamodb:BatchWriteItem" not in actions, function
            if target not in idempotency:
                assert "dynamodb:DeleteItem" not in actions, (function, target)


def _sam_policy_templates(value: Any) -> list[str]:
    if isinstance(value, dict):
        return [key for key in value if key.endswith("Policy")] + [
            name for item in value.values() for name in _sam_policy_templates(item)
        ]
    if isinstance(value, list):
        return [name for item in value for name in _sam_policy_templates(item)]
    return []


def test_the_template_uses_no_broad_sam_policy_template() -> None:
    for name, body in resources_of_type("AWS::Serverless::Function").items():
        assert _sam_policy_templates(body["Properties"].get("Policies", [])) == [], name
