"""Spec: the engine's finish_reason handling, truncation budgets, retries, deadline and strategies.

Driven by an in-memory scripted model and a fake clock: no network, no real sleep.
"""

from __future__ import annotations

import json

import pytest
from lambda_agents.llm import (
    ContentFiltered,
    Deadline,
    DeadlineReached,
    FixedTokenPolicy,
    GrowingTokenPolicy,
    ModelRefused,
    OutputInvalid,
    OutputTruncated,
    ProviderFailed,
    RetryPolicy,
    Strategy,
    StructuredOptions,
    Usage,
    generate_structured,
)
from lambda_agents.llm.errors import ProviderUnavailable, RateLimited, RequestRejected, UnexpectedFinish
from lambda_agents.llm.policy import DEFAULT_RETRY_ON
from lambda_agents.llm.speeds import SpeedEstimate
from lambda_agents.llm.truncation import with_margin
from pydantic import BaseModel, Field

from .ideas_task import GOOD, MESSAGES, Ideas
from .scripted_model import FakeClock, ScriptedModel, answer, needing, refusal, tool_answer


class Routine(BaseModel):
    steps: list[str] = Field(min_length=6, max_length=6)


ROUTINE = {"steps": [f"Step {i}: breathe slowly and count to ten, then stretch your arms." for i in range(6)]}
ROUTINE_TOKENS = 300  # what the whole answer costs; any max_tokens below it truncates it


def test_stop_with_a_valid_answer_returns_the_value_after_one_attempt() -> None:
    model = ScriptedModel(answer(GOOD))
    result = generate_structured(model, Ideas, MESSAGES)
    assert result.value == Ideas(ideas=["a", "b", "c"])
    assert [a.outcome for a in result.attempts] == ["ok"]
    assert (
        model.requests[0].parameters.json_output is not None and model.requests[0].parameters.json_output.strict is True
    )
    model.assert_consumed()


def test_given_a_truncated_answer_when_retried_then_it_asks_for_the_estimated_need_plus_the_margin_once() -> None:
    model = ScriptedModel(needing(ROUTINE, ROUTINE_TOKENS), needing(ROUTINE, ROUTINE_TOKENS))
    result = generate_structured(
        model, Routine, MESSAGES, StructuredOptions(token_policy=GrowingTokenPolicy(initial=100, growth=1.5))
    )
    first, second = (r.max_tokens for r in model.requests)
    assert first == 100
    assert ROUTINE_TOKENS <= second <= with_margin(round(ROUTINE_TOKENS * 1.1))  # not 150, the policy's growth
    assert [a.outcome for a in result.attempts] == ["length", "ok"]
    assert "needs about" in (result.attempts[0].error or "")
    model.assert_consumed()


def test_given_a_policy_that_does_not_grow_when_truncated_then_the_estimate_still_raises_the_budget() -> None:
    class Flat:
        ceiling = 1000

        def max_tokens(self, attempt: int) -> int:
            return 100

    model = ScriptedModel(needing(ROUTINE, ROUTINE_TOKENS), needing(ROUTINE, ROUTINE_TOKENS))
    generate_structured(model, Routine, MESSAGES, StructuredOptions(token_policy=Flat()))
    assert model.requests[1].max_tokens >= ROUTINE_TOKENS


def test_given_an_estimate_above_the_ceiling_then_it_stops_at_once_without_a_call_that_must_truncate() -> None:
    model = ScriptedModel(needing(ROUTINE, 2000))
    with pytest.raises(OutputTruncated) as caught:
        generate_structured(
            model,
            Routine,
            MESSAGES,
            StructuredOptions(
                token_policy=GrowingTokenPolicy(initial=500, growth=2.0, ceiling=1000),
                retry_policy=RetryPolicy(max_attempts=5),
            ),
        )
    assert [r.max_tokens for r in model.requests] == [500]
    assert caught.value.kind == "length" and len(caught.value.attempts) == 1
    assert "more than the limit (1000)" in str(caught.value)
    model.assert_consumed()


