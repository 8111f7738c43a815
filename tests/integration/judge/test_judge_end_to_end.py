"""The status judge end to end: the real openai client against the fake server in each provider
strategy, and StatusJudgeFunction over API Gateway events and direct invocation on moto."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from lambda_agents.judge.models import JudgeRequest, Method
from lambda_agents.judge.service import JudgeService, JudgmentFailed
from lambda_agents.llm.openai_model import OpenAIChatModel
from moto import mock_aws

from devtools.fake_openai import FakeOpenAIServer, Fault, Reply
from devtools.template import create_tables

RULES = [
    {"condition": "The review approves the change", "tag": "[REVIEW:1]"},
    {"condition": "The review requests fixes", "tag": "[REVIEW:2]"},
]
OUTPUT = "I quoted [REVIEW:1] from the last round. This round: the parser still fails, fixes requested."
ADMIN = {"identity": {"userArn": "arn:aws:iam::123456789012:user/workflow"}}


def _request(**overrides: Any) -> JudgeRequest:
    return JudgeRequest.model_validate({"movement": "review", "rules": RULES, "output": OUTPUT, **overrides})


@pytest.mark.parametrize(
    ("strategy", "reply"),
    [
        ("json_schema", Reply(content='{"step": 2, "reason": "fixes requested"}')),
        ("tool", Reply(tool_arguments='{"step": 2, "reason": "fixes requested"}', finish_reason="tool_calls")),
        ("prompted", Reply(content='Verdict below.\n{"step": 1, "reason": "quoted"}\n{"step": 2, "reason": "final"}')),
    ],
)
def test_stage_one_in_each_provider_strategy(
    strategy: str, reply: Reply, fake_openai: FakeOpenAIServer, openai_chat_model: OpenAIChatModel
) -> None:
    fake_openai.enqueue(reply)
    result = JudgeService(openai_chat_model).judge(_request(strategy=strategy))
    assert (result.rule_index, result.method) == (1, Method.STRUCTURED_OUTPUT)
    sent = fake_openai.requests[0]
    if strategy == "json_schema":
        assert sent["response_format"]["json_schema"]["schema"]["required"] == ["step", "reason"]
    elif strategy == "tool":
        assert sent["tool_choice"]["function"]["name"] == "StructuredOutput"
    else:
        assert "response_format" not in sent and "tools" not in sent


@pytest.mark.parametrize("strategy", ["json_schema", "tool", "prompted"])
def test_a_provider_rejecting_the_schema_falls_through_to_the_tag_stage(
    strategy: str, fake_openai: FakeOpenAIServer, openai_chat_model: OpenAIChatModel
) -> None:
    fake_openai.enqueue(
        Fault(status=400, message="Invalid schema for response_format"),
        Reply(content="Earlier: [REVIEW:1]. Final: [REVIEW:2]"),
    )
    result = JudgeService(openai_chat_model, sleep=lambda _: None).judge(_request(strategy=strategy))
    assert (result.rule_index, result.method) == (1, Method.TAG_FALLBACK)
    assert [s.status for s in result.stages] == ["error", "done", "skipped"]
    assert "response_format" not in fake_openai.requests[1]


def test_all_stages_failing_through_the_real_client(
    fake_openai: FakeOpenAIServer, openai_chat_model: OpenAIChatModel
) -> None:
    fake_openai.enqueue(
        Fault(status=500),
        Fault(status=500),
        Reply(content="[REVIEW:0]"),
        Reply(content="not json"),
        Reply(content="still not json"),
        Reply(content="[JUDGE:5]"),
    )
    with pytest.raises(JudgmentFailed, match="review"):
        JudgeService(openai_chat_model, sleep=lambda _: None).judge(_request())


@pytest.fixture
def judge_function(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Any, FakeOpenAIServer]]:
    with mock_aws(), FakeOpenAIServer() as server:
        create_tables(boto3.client("dynamodb"), ["JudgmentsTable"])
        monkeypatch.setenv("JUDGMENTS_TABLE", "JudgmentsTable")
        monkeypatch.setenv("AI_AGENT_MODE", "openai")
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        from functions.status_judge import app

        app.dependencies.reset()
        yield app, server
        app.dependencies.reset()


class Context:
    function_name = "StatusJudgeFunction"
    memory_limit_in_mb = 512
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:StatusJudgeFunction"
    aws_request_id = "req-1"

    def get_remaining_time_in_millis(self) -> int:
        return 60_000


def _api_event(body: Any, context: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "resource": "/judge",
        "path": "/judge",
        "httpMethod": "POST",
        "headers": {"content-type": "application/json"},
        "queryStringParameters": None,
        "pathParameters": None,
        "body": json.dumps(body),
        "isBase64Encoded": False,
        "requestContext": {
            "resourcePath": "/judge",
            "httpMethod": "POST",
            "stage": "v1",
            "requestId": "r",
            **(context or {}),
        },
    }


def test_post_judge_stores_the_judgment_with_its_stage_log(judge_function: tuple[Any, FakeOpenAIServer]) -> None:
    app, server = judge_function
    server.enqueue(Reply(content='{"step": 2, "reason": "fixes requested"}'))
    response = app.lambda_handler(
        _api_event({"movement": "review", "rules": RULES, "output": OUTPUT}, ADMIN), Context()
    )
    assert response["statusCode"] == 200, response["body"]
    body = json.loads(response["body"])
    assert (body["ruleIndex"], body["method"]) == (1, "structured_output")
    items = boto3.resource("dynamodb").Table("JudgmentsTable").scan()["Items"]
    assert len(items) == 1
    assert items[0]["stages"][0]["stage"] == "structured_output"
    assert OUTPUT not in json.dumps(items[0], default=str)  # only the output's hash is stored


def test_post_judge_without_an_iam_caller_is_401(judge_function: tuple[Any, FakeOpenAIServer]) -> None:
    app, _ = judge_function
    response = app.lambda_handler(_api_event({"movement": "review", "rules": RULES, "output": OUTPUT}), Context())
    assert response["statusCode"] == 401


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        ({"movement": "review", "rules": [], "output": "x"}, "rules"),
        ({"movement": "review", "rules": [{"condition": "a", "interactiveOnly": 0}], "output": "x"}, "interactiveOnly"),
        ({"movement": "review", "output": "x"}, "rules"),
        ({"movement": "review", "rules": RULES, "output": "x", "strategy": "carrier-pigeon"}, "strategy"),
    ],
)
def test_post_judge_bad_input_is_400_naming_the_problem(
    judge_function: tuple[Any, FakeOpenAIServer], body: dict[str, Any], needle: str
) -> None:
    app, _ = judge_function
    response = app.lambda_handler(_api_event(body, ADMIN), Context())
    assert response["statusCode"] == 400
    assert needle in response["body"]


def test_post_judge_all_stages_failing_is_502(judge_function: tuple[Any, FakeOpenAIServer]) -> None:
    app, server = judge_function
    server.enqueue(Fault(status=400), Fault(status=400), Fault(status=400), Fault(status=400))
    response = app.lambda_handler(
        _api_event({"movement": "review", "rules": RULES, "output": OUTPUT}, ADMIN), Context()
    )
    assert response["statusCode"] == 502
    assert "review" in json.loads(response["body"])["error"]["message"]


def test_direct_invocation_returns_the_judgment_and_raises_named_errors(
    judge_function: tuple[Any, FakeOpenAIServer],
) -> None:
    app, server = judge_function
    server.enqueue(Reply(content='{"step": 1, "reason": "approved"}'))
    result = app.lambda_handler({"movement": "review", "rules": RULES, "output": OUTPUT}, Context())
    assert (result["ruleIndex"], result["method"]) == (0, "structured_output")
    with pytest.raises(app.InvalidJudgeRequest, match="rules"):
        app.lambda_handler({"movement": "review", "output": OUTPUT}, Context())
    one_rule = app.lambda_handler({"movement": "review", "rules": RULES[:1], "output": OUTPUT}, Context())
    assert one_rule["method"] == "auto_select"


def test_post_judge_phase1_output_without_any_rule_tag_is_decided_by_the_ai_judge(
    judge_function: tuple[Any, FakeOpenAIServer],
) -> None:
    app, server = judge_function
    server.enqueue(Reply(content='{"matched_index": 2, "reason": "fixes requested"}'))
    body = {"movement": "review", "rules": RULES, "output": "no tag in here", "phase3": False}
    response = app.lambda_handler(_api_event(body, ADMIN), Context())
    assert response["statusCode"] == 200, response["body"]
    answer = json.loads(response["body"])
    assert (answer["ruleIndex"], answer["method"]) == (1, "ai_judge")
    assert [s["stage"] for s in answer["stages"]] == ["phase1_tag", "ai_judge"]
    assert len(server.requests) == 1


def test_post_judge_with_a_body_that_is_not_json_is_415(judge_function: tuple[Any, FakeOpenAIServer]) -> None:
    app, _ = judge_function
    event = {**_api_event({"movement": "review"}, ADMIN), "headers": {"Content-Type": "multipart/form-data"}}
    response = app.lambda_handler(event, Context())
    assert response["statusCode"] == 415
    assert "application/json" in json.loads(response["body"])["error"]["message"]


def test_over_http_the_request_time_counts_and_directly_the_lambda_time_alone(
    judge_function: tuple[Any, FakeOpenAIServer],
) -> None:
    """API Gateway ends a request 29 s after it received it: a request received 27 s ago leaves no
    time for a stage (no model call; the 503 with Retry-After every function gives a model that
    cannot answer in time); the same judgment invoked directly has the Lambda's 60 s."""
    app, server = judge_function
    body = {"movement": "review", "rules": RULES, "output": OUTPUT}
    late = _api_event(body, {**ADMIN, "requestTimeEpoch": int((time.time() - 27) * 1000)})
    response = app.lambda_handler(late, Context())
    assert (response["statusCode"], json.loads(response["body"])["error"]["code"]) == (503, "MODEL_UNAVAILABLE")
    headers = {**response.get("headers", {}), **{k: v[-1] for k, v in response.get("multiValueHeaders", {}).items()}}
    assert int(headers["Retry-After"]) >= 1
    assert server.requests == []

    server.enqueue(Reply(content='{"step": 2, "reason": "fixes requested"}'))
    assert app.lambda_handler(body, Context())["ruleIndex"] == 1
