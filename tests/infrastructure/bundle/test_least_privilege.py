"""Least privilege, read on the transformed template: each function's role allows exactly the calls
its code makes, on exactly the tables, indexes, queues and parameters it makes them on; nothing
else (no Scan, no wildcard; DeleteItem / BatchWriteItem on data only where a user or the employer
deletes something: a chat session, a template, a withdrawn interview, the user's nudge data, a
published event). The
managed policies are the ones SAM attaches for logs, X-Ray and the SQS poller.

Where each call comes from (storage/ is the only code that calls AWS):
- Powertools idempotency: GetItem, PutItem, UpdateItem, DeleteItem on its table;
  Powertools Parameters (the OpenAI key, the audit salt): ssm:GetParameter.
- a transaction's Put / Update is authorised as PutItem / UpdateItem on the item's table.
`tests/integration/deploy/test_policies_cover_what_the_product_does.py` drives every route, queue and
schedule through the local runner and checks that every call is allowed by these statements, on the
partition keys their conditions allow, and that every grant is used.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from devtools.template import ROOT, load_template, resources_of_type
from tests.support.model_functions import FUNCTIONS_THAT_CALL_A_MODEL
from tests.support.sam_template import granted, resources, role_of, statements_of, transformed

BASIC = "arn:aws:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole"
XRAY = "arn:aws:iam::aws:policy/AWSXrayWriteOnlyAccess"
OTEL_LAYER_ARN = "arn:aws:lambda:us-east-1:901920570463:layer:aws-otel-python-arm64-ver-1-32-0:1"
SQS_POLLER = "arn:aws:iam::aws:policy/service-role/AWSLambdaSQSQueueExecutionRole"
IDEMPOTENCY = {"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem"}
# A chat turn, by REST or socket: the session (consistent Get), the rate limit (Put under a version),
# the message and its mark (transactions of Update + Put), the history (Query) and a turn's read (BatchGet).
CHAT_TURN = {
    "dynamodb:GetItem",
    "dynamodb:PutItem",
    "dynamodb:UpdateItem",
    "dynamodb:Query",
    "dynamodb:BatchGetItem",
}


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
BUS = json.dumps(
    {"Fn::Sub": "arn:${AWS::Partition}:events:${AWS::Region}:${AWS::AccountId}:event-bus/${ApplicationEventBusName}"},
    sort_keys=True,
)
# Posting to the WebSocket API's open connections: this API's stage, POST, any connection (their ids
# are API Gateway's, known only once connected) - the one wildcard a role may hold.
CONNECTIONS_ARN = (
    "arn:${AWS::Partition}:execute-api:${AWS::Region}:${AWS::AccountId}:${SocketApi}/v1/POST/@connections/*"
)
CONNECTIONS_API = json.dumps({"Fn::Sub": CONNECTIONS_ARN}, sort_keys=True)
# What every function that stores a user's answer may do to push it (live/channel.py): list the
# user's connections, post to them, delete the gone ones.
PUSHES = {
    index("ConnectionsTable", "UserConnectionsIndex"): {"dynamodb:Query"},
    table("ConnectionsTable"): {"dynamodb:DeleteItem"},
    CONNECTIONS_API: {"execute-api:ManageConnections"},
}
PUSHERS = ("ChatFunction", "ChatAnswerFunction", "InterviewFunction", "InterviewTurnFunction", "SocketMessageFunction")
# Where data may be deleted, and why; everywhere else DeleteItem and BatchWriteItem are refused.
DELETERS = {
    *((function, table("ConnectionsTable")) for function in PUSHERS),  # a connection found gone (410)
    ("SocketConnectionFunction", table("ConnectionsTable")),  # $disconnect
    ("ChatFunction", table("ChatTable")),  # DELETE /ai-agent/sessions/{id}
    ("ProcessTemplatesFunction", table("ProcessTemplatesTable")),  # DELETE /process-templates/{id}
    ("InterviewFunction", table("InterviewsTable")),  # DELETE /interviews/{id} (withdrawal)
    ("ApplicationEventsRelayFunction", table("InterviewsTable")),  # a published outbox entry
    ("NudgesApiFunction", table("UsersTable")),  # DELETE /nudges/profile: the profile, last
    ("NudgesApiFunction", table("SchedulesTable")),  # DELETE /nudges/profile: schedules and posts
}

# The Batch API fan-out's function exists only with NudgeFanoutMode batch or batch_then_sync.
EVERY_FUNCTION = {"NudgeFanoutMode": "batch_then_sync"}

SQS_CONSUMERS = {
    "NudgeGeneratorFunction",
    "ChatAnswerFunction",
    "InterviewTurnFunction",
}  # SAM adds the queue poller's policy

EXPECTED: dict[str, dict[str, set[str]]] = {
    "NudgeSchedulerFunction": {
        index("UsersTable", "TimezoneIndex"): {"dynamodb:Query"},  # users.pages_in_timezone, .count_in_timezone
        # planned starts: DynamoCohortMarks.queued / .mark (COHORT#<zone> items only)
        table("SchedulesTable"): {"dynamodb:GetItem", "dynamodb:PutItem"},
        queue("NudgeQueue"): {"sqs:SendMessage"},  # SqsNudgeJobQueue.send (SendMessageBatch)
        queue("NudgeSchedulerFailureQueue"): {"sqs:SendMessage"},  # Lambda's OnFailure destination
    },
    "NudgeGeneratorFunction": {
        # users.get; the schedule's transaction checks the profile is there and not being deleted
        table("UsersTable"): {"dynamodb:GetItem", "dynamodb:ConditionCheckItem"},
        # schedules.recent (BatchGetItem), schedules.create (a transaction of Puts)
        table("SchedulesTable"): {"dynamodb:BatchGetItem", "dynamodb:PutItem"},
        table("NudgeIdempotencyTable"): IDEMPOTENCY,
        # a deferred user's message returns after its backoff (QueueMessages.return_after)
        queue("NudgeQueue"): {"sqs:ChangeMessageVisibility"},
        **OPENAI_KEY,
    },
    "NudgeBatchFunction": {
        index("UsersTable", "TimezoneIndex"): {"dynamodb:Query"},  # users.pages_in_timezone
        # users.get; the schedule's transaction checks the profile is there and not being deleted
        table("UsersTable"): {"dynamodb:GetItem", "dynamodb:ConditionCheckItem"},
        # schedules.recent (BatchGetItem), schedules.create (Puts); DynamoCohortBatches (BATCH#<date>
        # items only: Put, Query)
        table("SchedulesTable"): {"dynamodb:BatchGetItem", "dynamodb:PutItem", "dynamodb:Query"},
        queue("NudgeSchedulerFailureQueue"): {"sqs:SendMessage"},  # Lambda's OnFailure destination
        **OPENAI_KEY,
    },
    "PendingPostsFunction": {
        index("SchedulesTable", "PendingPostsIndex"): {"dynamodb:Query"},  # query_pending
        # mark_posted: a conditional update, then a read of why it was refused
        table("SchedulesTable"): {"dynamodb:UpdateItem", "dynamodb:GetItem"},
    },
    "ChatFunction": {
        # a chat turn's, then a session read with its page (BatchGet), deletion (BatchWrite, the head's Delete)
        table("ChatTable"): CHAT_TURN | {"dynamodb:BatchWriteItem", "dynamodb:DeleteItem"},
        index("ChatTable", "UserSessionsIndex"): {"dynamodb:Query"},  # the caller's sessions
        # retry records; a deleted session takes its records along (BatchWrite)
        table("ChatIdempotencyTable"): IDEMPOTENCY | {"dynamodb:BatchWriteItem"},
        # templates made from a deleted session lose their reference to it
        table("ProcessTemplatesTable"): {"dynamodb:BatchGetItem", "dynamodb:UpdateItem"},
        queue("ChatAnswersQueue"): {"sqs:SendMessage"},  # a turn whose answer does not fit the request
        table("UserSpendingTable"): {"dynamodb:GetItem", "dynamodb:UpdateItem"},  # the budget: read, admit, count
        **OPENAI_KEY,
    },
    "ChatAnswerFunction": {
        # the session (Get), the turn (BatchGet), the history (Query), the answer's transaction (Put + Update)
        table("ChatTable"): {
            "dynamodb:GetItem",
            "dynamodb:BatchGetItem",
            "dynamodb:Query",
            "dynamodb:PutItem",
            "dynamodb:UpdateItem",
        },
        table("UserSpendingTable"): {"dynamodb:UpdateItem"},  # the budget: count, give back
        **OPENAI_KEY,
    },
    "ProcessTemplatesFunction": {
        # create / update / delete (one transaction of Put, Update, Delete items each), get (Query)
        table("ProcessTemplatesTable"): {
            "dynamodb:PutItem",
            "dynamodb:Query",
            "dynamodb:UpdateItem",
            "dynamodb:DeleteItem",
        },
        index("ProcessTemplatesTable", "GSI1"): {"dynamodb:Query"},
        table("ChatTable"): {"dynamodb:GetItem", "dynamodb:Query"},  # the session and its drafts, read only
    },
    "StatusJudgeFunction": {
        table("JudgmentsTable"): {"dynamodb:PutItem"},  # judgments and failed runs are only written
        **OPENAI_KEY,
    },
    "InterviewFunction": {
        # load (Query), the session's head (Get), create (the job's ConditionCheck and Puts), commit_turn
        # (transactions of Puts), RunSteps (Put, then Update), withdrawal (BatchWrite, the head's Delete)
        table("InterviewsTable"): {
            "dynamodb:Query",
            "dynamodb:GetItem",
            "dynamodb:PutItem",
            "dynamodb:UpdateItem",
            "dynamodb:DeleteItem",
            "dynamodb:BatchWriteItem",
            "dynamodb:ConditionCheckItem",
        },
        index("InterviewsTable", "OpenJobsIndex"): {"dynamodb:Query"},  # GET /jobs: open jobs only
        index("InterviewsTable", "ApplicantInterviewsIndex"): {"dynamodb:Query"},  # GET /interviews: own only
        table("InterviewIdempotencyTable"): IDEMPOTENCY,
        BUS: {"events:PutEvents"},  # an application completed, failed its audit or was withdrawn
        queue("InterviewTurnsQueue"): {"sqs:SendMessage"},  # a turn that does not fit in its request
        table("UserSpendingTable"): {"dynamodb:GetItem", "dynamodb:UpdateItem"},  # the budget: read, admit, count
        **OPENAI_KEY,
    },
    "InterviewTurnFunction": {
        # the session (Query), RunSteps (Put, Update), the turn's commit (Puts), the mark's release (Update),
        # the calls its request paid for (Get), the pace and output sizes it shares (Put)
        table("InterviewsTable"): {"dynamodb:GetItem", "dynamodb:Query", "dynamodb:PutItem", "dynamodb:UpdateItem"},
        BUS: {"events:PutEvents"},  # the turn that finishes the interview announces it
        table("UserSpendingTable"): {"dynamodb:UpdateItem"},  # the budget: count, give back
        **OPENAI_KEY,
    },
    "NudgesApiFunction": {
        # the profile: read, create or change, marked for deletion, then deleted
        table("UsersTable"): {"dynamodb:GetItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem"},
        # the day's schedule (Get); a deletion reads the user's partition (Query) and their posts by key
        # (BatchGet), then deletes both (BatchWrite)
        table("SchedulesTable"): {
            "dynamodb:GetItem",
            "dynamodb:Query",
            "dynamodb:BatchGetItem",
            "dynamodb:BatchWriteItem",
        },
        # the generator's records of the user: read (is a run under way?), then deleted
        table("NudgeIdempotencyTable"): {"dynamodb:BatchGetItem", "dynamodb:BatchWriteItem"},
    },
    "JobsFunction": {
        # jobs: versions (transactions of Puts), close (Update); reads of jobs and applications
        table("InterviewsTable"): {"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:Query", "dynamodb:UpdateItem"},
        index("InterviewsTable", "JobApplicationsIndex"): {"dynamodb:Query"},  # a job's applications
        index("InterviewsTable", "JobCatalogIndex"): {"dynamodb:Query"},  # GET /api/admin/jobs
    },
    "ApplicationEventsRelayFunction": {
        table("InterviewsTable"): {"dynamodb:Query", "dynamodb:DeleteItem"},  # the outbox: read, then removed
        BUS: {"events:PutEvents"},
    },
    "SocketAuthorizerFunction": {},  # checks a token against the pool's public keys: no data
    "SocketConnectionFunction": {table("ConnectionsTable"): {"dynamodb:PutItem", "dynamodb:DeleteItem"}},
    "SocketMessageFunction": {
        table("ChatTable"): CHAT_TURN,
        table("ChatIdempotencyTable"): IDEMPOTENCY,
        queue("ChatAnswersQueue"): {"sqs:SendMessage"},
        # the interview (Query), its turn's mark (Update + Put), the calls a handed-over turn paid for (Put),
        # the pace and output sizes the worker shares (Get)
        table("InterviewsTable"): {"dynamodb:GetItem", "dynamodb:Query", "dynamodb:UpdateItem", "dynamodb:PutItem"},
        table("InterviewIdempotencyTable"): IDEMPOTENCY,
        queue("InterviewTurnsQueue"): {"sqs:SendMessage"},
        table("UserSpendingTable"): {"dynamodb:GetItem", "dynamodb:UpdateItem"},  # the budget: read, admit
        **PUSHES,
    },
}
for _pusher in PUSHERS[:-1]:
    EXPECTED[_pusher].update(PUSHES)


def test_every_function_of_the_template_is_covered_here() -> None:
    assert set(EXPECTED) == set(resources_of_type("AWS::Serverless::Function"))


@pytest.mark.parametrize("function", sorted(EXPECTED))
def test_the_role_allows_exactly_the_calls_the_functions_code_makes(function: str) -> None:
    assert granted(transformed(EVERY_FUNCTION), function) == EXPECTED[function]


@pytest.mark.parametrize("function", sorted(EXPECTED))
def test_the_managed_policies_are_only_logs_the_sqs_poller_and_x_ray_when_tracing_is_on(function: str) -> None:
    poller = [SQS_POLLER] if function in SQS_CONSUMERS else []
    assert role_of(transformed(EVERY_FUNCTION), function)["ManagedPolicyArns"] == [BASIC, *poller]
    traced = transformed({**EVERY_FUNCTION, "OtelLayerArn": OTEL_LAYER_ARN, "TracingMode": "Active"})
    assert role_of(traced, function)["ManagedPolicyArns"] == [BASIC, XRAY, *poller]


@pytest.mark.parametrize("function", sorted(EXPECTED))
def test_no_statement_uses_a_wildcard_and_every_one_names_its_purpose(function: str) -> None:
    template = transformed({**EVERY_FUNCTION, "AuditSaltParameterName": "lambda-agents/ai-audit-salt"})
    for statement in statements_of(template, function):
        text = json.dumps({"Action": statement["Action"], "Resource": statement["Resource"]}, sort_keys=True)
        assert "*" not in text.replace(CONNECTIONS_API, ""), statement
        sam_generated = statement.get("Sid") is None and statement["Action"] == "sqs:SendMessage"
        assert statement.get("Sid") or sam_generated, statement  # SAM writes the OnFailure grant itself


def test_the_judge_only_writes_judgments() -> None:
    grants = granted(transformed(EVERY_FUNCTION), "StatusJudgeFunction")
    assert grants[table("JudgmentsTable")] == {"dynamodb:PutItem"}


def test_the_chat_reads_the_audit_salt_only_when_one_is_configured() -> None:
    salt = parameter("AuditSaltParameterName")
    assert salt not in granted(transformed(EVERY_FUNCTION), "ChatFunction")
    configured = granted(
        transformed({**EVERY_FUNCTION, "AuditSaltParameterName": "lambda-agents/ai-audit-salt"}), "ChatFunction"
    )
    assert configured[salt] == {"ssm:GetParameter"}


def test_only_the_functions_that_call_a_model_may_read_the_openai_key() -> None:
    readers = {name for name, grants in EXPECTED.items() if parameter("OpenAIApiKeyParameterName") in grants}
    assert readers == FUNCTIONS_THAT_CALL_A_MODEL


def test_no_role_may_scan_and_only_the_documented_deletions_may_delete_data() -> None:
    template = transformed(EVERY_FUNCTION)
    idempotency = {table(name) for name in resources(template, "AWS::DynamoDB::Table") if "Idempotency" in name}
    for function in EXPECTED:
        for target, actions in granted(template, function).items():
            assert "dynamodb:Scan" not in actions, function
            deletes = actions & {"dynamodb:DeleteItem", "dynamodb:BatchWriteItem"}
            if deletes and target not in idempotency:
                assert (function, target) in DELETERS, (function, target, deletes)


def test_the_relay_and_the_jobs_function_write_only_their_own_keys() -> None:
    template = transformed(EVERY_FUNCTION)
    # Every action granted here names a key (no Scan), so the partition key condition always applies.
    for function, prefix in (("ApplicationEventsRelayFunction", "APPLICATION_EVENTS"), ("JobsFunction", "JOB#*")):
        writes = [
            statement
            for statement in statements_of(template, function)
            if {"dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem"} & set(statement["Action"])
        ]
        assert writes, function
        for statement in writes:
            (test,) = statement["Condition"].values()  # StringEquals or StringLike (a prefix with *)
            assert test["dynamodb:LeadingKeys"] == [prefix], (function, statement)


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


def test_a_customer_kms_key_of_the_key_parameter_is_decryptable_only_through_ssm_and_only_when_named() -> None:
    arn = "arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
    readers = {name for name, grants in EXPECTED.items() if parameter("OpenAIApiKeyParameterName") in grants}
    plain, configured = transformed(EVERY_FUNCTION), transformed({**EVERY_FUNCTION, "ParameterKmsArn": arn})
    for function in sorted(EXPECTED):
        assert not [s for s in statements_of(plain, function) if "kms:Decrypt" in json.dumps(s)], function
        decrypt = [s for s in statements_of(configured, function) if "kms:Decrypt" in json.dumps(s["Action"])]
        if function not in readers:
            assert decrypt == [], function
            continue
        (statement,) = decrypt
        assert statement["Resource"] == {"Ref": "ParameterKmsArn"}  # the key named, never a wildcard
        via = statement["Condition"]["StringEquals"]["kms:ViaService"]
        assert via == {"Fn::Sub": "ssm.${AWS::Region}.amazonaws.com"}


def test_every_function_that_calls_a_model_and_only_those_may_read_the_fallback_models_key() -> None:
    """The Batch API path goes through the model chain too: a job the first model does not take goes
    to the next, with that model's key."""
    key = parameter("FallbackApiKeyParameterName")
    template = transformed({**EVERY_FUNCTION, "FallbackApiKeyParameterName": "lambda-agents/azure-openai-key"})
    readers = {name for name in EXPECTED if key in granted(template, name)}
    assert readers == FUNCTIONS_THAT_CALL_A_MODEL
    assert all(granted(template, name)[key] == {"ssm:GetParameter"} for name in readers)
    assert not any(key in granted(transformed(EVERY_FUNCTION), name) for name in EXPECTED)