def test_given_an_estimate_just_under_the_ceiling_then_the_retry_asks_for_the_ceiling() -> None:
    model = ScriptedModel(needing(ROUTINE, 950), needing(ROUTINE, 950))
    result = generate_structured(
        model,
        Routine,
        MESSAGES,
        StructuredOptions(token_policy=GrowingTokenPolicy(initial=400, growth=1.1, ceiling=1000)),
    )
    assert [r.max_tokens for r in model.requests] == [400, 1000]
    assert [a.outcome for a in result.attempts] == ["length", "ok"]


def test_given_a_truncation_without_one_complete_value_then_the_retry_asks_for_the_ceiling_once() -> None:
    model = ScriptedModel(
        answer('{"steps": ["Step 0: breathe slowly and co', finish="length", completion=100),
        needing(ROUTINE, ROUTINE_TOKENS),
    )
    generate_structured(
        model, Routine, MESSAGES, StructuredOptions(token_policy=GrowingTokenPolicy(initial=100, ceiling=4000))
    )
    assert [r.max_tokens for r in model.requests] == [100, 4000]


def test_given_a_truncation_at_the_ceiling_then_no_further_call_is_made() -> None:
    model = ScriptedModel(answer('{"steps": ["a', finish="length", completion=1000))
    with pytest.raises(OutputTruncated):
        generate_structured(
            model, Routine, MESSAGES, StructuredOptions(token_policy=GrowingTokenPolicy(initial=1000, ceiling=1000))
        )
    model.assert_consumed()


def test_given_a_fixed_policy_when_truncated_then_it_is_not_retried() -> None:
    model = ScriptedModel(needing(ROUTINE, ROUTINE_TOKENS))
    with pytest.raises(OutputTruncated):
        generate_structured(model, Routine, MESSAGES, StructuredOptions(token_policy=FixedTokenPolicy(100)))
    model.assert_consumed()


def test_given_a_truncated_tool_call_then_its_arguments_are_read_like_a_json_answer() -> None:
    model = ScriptedModel(needing(ROUTINE, ROUTINE_TOKENS, tool=True), needing(ROUTINE, ROUTINE_TOKENS, tool=True))
    result = generate_structured(
        model,
        Routine,
        MESSAGES,
        StructuredOptions(strategy=Strategy.TOOL, token_policy=GrowingTokenPolicy(initial=100)),
    )
    assert ROUTINE_TOKENS <= model.requests[1].max_tokens <= with_margin(round(ROUTINE_TOKENS * 1.1))
    assert [a.outcome for a in result.attempts] == ["length", "ok"]


def test_given_a_truncated_prompted_answer_then_the_prose_before_its_json_counts_as_written() -> None:
    text = "Here is the routine you asked for.\n```json\n" + json.dumps(ROUTINE) + "\n```"
    model = ScriptedModel(needing(text, ROUTINE_TOKENS), needing(text, ROUTINE_TOKENS))
    generate_structured(
        model,
        Routine,
        MESSAGES,
        StructuredOptions(strategy=Strategy.PROMPTED, token_policy=GrowingTokenPolicy(initial=100)),
    )
    assert ROUTINE_TOKENS <= model.requests[1].max_tokens <= with_margin(round(ROUTINE_TOKENS * 1.1))


def routine_within(seconds: float, model: ScriptedModel, clock: FakeClock) -> None:
    """The routine asked for at 100 tokens first, against a deadline ``seconds`` away on ``clock``."""
    generate_structured(
        model,
        Routine,
        MESSAGES,
        StructuredOptions(token_policy=GrowingTokenPolicy(initial=100), sleep=clock.sleep),
        deadline=Deadline.after(seconds, clock),
    )


