"""A chain of models (``llm.model_chain``): a provider failure moves the attempt to the next model,
an answer never does, a model that keeps failing rests, and a model without native structured
output is given the schema its own way."""

from __future__ import annotations

import json
from typing import Any

import pytest
from lambda_agents.llm import (
    ChatRequest,
    ChatResponse,
    JsonOutput,
    RequestParameters,
    StructuredOptions,
    generate_structured,
)
from lambda_agents.llm.engine import Strategy
from lambda_agents.llm.errors import (
    AnswerCut,
    ProviderFailed,
    ProviderTimeout,
    ProviderUnavailable,
    RateLimited,
    RequestRejected,
)
from lambda_agents.llm.model_chain import Breaker, ChainLink, ModelChain, ModelsResting
from lambda_agents.llm.speeds import ModelSpeeds
from lambda_agents.llm.types import ResponseTiming
from pydantic import BaseModel

from .scripted_model import FakeClock, answer, named, tool_answer


class Verdict(BaseModel):
    ok: bool


def request() -> ChatRequest:
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
    return ChatRequest(
        messages=[{"role": "user", "content": "?"}],
        max_tokens=50,
        parameters=RequestParameters(json_output=JsonOutput("V", schema)),
    )


def events() -> tuple[list[tuple[str, str]], Any]:
    seen: list[tuple[str, str]] = []
    return seen, lambda model, what, details: seen.append((model, what))


def test_a_provider_failure_moves_the_attempt_to_the_next_model_and_its_answer_teaches_its_pace() -> None:
    first = named("primary", ProviderUnavailable("provider error (500)"))
    timed = ChatResponse('{"ok": true}', "stop", timing=ResponseTiming(0.5, 1.5, True))
    second = named("secondary", timed)
    speeds = ModelSpeeds()

    result = generate_structured(
        ModelChain([ChainLink(first), ChainLink(second)]), Verdict, [], StructuredOptions(speeds=speeds)
    )

    assert result.value.ok is True and len(result.attempts) == 1  # one attempt: the chain, not a retry
    assert speeds.estimate("secondary", speeds.estimate("never-seen")) != speeds.estimate("never-seen")
    first.assert_consumed()
    second.assert_consumed()


def test_an_invalid_answer_is_retried_by_the_engine_not_handed_to_the_next_model() -> None:
    first = named("primary", answer({"wrong": 1}), answer({"ok": False}))
    second = named("secondary")

    result = generate_structured(
        ModelChain([ChainLink(first), ChainLink(second)]), Verdict, [], StructuredOptions(sleep=lambda _: None)
    )

    assert result.value.ok is False and second.requests == []


def test_the_caller_deadline_cutting_an_answer_ends_the_call() -> None:
    first = named("primary", AnswerCut("cut"))
    second = named("secondary")
    with pytest.raises(AnswerCut):
        ModelChain([ChainLink(first), ChainLink(second)]).complete(request())
    assert second.requests == []


def test_the_last_failure_is_raised_when_every_model_fails() -> None:
    first = named("primary", ProviderUnavailable("500"))
    second = named("secondary", ProviderTimeout("no first token"))
    with pytest.raises(ProviderTimeout):
        ModelChain([ChainLink(first), ChainLink(second)]).complete(request())


def test_a_breaker_opens_after_failures_in_a_row_then_lets_one_trial_through_after_its_cool_down() -> None:
    clock = FakeClock()
    seen, notify = events()
    breaker = Breaker("primary", failures_to_open=2, cooldown_s=30, clock=clock, notify=notify)
    first = named("primary", ProviderUnavailable("500"), ProviderUnavailable("500"), answer({"ok": True}))
    second = named("secondary", *(answer({"ok": True}) for _ in range(4)))
    chain = ModelChain([ChainLink(first, breaker=breaker), ChainLink(second)])

    for _ in range(3):
        chain.complete(request())
    assert len(first.requests) == 2 and len(second.requests) == 3  # the third went straight on
    assert chain.model_name == "secondary"  # what the engine plans the next attempt with
    clock.now += 31
    served = chain.complete(request())

    assert served.served_by == "primary" and seen == [("primary", "opened"), ("primary", "closed")]
    first.assert_consumed()


