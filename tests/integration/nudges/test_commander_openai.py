"""The Commander's integration and schema-conformance tests (docs/nudges.md#exactly-n-nudges) through the
real openai client against
the fake server, with the nudges stored in moto and read back through the pending endpoints."""

from __future__ import annotations

import json
from typing import Any

import pytest
from lambda_agents.llm.offline_model import sample
from lambda_agents.llm.schema import model_schema, strict_schema
from lambda_agents.llm.truncation import with_margin
from lambda_agents.nudges.generation import GenerationJob, NudgeGenerationService
from lambda_agents.nudges.schema import create_agent_output_model
from lambda_agents.nudges.tokens import estimate_max_tokens
from lambda_agents.storage.nudges import DynamoScheduleRepository
from lambda_agents.storage.users import DynamoUserRepository

from devtools.fake_openai import FakeOpenAIServer, Fault, Reply

from .conftest import TODAY, Aws, call_api

pytestmark = pytest.mark.integration
DATE = TODAY
FIFTEEN = ["staying_up_late", "procrastination", "anxiety"]


def answer(slot_count: int, language: str = "en") -> str:
    return json.dumps(sample(model_schema(create_agent_output_model(slot_count)), language), ensure_ascii=False)


def run(aws: Aws, model: Any, user_id: str = "u15", problems: list[str] = FIFTEEN) -> Any:
    aws.add_user(userId=user_id, problems=problems)
    waits: list[float] = []
    service = NudgeGenerationService(
        DynamoUserRepository("UsersTable"), DynamoScheduleRepository("SchedulesTable"), model, sleep=waits.append
    )
    outcome = service.generate(GenerationJob(userId=user_id, localDate=DATE))
    return outcome, waits, DynamoScheduleRepository("SchedulesTable").get(user_id, DATE)


def pending(platform: str) -> list[dict[str, Any]]:
    status, body = call_api("GET", f"/api/admin/{platform}/pending", {"date": DATE})
    assert status == 200
    return body["tiktokPosts" if platform == "tiktok" else "xPosts"]  # type: ignore[no-any-return]


def test_a_15_slot_user_gets_15_nudges(aws: Aws, fake_openai: FakeOpenAIServer, openai_chat_model: Any) -> None:
    fake_openai.enqueue(Reply(content=answer(15)))
    outcome, _, stored = run(aws, openai_chat_model)
    assert (outcome.slot_count, outcome.nudges_enabled, outcome.fallback_used) == (15, 15, False)
    body = fake_openai.requests[0]
    assert body["response_format"]["json_schema"]["strict"] is True
    assert body["response_format"]["json_schema"]["schema"]["properties"]["appNudges"]["minItems"] == 15
    assert body["max_completion_tokens"] == estimate_max_tokens(15, 0)
    assert len(stored["agentRawOutput"]["appNudges"]) == 15
    assert len(pending("tiktok")) == 2 and len(pending("x")) == 2


def test_a_refusal_moves_to_the_fallback_and_nothing_is_pending(
    aws: Aws, fake_openai: FakeOpenAIServer, openai_chat_model: Any
) -> None:
    fake_openai.enqueue(Reply(content=None, refusal="I can't help with that."))
    outcome, waits, stored = run(aws, openai_chat_model)
    assert outcome.fallback_used and outcome.fallback_reason == "refusal" and outcome.nudges_enabled == 15
    assert len(fake_openai.requests) == 1 and waits == []
    assert stored["fallbackUsed"] is True and stored["fallbackReason"] == "refusal"
    assert pending("tiktok") == [] and pending("x") == []


def test_finish_reason_length_is_retried_with_the_max_tokens_the_partial_answer_asks_for(
    aws: Aws, fake_openai: FakeOpenAIServer, openai_chat_model: Any
) -> None:
    needed = 6000  # more than the ramp's first estimate (4,095) and its second (4,725)
    fake_openai.enqueue(*(Reply(content=answer(15), needs_tokens=needed) for _ in range(2)))
    outcome, waits, stored = run(aws, openai_chat_model)
    assert not outcome.fallback_used
    first, second = (r["max_completion_tokens"] for r in fake_openai.requests)
    assert first == estimate_max_tokens(15, 0) and needed <= second <= with_margin(round(needed * 1.1))
    assert [a["finish_reason"] for a in stored["attempts"]] == ["length", "stop"]
    assert stored["attempts"][0]["usage"]["completionTokens"] == first  # a truncated answer bills max_tokens
    assert waits == [1.0]


def test_content_filter_is_retried_then_falls_back(
    aws: Aws, fake_openai: FakeOpenAIServer, openai_chat_model: Any
) -> None:
    fake_openai.enqueue(*(Reply(content=None, finish_reason="content_filter") for _ in range(3)))
    outcome, waits, stored = run(aws, openai_chat_model)
    assert outcome.fallback_used and outcome.fallback_reason == "content_filter"
    assert len(fake_openai.requests) == 3 and waits == [1.0, 2.0]
    assert [a["finish_reason"] for a in stored["attempts"]] == ["content_filter"] * 3
    assert stored["usage"]["totalTokens"] > 0
    assert pending("tiktok") == [] and pending("x") == []


def test_a_wrong_length_answer_is_retried_and_then_accepted(
    aws: Aws, fake_openai: FakeOpenAIServer, openai_chat_model: Any
) -> None:
    fake_openai.enqueue(Reply(content=answer(8)), Reply(content=answer(15)))
    outcome, _, _ = run(aws, openai_chat_model)
    assert not outcome.fallback_used and outcome.nudges_enabled == 15
    assert "appNudges" in fake_openai.requests[1]["messages"][-1]["content"]


def test_server_errors_then_fallback_still_delivers_every_slot(
    aws: Aws, fake_openai: FakeOpenAIServer, openai_chat_model: Any
) -> None:
    fake_openai.enqueue(Fault(status=500), Fault(status=500), Fault(status=500))
    outcome, waits, _ = run(aws, openai_chat_model, problems=["self_loathing"])
    assert outcome.fallback_used and outcome.fallback_reason == "server_error"
    assert outcome.nudges_enabled == outcome.slot_count == 4 and waits == [1.0, 2.0]


@pytest.mark.parametrize("slot_count", [5, 15])
def test_the_schema_is_accepted_by_an_openai_compatible_server(
    fake_openai: FakeOpenAIServer, openai_chat_model: Any, slot_count: int
) -> None:
    """Schema conformance: the strict schema goes over the wire and an answer comes back."""
    from lambda_agents.llm import ChatRequest, JsonOutput, RequestParameters

    schema = strict_schema(create_agent_output_model(slot_count))
    response = openai_chat_model.complete(
        ChatRequest(
            messages=[{"role": "user", "content": "Generate test output"}],
            max_tokens=10,
            parameters=RequestParameters(json_output=JsonOutput("test", schema)),
        )
    )
    sent = fake_openai.requests[-1]["response_format"]
    assert sent == {"type": "json_schema", "json_schema": {"name": "test", "strict": True, "schema": schema}}
    assert response.finish_reason is not None
    assert fake_openai.requests[0]["response_format"]["json_schema"]["schema"] == schema