def test_given_a_need_the_deadline_cannot_allow_then_deadline_reached_before_another_call() -> None:
    clock = FakeClock()
    # 100 tokens took 2 s: the 300 the answer needs would take 6 s, and 5 s are left.
    model = ScriptedModel(needing(ROUTINE, ROUTINE_TOKENS, seconds=2.0, clock=clock))
    with pytest.raises(DeadlineReached) as caught:
        routine_within(7.0, model, clock)
    assert len(caught.value.attempts) == 1 and "deadline" in str(caught.value)
    model.assert_consumed()


def test_given_time_for_part_of_the_margin_then_the_retry_asks_for_what_the_deadline_allows() -> None:
    clock = FakeClock()
    model = ScriptedModel(needing(ROUTINE, ROUTINE_TOKENS, seconds=1.0, clock=clock), needing(ROUTINE, ROUTINE_TOKENS))
    routine_within(4.5, model, clock)
    # 3.5 s left after the first attempt, less the slack, at its pace of 100 tokens per second.
    assert model.requests[1].max_tokens == 325


def test_given_three_validation_failures_then_only_the_latest_is_in_the_prompt_and_it_never_grows() -> None:
    bad = [{"ideas": ["only one"]}, {"ideas": ["one", "two"]}, {"ideas": ["x", "y", "z", "w"]}]
    model = ScriptedModel(*(answer(b) for b in bad), answer(GOOD))
    result = generate_structured(model, Ideas, MESSAGES, StructuredOptions(retry_policy=RetryPolicy(max_attempts=4)))
    assert result.value.ideas == ["a", "b", "c"]
    sizes = [len(json.dumps(r.messages)) for r in model.requests]
    assert len(model.requests[0].messages) == 1
    assert all(len(r.messages) == 3 for r in model.requests[1:])
    assert max(sizes[1:]) - min(sizes[1:]) < 20  # same shape, only the quoted answer differs
    for request, previous in zip(model.requests[1:], bad, strict=True):
        assert request.messages[1] == {"role": "assistant", "content": json.dumps(previous)}
        assert "ideas" in request.messages[2]["content"] and "rejected" in request.messages[2]["content"]


def test_validation_failures_exhausted_raise_output_invalid_with_every_attempt() -> None:
    model = ScriptedModel(answer({"ideas": []}), answer("not json"), answer({"ideas": ["a"]}))
    with pytest.raises(OutputInvalid) as caught:
        generate_structured(model, Ideas, MESSAGES)
    assert [a.outcome for a in caught.value.attempts] == ["validation", "invalid_json", "validation"]
    model.assert_consumed()


def test_a_custom_validator_error_is_fed_back_and_retried() -> None:
    def distinct(value: Ideas) -> None:
        if len(set(value.ideas)) != len(value.ideas):
            raise ValueError("ideas must be distinct")

    model = ScriptedModel(answer({"ideas": ["a", "a", "a"]}), answer(GOOD))
    generate_structured(model, Ideas, MESSAGES, validator=distinct)
    assert "ideas must be distinct" in model.requests[1].messages[-1]["content"]


def test_usage_is_summed_over_every_attempt_including_failed_ones() -> None:
    model = ScriptedModel(
        answer("{", finish="length", prompt=10, completion=100), answer(GOOD, prompt=12, completion=7)
    )
    result = generate_structured(model, Ideas, MESSAGES)
    assert result.usage == Usage(22, 107)
    failing = ScriptedModel(answer({"ideas": []}, prompt=5, completion=1), refusal())
    with pytest.raises(ModelRefused) as caught:
        generate_structured(failing, Ideas, MESSAGES)
    assert caught.value.usage == Usage(15, 4)


def test_a_refusal_is_typed_and_not_retried_by_default() -> None:
    model = ScriptedModel(refusal("I won't."))
    with pytest.raises(ModelRefused) as caught:
        generate_structured(model, Ideas, MESSAGES)
    assert caught.value.kind == "refusal" and len(caught.value.attempts) == 1
    model.assert_consumed()