def test_429s_of_the_accounts_own_limit_leave_the_breaker_closed_though_the_call_still_moves_on() -> None:
    """A cold container's ten requests at once, refused by the account's limit: its rate budget
    holds the container for the retry-after (seconds), where an opened breaker would defer every
    user of the batch for its whole cool-down."""
    breaker = Breaker("primary", failures_to_open=5, cooldown_s=30, clock=FakeClock())

    def spent() -> RateLimited:
        refused = RateLimited("429", retry_after_s=3.0, limits={"remaining-requests": "0"})
        refused.account_limit_reached = True
        return refused

    first = named("primary", *(spent() for _ in range(10)))
    second = named("secondary", *(answer({"ok": True}) for _ in range(10)))
    chain = ModelChain([ChainLink(first, breaker=breaker), ChainLink(second)])

    served = [chain.complete(request()).served_by for _ in range(10)]

    assert served == ["secondary"] * 10 and len(first.requests) == 10  # each tried the first model
    assert breaker.allows() and breaker.resting_for() == 0.0


def test_a_failed_trial_opens_the_breaker_again_and_a_429_rests_it_for_its_retry_after() -> None:
    clock = FakeClock()
    breaker = Breaker("primary", failures_to_open=1, cooldown_s=10, clock=clock)
    breaker.failed(RateLimited("429", retry_after_s=60))
    assert breaker.resting_for() == 60 and not breaker.allows()
    clock.now += 60
    assert breaker.allows() and not breaker.allows()  # one trial at a time
    breaker.failed(ProviderUnavailable("500"))
    assert breaker.resting_for() == 10


def test_a_rejected_request_moves_on_but_does_not_rest_the_model() -> None:
    breaker = Breaker("primary", failures_to_open=1)
    first = named("primary", RequestRejected("400: schema"))
    second = named("secondary", answer({"ok": True}))

    ModelChain([ChainLink(first, breaker=breaker), ChainLink(second)]).complete(request())

    assert breaker.resting_for() == 0


def test_with_every_model_resting_nothing_is_sent_and_the_engine_says_when_to_come_back() -> None:
    clock = FakeClock()
    breakers = [
        Breaker(name, failures_to_open=1, cooldown_s=cool, clock=clock) for name, cool in (("a", 20), ("b", 45))
    ]
    for breaker in breakers:
        breaker.failed(ProviderUnavailable("500"))
    chain = ModelChain([ChainLink(named("a"), breaker=breakers[0]), ChainLink(named("b"), breaker=breakers[1])])

    with pytest.raises(ProviderFailed) as failed:
        generate_structured(chain, Verdict, [], StructuredOptions(sleep=lambda _: None))

    assert failed.value.kind == "models_resting" and failed.value.retry_after_s == 20
    assert isinstance(failed.value.cause, ModelsResting) and len(failed.value.attempts) == 1


def test_a_model_without_native_structured_output_gets_the_schema_as_a_forced_tool() -> None:
    model = named("tools-only", tool_answer({"ok": True}))

    result = generate_structured(ModelChain([ChainLink(model, Strategy.TOOL)]), Verdict, [])

    [sent] = model.requests
    assert sent.parameters.json_output is None and sent.parameters.tool_choice == "StructuredOutput"
    assert sent.parameters.tools[0].parameters["required"] == ["ok"]
    assert result.value.ok is True


def test_a_model_without_tools_gets_the_schema_in_the_prompt_and_its_json_is_read_from_the_text() -> None:
    model = named("plain", answer('Here you are:\n```json\n{"ok": true}\n```'))

    result = generate_structured(ModelChain([ChainLink(model, Strategy.PROMPTED)]), Verdict, [])

    [sent] = model.requests
    assert sent.parameters.json_output is None and "JSON Schema" in sent.messages[-1]["content"]
    assert json.loads(result.raw) == {"ok": True} and result.value.ok is True
