"""Spec: every engine path through the real openai client and the fake server.

The client is built with max_retries=0, so each scripted step is exactly one HTTP request: a
test that expects N requests would see more if the SDK retried on its own.
"""

from __future__ import annotations

import json
import os

import pytest
from lambda_agents.config import LLMSettings, load_settings
from lambda_agents.llm import (
    ContentFiltered,
    Deadline,
    DeadlineReached,
    GrowingTokenPolicy,
    ModelRefused,
    OutputInvalid,
    ProviderFailed,
    RetryPolicy,
    Strategy,
    StructuredOptions,
    generate_structured,
)
from lambda_agents.llm.errors import ProviderTimeout, RequestRejected
from lambda_agents.llm.factory import build_chat_model
from lambda_agents.llm.openai_model import OpenAIChatModel, OpenAIModelSettings
from lambda_agents.llm.policy import StreamTimeouts
from lambda_agents.llm.truncation import with_margin
from pydantic import BaseModel, Field

from devtools.fake_openai import FakeOpenAIServer, Fault, Reply, Slow
from tests.support.model_speeds import INSTANT_SERVER

from .conftest import RecordingSleep

pytestmark = pytest.mark.integration

MESSAGES = [{"role": "user", "content": "Suggest three evening routines"}]
FAST_RETRIES = RetryPolicy(max_attempts=3, backoff_base_s=0.05, backoff_factor=2.0)


class Routine(BaseModel):
    name: str = Field(max_length=40)
    minutes: int = Field(ge=1, le=120)


class Plan(BaseModel):
    routines: list[Routine] = Field(min_length=3, max_length=3)


def _plan(count: int) -> str:
    return json.dumps({"routines": [{"name": f"r{i}", "minutes": 10} for i in range(count)]})


LONG_PLAN = json.dumps(
    {"routines": [{"name": f"Stretch slowly, breathe deeply ({i})", "minutes": 10 + i} for i in range(3)]}
)


def test_given_length_when_retried_then_the_retry_asks_for_the_partial_answers_need_and_succeeds(
    fake_openai: FakeOpenAIServer, openai_chat_model: OpenAIChatModel
) -> None:
    fake_openai.enqueue(Reply(content=LONG_PLAN, needs_tokens=180), Reply(content=LONG_PLAN, needs_tokens=180))
    result = generate_structured(
        openai_chat_model, Plan, MESSAGES, StructuredOptions(token_policy=GrowingTokenPolicy(initial=60, growth=1.5))
    )
    first, second = (body["max_completion_tokens"] for body in fake_openai.requests)
    assert first == 60 and 180 <= second <= with_margin(198)  # not 90, the policy's growth
    assert [(a.outcome, a.finish_reason) for a in result.attempts] == [("length", "length"), ("ok", "stop")]
    assert len(result.value.routines) == 3
    assert result.attempts[0].usage.completion_tokens == 60  # billed at max_tokens, as a provider does
    assert result.usage.completion_tokens == 60 + 180
    schema = fake_openai.requests[0]["response_format"]["json_schema"]
    assert schema["strict"] is True and schema["schema"]["additionalProperties"] is False


def test_content_filter_is_retried_once_at_once_then_a_typed_error(
    fake_openai: FakeOpenAIServer, openai_chat_model: OpenAIChatModel
) -> None:
    fake_openai.enqueue(*(Reply(content=None, finish_reason="content_filter") for _ in range(2)))
    with pytest.raises(ContentFiltered) as caught:
        generate_structured(
            openai_chat_model, Plan, MESSAGES, StructuredOptions(retry_policy=RetryPolicy(max_attempts=2))
        )
    assert caught.value.kind == "content_filter"
    assert len(fake_openai.requests) == 2