MODEL_KEYS = (
    "arn:aws:ssm:us-east-1:123456789012:parameter/lambda-agents/azure-openai-key,"
    "arn:aws:ssm:us-east-1:123456789012:parameter/lambda-agents/mini-key"
)


def test_the_keys_fallback_models_name_one_by_one_are_readable_by_every_model_function_and_nothing_more() -> None:
    """``FallbackModels`` may give a model its own ``apiKeyParameter``; the functions that call a
    model may read exactly the parameters listed in FallbackModelKeyParameterArns, and none by default."""
    listed = json.dumps({"Ref": "FallbackModelKeyParameterArns"}, sort_keys=True)
    template = transformed({**EVERY_FUNCTION, "FallbackModelKeyParameterArns": MODEL_KEYS})
    readers = {name for name in EXPECTED if listed in granted(template, name)}
    assert readers == FUNCTIONS_THAT_CALL_A_MODEL
    for name in readers:
        (statement,) = [s for s in statements_of(template, name) if s.get("Sid") == "FallbackModelsOwnKeys"]
        assert statement["Action"] == ["ssm:GetParameter"] and statement["Resource"] == {
            "Ref": "FallbackModelKeyParameterArns"
        }
    assert not any(listed in granted(transformed(EVERY_FUNCTION), name) for name in EXPECTED)
    declared = load_template()["Parameters"]["FallbackModelKeyParameterArns"]
    assert declared["Type"] == "CommaDelimitedList" and declared["Default"] == ""


def test_the_deploy_guide_names_every_function_that_gets_the_sqs_pollers_policy() -> None:
    template = transformed(EVERY_FUNCTION)
    pollers = {name for name in EXPECTED if SQS_POLLER in role_of(template, name)["ManagedPolicyArns"]}
    guide = " ".join((ROOT / "docs" / "deploy.md").read_text(encoding="utf-8").split())
    (sentence,) = [part for part in re.split(r"(?<=\.)\s", guide) if "AWSLambdaSQSQueueExecutionRole" in part]
    named = set(re.findall(r"`(\w+Function)`", sentence))
    assert pollers == SQS_CONSUMERS and named == pollers, sentence