def test_content_filter_is_retried_at_once_by_default_then_typed() -> None:
    model = ScriptedModel(answer("", finish="content_filter"), answer(GOOD))
    clock = FakeClock()
    result = generate_structured(model, Ideas, MESSAGES, StructuredOptions(sleep=clock.sleep))
    assert [a.outcome for a in result.attempts] == ["content_filter", "ok"] and clock.sleeps == []
    model = ScriptedModel(*(answer("", finish="content_filter") for _ in range(3)))
    with pytest.raises(ContentFiltered) as caught:
        generate_structured(model, Ideas, MESSAGES)
    assert caught.value.kind == "content_filter" and len(caught.value.attempts) == 3
    model.assert_consumed()


def test_content_filter_is_not_retried_when_the_policy_leaves_it_out() -> None:
    model = ScriptedModel(answer("", finish="content_filter"))
    retry = RetryPolicy(retry_on=DEFAULT_RETRY_ON - {"content_filter"})
    with pytest.raises(ContentFiltered):
        generate_structured(model, Ideas, MESSAGES, StructuredOptions(retry_policy=retry))
    model.assert_consumed()


def test_refusal_and_content_filter_are_retried_when_configured() -> None:
    model = ScriptedModel(refusal(), answer("", finish="content_filter"), answer(GOOD))
    retry = RetryPolicy(
        retry_on=frozenset({"refusal", "content_filter"}), immediate=frozenset({"refusal", "content_filter"})
    )
    result = generate_structured(model, Ideas, MESSAGES, StructuredOptions(retry_policy=retry))
    assert [a.outcome for a in result.attempts] == ["refusal", "content_filter", "ok"]


def test_an_unknown_finish_reason_is_an_unexpected_finish_error() -> None:
    model = ScriptedModel(answer(GOOD, finish="function_call"))
    with pytest.raises(UnexpectedFinish):
        generate_structured(model, Ideas, MESSAGES)


def test_retry_after_is_honoured_and_server_errors_back_off_exponentially() -> None:
    clock = FakeClock()
    model = ScriptedModel(RateLimited("429", retry_after_s=3.0), ProviderUnavailable("500"), answer(GOOD))
    result = generate_structured(
        model,
        Ideas,
        MESSAGES,
        StructuredOptions(retry_policy=RetryPolicy(backoff_base_s=0.5, backoff_factor=2.0), sleep=clock.sleep),
        deadline=Deadline.after(60.0, clock),
    )
    assert clock.sleeps == [3.0, 1.0]
    assert [a.outcome for a in result.attempts] == ["rate_limit", "server_error", "ok"]


def test_a_rejected_request_is_a_provider_failure_and_not_retried() -> None:
    model = ScriptedModel(RequestRejected("400 schema rejected"))
    with pytest.raises(ProviderFailed) as caught:
        generate_structured(model, Ideas, MESSAGES)
    assert isinstance(caught.value.cause, RequestRejected)
    assert caught.value.kind == "rejected"
    model.assert_consumed()


def test_provider_failures_exhausted_raise_provider_failed_with_the_last_cause() -> None:
    clock = FakeClock()
    model = ScriptedModel(*(ProviderUnavailable("500") for _ in range(3)))
    with pytest.raises(ProviderFailed) as caught:
        generate_structured(model, Ideas, MESSAGES, StructuredOptions(sleep=clock.sleep))
    assert caught.value.kind == "server_error" and len(caught.value.attempts) == 3


def test_given_a_retry_after_past_the_deadline_then_deadline_reached_without_sleeping() -> None:
    clock = FakeClock()
    deadline = Deadline.after(10.0, clock)
    model = ScriptedModel(RateLimited("429", retry_after_s=20.0))
    with pytest.raises(DeadlineReached) as caught:
        generate_structured(model, Ideas, MESSAGES, StructuredOptions(sleep=clock.sleep), deadline=deadline)
    assert clock.sleeps == []
    assert deadline.remaining_s() > 0  # raised before the deadline, with time left for a fallback
    assert caught.value.kind == "deadline" and len(caught.value.attempts) == 1
    model.assert_consumed()


