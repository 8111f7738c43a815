"""Spec: budgets that learn. In a container, the first attempt of a call starts no lower than what
answers of its type needed before (plus the margin), within the ceiling and a cap of
LEARNED_START_CAP times the caller's own first budget; each output type is keyed by its schema,
not by its Python class, so a dynamic model rebuilt per call is still the same type."""

from __future__ import annotations

from lambda_agents.llm import ChatRequest, LearnedBudgets, StructuredOptions, complete_with_retries, generate_structured
from lambda_agents.llm.budgets import LEARNED_START_CAP, LEARNED_WINDOW, structured_key
from lambda_agents.llm.policy import GrowingTokenPolicy
from lambda_agents.llm.schema import strict_schema
from lambda_agents.llm.truncation import with_margin
from pydantic import BaseModel, Field, create_model

from .scripted_model import ScriptedModel, answer, needing

MESSAGES = [{"role": "user", "content": "plan my evening"}]


def steps_model(count: int) -> type[BaseModel]:
    """Rebuilt on every call, like the Commander's output model."""
    return create_model(f"Steps{count}", steps=(list[str], Field(min_length=count, max_length=count)))


def steps(count: int) -> dict[str, list[str]]:
    return {"steps": [f"Step {i}: put the phone in another room and read for ten minutes." for i in range(count)]}


def test_given_no_answer_of_a_type_yet_then_the_callers_first_budget_is_used() -> None:
    assert LearnedBudgets().start("type", first=1000, ceiling=16_000) == 1000


def test_given_a_learned_need_then_the_start_is_that_need_plus_the_margin() -> None:
    budgets = LearnedBudgets()
    budgets.record("type", 3000)
    assert budgets.start("type", first=1000, ceiling=16_000) == with_margin(3000)


def test_a_learned_start_is_capped_by_the_ceiling_and_by_a_multiple_of_the_callers_first_budget() -> None:
    budgets = LearnedBudgets()
    budgets.record("type", 9000)
    assert budgets.start("type", first=1000, ceiling=16_000) == LEARNED_START_CAP * 1000
    assert budgets.start("type", first=1000, ceiling=2500) == 2500


def test_a_learned_need_never_lowers_the_callers_first_budget() -> None:
    budgets = LearnedBudgets()
    budgets.record("type", 100)
    assert budgets.start("type", first=1000, ceiling=16_000) == 1000


def test_an_outlier_ages_out_of_the_window() -> None:
    budgets = LearnedBudgets()
    budgets.record("type", 5000)
    for _ in range(LEARNED_WINDOW):
        budgets.record("type", 1500)
    assert budgets.need("type") == 1500


def test_types_are_remembered_apart_and_the_oldest_is_forgotten_past_the_limit() -> None:
    budgets = LearnedBudgets(max_types=2)
    budgets.record("a", 100)
    budgets.record("b", 200)
    budgets.record("c", 300)
    assert (budgets.need("a"), budgets.need("b"), budgets.need("c")) == (None, 200, 300)


def test_a_dynamic_model_rebuilt_per_call_is_one_type_and_another_length_is_another() -> None:
    assert steps_model(3) is not steps_model(3)
    same = {structured_key("m", "json_schema", strict_schema(steps_model(3))) for _ in range(2)}
    other = structured_key("m", "json_schema", strict_schema(steps_model(4)))
    assert len(same) == 1 and other not in same


def test_given_a_type_whose_answer_needed_more_then_its_next_call_starts_there_and_does_not_truncate() -> None:
    budgets = LearnedBudgets()
    policy = GrowingTokenPolicy(initial=100, ceiling=4000)
    first = ScriptedModel(needing(steps(6), 300), needing(steps(6), 300))
    learning = generate_structured(
        first, steps_model(6), MESSAGES, StructuredOptions(token_policy=policy, budgets=budgets)
    )
    assert [a.outcome for a in learning.attempts] == ["length", "ok"]
    second = ScriptedModel(needing(steps(6), 300))
    result = generate_structured(
        second, steps_model(6), MESSAGES, StructuredOptions(token_policy=policy, budgets=budgets)
    )
    assert [a.outcome for a in result.attempts] == ["ok"]
    assert second.requests[0].max_tokens == with_margin(300)
    unrelated = ScriptedModel(needing(steps(2), 90))
    generate_structured(unrelated, steps_model(2), MESSAGES, StructuredOptions(token_policy=policy, budgets=budgets))
    assert unrelated.requests[0].max_tokens == 100


def test_given_one_shot_calls_of_a_purpose_then_its_learned_need_starts_the_next_within_the_token_policy() -> None:
    budgets = LearnedBudgets()
    request = ChatRequest(messages=MESSAGES, max_tokens=100, purpose="agent.turn")
    complete_with_retries(ScriptedModel(answer("ok", completion=250)), request, budgets=budgets)
    fixed = ScriptedModel(answer("ok"))
    complete_with_retries(fixed, request, budgets=budgets)
    assert fixed.requests[0].max_tokens == 100  # no token policy: the request's max_tokens is the ceiling
    growing = ScriptedModel(answer("ok"))
    complete_with_retries(growing, request, token_policy=GrowingTokenPolicy(initial=100, ceiling=1000), budgets=budgets)
    assert growing.requests[0].max_tokens == with_margin(250)
