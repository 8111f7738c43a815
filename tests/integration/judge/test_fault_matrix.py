"""Fault matrix for the status judge (docs/judge.md#failures): ``POST /judge`` through the handler, the real
openai client against the fake server and the judgments table on moto.

Every fault of the first stage falls through to the next (a provider rejecting the schema
included, takt#1593); the judgment is stored once with its stage log, and a run where no stage
matched is kept as a failure record; storage and deadline faults give clear answers before the
Lambda's timeout.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from devtools.fake_openai import FakeOpenAIServer, Fault, Reply, Slow, Step
from devtools.template import create_tables
from tests.support.dynamo_faults import THROTTLED, dynamo_fault
from tests.support.logs import captured_logs

pytestmark = pytest.mark.integration

RULES = [
    {"condition": "The review approves the change", "tag": "[REVIEW:1]"},
    {"condition": "The review requests fixes", "tag": "[REVIEW:2]"},
]
OUTPUT = "Last round said [REVIEW:1]. This round the parser still fails: fixes requested."
TAG_ANSWER = Reply(content="Quoting the last round: [REVIEW:1]\nThis round: [REVIEW:2]")
ADMIN = {"identity": {"userArn": "arn:aws:iam::123456789012:user/workflow"}}

STAGE1_FAULTS: dict[str, tuple[Step, ...]] = {
    "schema rejected (400)": (Fault(400, message="Invalid schema for response_format"),),
    "refusal": (Reply(refusal="I can't judge this."),),
    "content_filter": (Reply(finish_reason="content_filter"),),
    "truncated (length)": (Reply(content='{"step": 2, "rea', finish_reason="length"),),
    "429 twice": (Fault(429, retry_after=0.01), Fault(429, retry_after=0.01)),
    "500 twice": (Fault(500), Fault(500)),
    "invalid JSON twice": (Reply(content="step two"), Reply(content="{step: 2}")),
    "bad step twice": (Reply(content='{"step": 9, "reason": "x"}'), Reply(content='{"step": 0, "reason": "x"}')),
}


class Context:
    function_name = "StatusJudgeFunction"
    memory_limit_in_mb = 512
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:StatusJudgeFunction"
    aws_request_id = "req-1"

    def __init__(self, remaining_s: float = 60.0) -> None:
        self._ends = time.monotonic() + remaining_s

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._ends - time.monotonic()) * 1000))


@pytest.fixture
def judge(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Any, FakeOpenAIServer]]:
    with mock_aws(), FakeOpenAIServer() as server:
        create_tables(boto3.client("dynamodb"), ["JudgmentsTable"])
        for name, value in {
            "JUDGMENTS_TABLE": "JudgmentsTable",
            "AI_AGENT_MODE": "openai",
            "OPENAI_API_KEY": "test-key",
            "OPENAI_BASE_URL": server.base_url,
        }.items():
            monkeypatch.setenv(name, value)
        from lambda_agents.storage.dynamodb import dynamodb_resource

        from functions.status_judge import app

        dynamodb_resource.cache_clear()
        app.dependencies.reset()
        yield app, server
        server.assert_script_consumed()
        app.dependencies.reset()
        dynamodb_resource.cache_clear()


def judge_event(output: str = OUTPUT) -> dict[str, Any]:
    """``POST /judge`` of the review movement's ``output``, as the workflow's IAM caller."""
    return {
        "resource": "/judge",
        "path": "/judge",
        "httpMethod": "POST",
        "headers": {"content-type": "application/json"},
        "body": json.dumps({"movement": "review", "rules": RULES, "output": output}),
        "isBase64Encoded": False,
        "requestContext": {"resourcePath": "/judge", "httpMethod": "POST", "requestId": "r", **ADMIN},
    }


def post(app: Any, context: Context | None = None) -> tuple[int, dict[str, Any]]:
    response = app.lambda_handler(judge_event(), context or Context())
    return response["statusCode"], json.loads(response["body"])


def stored() -> list[dict[str, Any]]:
    return boto3.resource("dynamodb").Table("JudgmentsTable").scan()["Items"]  # type: ignore[no-any-return]


@pytest.mark.parametrize("fault", list(STAGE1_FAULTS))
def test_any_stage1_fault_falls_through_to_the_tag_stage_where_the_last_tag_wins(
    fault: str, judge: tuple[Any, FakeOpenAIServer]
) -> None:
    app, server = judge
    server.enqueue(*STAGE1_FAULTS[fault], TAG_ANSWER)

    status, body = post(app)

    assert status == 200, body
    assert (body["ruleIndex"], body["method"]) == (1, "tag_fallback")
    assert [(s["stage"], s["status"]) for s in body["stages"]] == [
        ("structured_output", "error"),
        ("phase3_tag", "done"),
        ("ai_judge", "skipped"),
    ]
    items = stored()
    assert len(items) == 1 and items[0]["judgmentId"] == body["judgmentId"]
    assert [s["status"] for s in items[0]["stages"]] == ["error", "done", "skipped"]
    assert body["totalTokens"] > 0


def test_stage1_and_stage2_failing_is_decided_by_the_ai_judge(judge: tuple[Any, FakeOpenAIServer]) -> None:
    app, server = judge
    server.enqueue(
        Fault(500),
        Fault(500),
        Reply(content="I would rather not use tags."),
        Reply(content='{"matched_index": 2, "reason": "fixes are requested"}'),
    )
    status, body = post(app)
    assert status == 200
    assert (body["ruleIndex"], body["method"]) == (1, "ai_judge")
    assert len(stored()) == 1


def test_all_stages_failing_is_a_502_naming_the_movement_and_the_failure_is_kept_for_audit(
    judge: tuple[Any, FakeOpenAIServer],
) -> None:
    app, server = judge
    server.enqueue(*(Fault(400) for _ in range(4)))  # refused requests: not an outage
    status, body = post(app)
    assert status == 502
    assert body["error"]["code"] == "JUDGMENT_FAILED" and "review" in body["error"]["message"]
    assert [stage["status"] for stage in body["error"]["details"]] == ["error", "error", "error"]
    (failure,) = stored()
    assert (failure["status"], failure["error"]) == ("failed", "JudgmentFailed")
    assert [stage["status"] for stage in failure["stages"]] == ["error", "error", "error"]
    assert OUTPUT not in json.dumps(failure, default=str)  # the output's hash only


def test_a_throttled_judgment_write_is_a_503_with_retry_after_and_nothing_half_stored(
    judge: tuple[Any, FakeOpenAIServer],
) -> None:
    app, server = judge
    server.enqueue(Reply(content='{"step": 2, "reason": "fixes requested"}'))
    with dynamo_fault("PutItem", THROTTLED):
        status, body = post(app)
    assert status == 503 and body["error"]["code"] == "STORAGE_BUSY"
    assert stored() == []


def test_a_failure_record_that_cannot_be_written_does_not_change_the_callers_answer(
    judge: tuple[Any, FakeOpenAIServer],
) -> None:
    app, server = judge
    server.enqueue(*(Fault(400) for _ in range(4)))  # refused requests: not an outage
    with dynamo_fault("PutItem", THROTTLED):
        status, body = post(app)
    assert status == 502 and body["error"]["code"] == "JUDGMENT_FAILED"
    assert stored() == []


def test_with_the_deadline_at_hand_every_stage_gives_up_in_time_and_the_answer_is_a_503_with_retry_after(
    judge: tuple[Any, FakeOpenAIServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    app, server = judge
    monkeypatch.setenv("OPENAI_TOKENS_PER_SECOND", "1000")  # planned to fit: 400 tokens in 1.6 s
    app.dependencies.reset()
    app.dependencies()  # a warm container: a cold one's imports are not what the 6 s are for
    # An answer a minute away: only the judge's own deadline ends the wait, however late a busy
    # machine wakes to it.
    server.enqueue(Slow(60.0, Reply(content='{"step": 2, "reason": "late"}')))
    # The judge keeps 3 s for itself: 6 s for the model, of which the first stage's 1.6 s plan
    # leaves ~4 s for whatever a busy machine takes before the call.
    context = Context(remaining_s=9.0)

    status, body = post(app, context)

    assert status == 503 and body["error"]["code"] == "MODEL_UNAVAILABLE", body
    assert context.get_remaining_time_in_millis() > 0  # answered before the Lambda's own timeout
    assert len(server.requests) == 1  # no stage started another request it could not finish
    assert [item["status"] for item in stored()] == ["failed"]


def test_the_agents_output_and_the_models_answers_never_reach_the_logs(judge: tuple[Any, FakeOpenAIServer]) -> None:
    app, server = judge
    output_canary, answer_canary = "CANARY-AGENT-OUTPUT-3c1e", "CANARY-JUDGE-ANSWER-9b7d"
    server.enqueue(
        Reply(content=f'{{"step": 7, "reason": "{answer_canary}"}}'),
        Fault(500, message=f"upstream said {answer_canary}"),
        Reply(content=f"{answer_canary} [REVIEW:2]"),
    )
    with captured_logs() as buffer:
        response = app.lambda_handler(judge_event(f"{OUTPUT} {output_canary}"), Context())
    assert response["statusCode"] == 200

    logs = buffer.getvalue()
    assert '"judge stage"' in logs  # the stages were logged
    assert output_canary not in logs and answer_canary not in logs


@pytest.mark.parametrize(
    "fault",
    [
        pytest.param(lambda canary: Fault(500, message=canary), id="5xx"),
        pytest.param(lambda canary: Fault(429, retry_after=0.01, message=canary), id="429"),
    ],
)
def test_a_provider_outage_in_every_stage_is_a_503_with_retry_after_and_no_provider_text_anywhere(
    fault: Any, judge: tuple[Any, FakeOpenAIServer]
) -> None:
    app, server = judge
    canary = "CANARY-PROVIDER-TEXT-77aa"
    # The model's breaker opens after five failures in a row: the stages after it answer
    # models_resting without a call, so three of the eight scripted faults are never asked for.
    server.enqueue(*(fault(canary) for _ in range(5)))
    status, body = post(app)
    assert status == 503 and body["error"]["code"] == "MODEL_UNAVAILABLE"
    errors = [stage["error"] for stage in body["error"]["details"]]
    assert errors == [stage["error"] for stage in stored()[0]["stages"]]
    assert errors[-1] == "models_resting" and len(server.requests) == 5
    (failure,) = stored()
    assert canary not in json.dumps(body) and canary not in json.dumps(failure, default=str)
    assert all(len(stage["error"]) <= 20 for stage in failure["stages"])


def test_a_503_from_the_judge_carries_retry_after_like_every_function(judge: tuple[Any, FakeOpenAIServer]) -> None:
    app, server = judge
    server.enqueue(*(Fault(500) for _ in range(5)))  # then the breaker opens: no more calls
    response = app.lambda_handler(judge_event(), Context())
    multi = {key: values[-1] for key, values in (response.get("multiValueHeaders") or {}).items()}
    headers = {**(response.get("headers") or {}), **multi}
    assert response["statusCode"] == 503 and int(headers["Retry-After"]) >= 1


def emitted(capsys: pytest.CaptureFixture[str]) -> dict[tuple[str, frozenset[str]], float]:
    """What the handler's EMF lines make in CloudWatch: (metric, its dimension names) -> sum."""
    from devtools.cloudwatch_rules import read_emf

    sums: dict[tuple[str, frozenset[str]], float] = {}
    for series, value in read_emf(capsys.readouterr().out.splitlines()).items():
        key = (series.name, series.dimension_names)
        sums[key] = sums.get(key, 0.0) + value
    return sums