def test_the_budget_goes_out_as_max_completion_tokens_which_reasoning_models_require() -> None:
    with FakeOpenAIServer(token_fields=("max_completion_tokens",)) as server:
        model = OpenAIChatModel(OpenAIModelSettings(api_key="k", model="o4-mini", base_url=server.base_url))
        server.enqueue(Reply(content=_plan(3), reasoning_tokens=40, completion_tokens=70))
        result = generate_structured(
            model, Plan, MESSAGES, StructuredOptions(token_policy=GrowingTokenPolicy(initial=300))
        )
    assert server.requests[0]["max_completion_tokens"] == 300 and "max_tokens" not in server.requests[0]
    assert result.attempts[0].usage.reasoning_tokens == 40


def test_a_server_that_only_knows_max_tokens_gets_max_tokens_when_configured(monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeOpenAIServer(token_fields=("max_tokens",)) as server:
        refused = OpenAIChatModel(OpenAIModelSettings(api_key="k", model="local", base_url=server.base_url))
        with pytest.raises(ProviderFailed) as caught:
            generate_structured(refused, Plan, MESSAGES)
        assert caught.value.kind == "rejected" and "max_completion_tokens" in str(caught.value.cause)
        monkeypatch.setenv("OPENAI_TOKEN_LIMIT_FIELD", "max_tokens")
        monkeypatch.setenv("OPENAI_API_KEY", "k")
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        model = build_chat_model(load_settings(LLMSettings, {**os.environ, "AI_AGENT_MODE": "openai"}))
        generate_structured(model, Plan, MESSAGES, StructuredOptions(token_policy=GrowingTokenPolicy(initial=300)))
    assert server.requests[-1]["max_tokens"] == 300 and "max_completion_tokens" not in server.requests[-1]


def test_refusal_is_a_typed_error_carrying_its_usage(
    fake_openai: FakeOpenAIServer, openai_chat_model: OpenAIChatModel
) -> None:
    fake_openai.enqueue(Reply(refusal="I can't help with that.", prompt_tokens=30, completion_tokens=6))
    with pytest.raises(ModelRefused) as caught:
        generate_structured(openai_chat_model, Plan, MESSAGES)
    assert caught.value.usage.total_tokens == 36
    assert len(fake_openai.requests) == 1


def test_429_with_retry_after_is_waited_out_by_the_engine_not_the_sdk(
    fake_openai: FakeOpenAIServer, openai_chat_model: OpenAIChatModel, recording_sleep: RecordingSleep
) -> None:
    fake_openai.enqueue(Fault(status=429, retry_after=0.3))
    result = generate_structured(
        openai_chat_model, Plan, MESSAGES, StructuredOptions(retry_policy=FAST_RETRIES, sleep=recording_sleep)
    )
    assert recording_sleep.calls == [0.3]
    assert [a.outcome for a in result.attempts] == ["rate_limit", "ok"]
    assert len(fake_openai.requests) == 2


def test_500_is_retried_with_backoff_and_exhaustion_raises_provider_failed(
    fake_openai: FakeOpenAIServer, openai_chat_model: OpenAIChatModel, recording_sleep: RecordingSleep
) -> None:
    fake_openai.enqueue(Fault(status=500))
    result = generate_structured(
        openai_chat_model, Plan, MESSAGES, StructuredOptions(retry_policy=FAST_RETRIES, sleep=recording_sleep)
    )
    assert [a.outcome for a in result.attempts] == ["server_error", "ok"]

    fake_openai.enqueue(Fault(status=500), Fault(status=503), Fault(status=500))
    with pytest.raises(ProviderFailed) as caught:
        generate_structured(
            openai_chat_model, Plan, MESSAGES, StructuredOptions(retry_policy=FAST_RETRIES, sleep=recording_sleep)
        )
    assert caught.value.kind == "server_error"
    assert recording_sleep.calls == [0.05, 0.05, 0.1]
    assert len(fake_openai.requests) == 5  # 2 + 3: the SDK never retried by itself


def impatient(server: FakeOpenAIServer, first_token_s: float) -> OpenAIChatModel:
    """The real client with a short first-token timeout, planning at the instant server's pace."""
    return OpenAIChatModel(
        OpenAIModelSettings(
            api_key="k",
            model="gpt-4o-2024-08-06",
            base_url=server.base_url,
            timeouts=StreamTimeouts(connect_s=5.0, first_token_s=first_token_s, stall_s=5.0),
            speed_prior=INSTANT_SERVER,
        )
    )


def test_a_slow_first_token_times_out_and_the_next_attempt_succeeds_with_the_same_budget(
    fake_openai: FakeOpenAIServer,
) -> None:
    # A minute's wait against a 2 s first-token limit: cut however late a busy machine wakes to it,
    # and the instant answer after it comes long before its own limit.
    fake_openai.enqueue(Slow(60.0, then=Reply(content=_plan(3))))
    result = generate_structured(
        impatient(fake_openai, 2.0), Plan, MESSAGES, StructuredOptions(retry_policy=FAST_RETRIES, sleep=lambda s: None)
    )
    # Without the first-token timeout the slow answer would have been accepted as attempt 1.
    assert [a.outcome for a in result.attempts] == ["timeout", "ok"]
    assert result.attempts[0].max_tokens == result.attempts[1].max_tokens  # a timeout is no truncation


def test_timeouts_exhausted_raise_provider_failed_with_a_timeout_cause(
    fake_openai: FakeOpenAIServer, openai_chat_model: OpenAIChatModel
) -> None:
    fake_openai.enqueue(Slow(60.0), Slow(60.0))
    with pytest.raises(ProviderFailed) as caught:
        generate_structured(
            impatient(fake_openai, 1.0),
            Plan,
            MESSAGES,
            StructuredOptions(retry_policy=RetryPolicy(max_attempts=2, backoff_base_s=0.01)),
        )
    assert isinstance(caught.value.cause, ProviderTimeout)


def test_invalid_json_is_fed_back_and_the_corrected_answer_accepted(
    fake_openai: FakeOpenAIServer, openai_chat_model: OpenAIChatModel
) -> None:
    fake_openai.enqueue(Reply(content='{"routines": [ oops'))
    result = generate_structured(openai_chat_model, Plan, MESSAGES)
    assert [a.outcome for a in result.attempts] == ["invalid_json", "ok"]
    retry_messages = fake_openai.requests[1]["messages"]
    assert retry_messages[-2] == {"role": "assistant", "content": '{"routines": [ oops'}
    assert "not valid JSON" in retry_messages[-1]["content"]


def test_a_wrong_array_length_is_fed_back_and_only_the_latest_failure_stays_in_the_prompt(
    fake_openai: FakeOpenAIServer, openai_chat_model: OpenAIChatModel
) -> None:
    fake_openai.enqueue(Reply(content=_plan(2)), Reply(content=_plan(5)))
    result = generate_structured(
        openai_chat_model, Plan, MESSAGES, StructuredOptions(retry_policy=RetryPolicy(max_attempts=3))
    )
    assert [a.outcome for a in result.attempts] == ["validation", "validation", "ok"]
    second, third = fake_openai.requests[1]["messages"], fake_openai.requests[2]["messages"]
    assert len(second) == len(third) == len(MESSAGES) + 2
    assert "routines" in second[-1]["content"] and "at least 3" in second[-1]["content"]
    assert third[-2]["content"] == _plan(5) and _plan(2) not in json.dumps(third)


def test_validation_failures_exhausted_raise_output_invalid(
    fake_openai: FakeOpenAIServer, openai_chat_model: OpenAIChatModel
) -> None:
    fake_openai.enqueue(Reply(content=_plan(1)), Reply(content=_plan(4)))
    with pytest.raises(OutputInvalid) as caught:
        generate_structured(
            openai_chat_model, Plan, MESSAGES, StructuredOptions(retry_policy=RetryPolicy(max_attempts=2))
        )
    assert caught.value.kind == "validation" and len(caught.value.attempts) == 2


def test_a_retry_after_past_the_deadline_raises_deadline_reached_at_once(
    fake_openai: FakeOpenAIServer, openai_chat_model: OpenAIChatModel, recording_sleep: RecordingSleep
) -> None:
    # A minute's retry-after against 10 s left, whatever the first call took on a busy machine.
    fake_openai.enqueue(Fault(status=429, retry_after=60.0))
    with pytest.raises(DeadlineReached) as caught:
        generate_structured(
            openai_chat_model, Plan, MESSAGES, StructuredOptions(sleep=recording_sleep), deadline=Deadline.after(10.0)
        )
    assert recording_sleep.calls == []  # not waited for: raised at once
    assert [a.outcome for a in caught.value.attempts] == ["rate_limit"]
    assert "leaves too little time" in str(caught.value)


def test_a_slow_answer_near_the_deadline_ends_in_deadline_reached_at_the_attempts_deadline(
    fake_openai: FakeOpenAIServer, openai_chat_model: OpenAIChatModel
) -> None:
    """The answer would take a minute; the caller has 1.5 s. The request's read is bounded by the
    attempt's deadline, the caller's less DEADLINE_SLACK_S (tests/unit/llm/test_calls.py holds that
    arithmetic), so the engine gives up then with DeadlineReached, not retried. How long after that
    moment it hands back is real time, which benchmarks/stream_cut_bench.py measures."""
    fake_openai.enqueue(Slow(60.0, then=Reply(content=_plan(3))))
    with pytest.raises(DeadlineReached) as caught:
        generate_structured(
            openai_chat_model,
            Plan,
            MESSAGES,
            StructuredOptions(retry_policy=FAST_RETRIES),
            deadline=Deadline.after(1.5),
        )
    assert [a.outcome for a in caught.value.attempts] == ["deadline"]
    assert "the deadline passed before the answer started" in str(caught.value)


def test_a_schema_rejected_with_400_is_a_provider_failure_and_not_retried(
    fake_openai: FakeOpenAIServer, openai_chat_model: OpenAIChatModel
) -> None:
    fake_openai.enqueue(Fault(status=400, message="Invalid schema for response_format 'Plan'"))
    with pytest.raises(ProviderFailed) as caught:
        generate_structured(openai_chat_model, Plan, MESSAGES)
    assert isinstance(caught.value.cause, RequestRejected)
    assert "Invalid schema" in str(caught.value.cause)
    assert len(fake_openai.requests) == 1


def test_tool_strategy_round_trips_a_forced_tool_call(
    fake_openai: FakeOpenAIServer, openai_chat_model: OpenAIChatModel
) -> None:
    result = generate_structured(openai_chat_model, Plan, MESSAGES, StructuredOptions(strategy=Strategy.TOOL))
    body = fake_openai.requests[0]
    assert "response_format" not in body
    assert body["tool_choice"] == {"type": "function", "function": {"name": "StructuredOutput"}}
    assert len(result.value.routines) == 3
    assert result.attempts[0].finish_reason == "tool_calls"


def test_prompted_strategy_extracts_the_json_from_prose(
    fake_openai: FakeOpenAIServer, openai_chat_model: OpenAIChatModel
) -> None:
    fake_openai.enqueue(Reply(content=f"Here is the plan you asked for:\n```json\n{_plan(3)}\n```\nEnjoy!"))
    result = generate_structured(openai_chat_model, Plan, MESSAGES, StructuredOptions(strategy=Strategy.PROMPTED))
    body = fake_openai.requests[0]
    assert "response_format" not in body and "tools" not in body
    assert "JSON Schema" in body["messages"][-1]["content"]
    assert [r.name for r in result.value.routines] == ["r0", "r1", "r2"]