def test_no_sleep_ever_exceeds_the_time_left_and_every_request_is_bounded_by_the_deadline() -> None:
    clock = FakeClock()
    deadline = Deadline.after(8.0, clock)
    model = ScriptedModel(*(ProviderUnavailable("500") for _ in range(6)))
    with pytest.raises((DeadlineReached, ProviderFailed)):
        generate_structured(
            model,
            Ideas,
            MESSAGES,
            StructuredOptions(
                retry_policy=RetryPolicy(max_attempts=6, backoff_base_s=1.0, backoff_factor=2.0), sleep=clock.sleep
            ),
            deadline=deadline,
        )
    remaining = 8.0
    for slept in clock.sleeps:
        assert slept < remaining
        remaining -= slept
    assert all(
        r.pacing.answer_by is not None and r.pacing.answer_by.expires_at < deadline.expires_at for r in model.requests
    )
    assert clock.now < deadline.expires_at


def test_given_too_little_time_left_for_the_budget_at_the_models_pace_then_no_call_is_made() -> None:
    clock = FakeClock()
    model = ScriptedModel(speed=SpeedEstimate(first_token_s=1.0, tokens_per_s=50.0))
    with pytest.raises(DeadlineReached) as caught:
        generate_structured(
            model,
            Ideas,
            MESSAGES,
            StructuredOptions(token_policy=FixedTokenPolicy(500)),
            deadline=Deadline.after(10.0, clock),
        )
    assert model.requests == []
    assert "500 tokens would take ~11.0 s" in str(caught.value) and caught.value.attempts == []


def test_tool_strategy_forces_the_structured_output_tool_and_reads_its_arguments() -> None:
    model = ScriptedModel(tool_answer(GOOD))
    result = generate_structured(model, Ideas, MESSAGES, StructuredOptions(strategy=Strategy.TOOL))
    request = model.requests[0]
    assert request.parameters.json_output is None
    assert request.parameters.tool_choice == "StructuredOutput"
    assert [tool.name for tool in request.parameters.tools] == ["StructuredOutput"]
    assert request.parameters.tools[0].parameters["additionalProperties"] is False
    assert result.value.ideas == GOOD["ideas"]


def test_tool_strategy_without_the_tool_call_is_retried_as_a_validation_failure() -> None:
    model = ScriptedModel(answer("I think the ideas are a, b, c"), tool_answer(GOOD))
    result = generate_structured(model, Ideas, MESSAGES, StructuredOptions(strategy=Strategy.TOOL))
    assert [a.outcome for a in result.attempts] == ["validation", "ok"]


def test_prompted_strategy_puts_the_schema_in_the_prompt_and_extracts_json_from_text() -> None:
    model = ScriptedModel(answer('Sure! Here it is:\n```json\n{"ideas": ["a", "b", "c"]}\n```'))
    result = generate_structured(model, Ideas, MESSAGES, StructuredOptions(strategy=Strategy.PROMPTED))
    request = model.requests[0]
    assert request.parameters.json_output is None and request.parameters.tools == ()
    assert '"additionalProperties": false' in request.messages[-1]["content"]
    assert result.value.ideas == ["a", "b", "c"]


def test_prompted_strategy_without_json_is_retried_with_feedback() -> None:
    model = ScriptedModel(answer("I cannot format that."), answer('{"ideas": ["a", "b", "c"]}'))
    result = generate_structured(model, Ideas, MESSAGES, StructuredOptions(strategy=Strategy.PROMPTED))
    assert [a.outcome for a in result.attempts] == ["invalid_json", "ok"]
    assert "no JSON" in model.requests[1].messages[-1]["content"]