def test_a_judgments_tokens_are_counted_and_only_the_judgment_carries_its_method(
    judge: tuple[Any, FakeOpenAIServer], capsys: pytest.CaptureFixture[str]
) -> None:
    app, server = judge
    server.enqueue(Fault(500), Fault(500), TAG_ANSWER)
    capsys.readouterr()

    status, body = post(app)

    metrics = emitted(capsys)
    assert status == 200 and body["totalTokens"] > 0
    assert metrics[("JudgeTokens", frozenset({"service"}))] == body["totalTokens"]
    assert metrics[("CachedInputTokens", frozenset({"service"}))] == 0  # the fake server caches nothing
    assert metrics[("JudgeRequests", frozenset({"service"}))] == 1  # not split by method
    assert metrics[("Judgments", frozenset({"method", "service"}))] == 1
    assert {dimensions for _, dimensions in metrics} == {frozenset({"service"}), frozenset({"method", "service"})}


def test_a_failed_judgments_tokens_are_counted_too(
    judge: tuple[Any, FakeOpenAIServer], capsys: pytest.CaptureFixture[str]
) -> None:
    # Every stage answered and none matched: the provider billed each answer (takt's lesson: the
    # tokens of failed attempts are tokens spent).
    app, server = judge
    no_json = (Reply(content="no JSON"), Reply(content="still no JSON"))  # the AI judge asks twice
    server.enqueue(*STAGE1_FAULTS["invalid JSON twice"], Reply(content="No tags from me."), *no_json)
    capsys.readouterr()

    status, _ = post(app)

    metrics = emitted(capsys)
    assert status == 502
    assert metrics[("JudgmentsFailed", frozenset({"service"}))] == 1
    assert metrics[("JudgeTokens", frozenset({"service"}))] > 0
