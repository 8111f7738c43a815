"""Spec: what a truncated answer still needs (``llm.truncation``).

A provider cuts an answer where its budget runs out: the first max_tokens/needed of the text,
billed max_tokens. From that prefix and the output schema the engine estimates the whole need;
the next attempt asks for the estimate plus the margin, or stops at once when the estimate is
above the limit (the ceiling, or what the deadline allows).
"""

from __future__ import annotations

import json
import math
import random
from dataclasses import dataclass
from functools import cache
from typing import Any

import pytest
from hypothesis import assume, given, note, settings
from hypothesis import strategies as st
from lambda_agents.llm import ChatRequest, ChatResponse, RequestParameters, ToolCall, ToolDefinition, Usage
from lambda_agents.llm.schema import model_schema
from lambda_agents.llm.truncation import (
    NEED_MARGIN,
    NeedEstimate,
    estimate_after_truncation,
    estimate_need,
    plan_after_truncation,
    with_margin,
)
from lambda_agents.nudges.schema import create_agent_output_model

from benchmarks.peers.commander_task import valid_answer
from tests.support.branches import Branches

COMMANDER = model_schema(create_agent_output_model(15))


def cut(text: str, limit: int, needed: int) -> str:
    return text[: len(text) * limit // needed]


LAYOUTS = {"compact": {"separators": (",", ":")}, "spaced": {}, "indented": {"indent": 2}}


@pytest.mark.parametrize("layout", LAYOUTS.values(), ids=LAYOUTS.keys())
@pytest.mark.parametrize("limit", [300, 1000, 1500, 2900])
def test_given_a_commander_answer_cut_past_its_first_items_then_the_estimate_is_close_and_rather_above(
    limit: int, layout: dict[str, Any]
) -> None:
    text = json.dumps(valid_answer(3), ensure_ascii=False, **layout)
    estimate = estimate_need(cut(text, limit, 3000), COMMANDER, spent=limit)
    assert estimate.tokens is not None
    assert 2850 <= estimate.tokens <= 3450


def test_given_an_estimate_below_the_limit_then_the_next_budget_is_the_estimate_plus_the_margin() -> None:
    plan = plan_after_truncation(NeedEstimate(1000, 3000, "x"), previous_max=1000, limit=16_384)
    assert plan.max_tokens == with_margin(3000) == math.ceil(3000 * (1 + NEED_MARGIN))


def test_given_a_small_need_then_the_margin_is_at_least_the_minimum_in_tokens() -> None:
    assert with_margin(40) == 40 + 32


def test_given_an_estimate_above_the_limit_then_the_plan_is_to_stop() -> None:
    plan = plan_after_truncation(NeedEstimate(1000, 5000, "x"), previous_max=1000, limit=4000)
    assert plan.max_tokens is None and "5000" in plan.reason


def test_given_an_estimate_under_the_limit_but_not_its_margin_then_the_next_budget_is_the_limit() -> None:
    assert plan_after_truncation(NeedEstimate(1000, 3900, "x"), previous_max=1000, limit=4000).max_tokens == 4000


def test_given_no_evidence_then_the_limit_is_asked_once_and_never_again_at_the_limit() -> None:
    unknown = NeedEstimate(1000, None, "x")
    assert plan_after_truncation(unknown, previous_max=1000, limit=4000).max_tokens == 4000
    assert plan_after_truncation(unknown, previous_max=4000, limit=4000).max_tokens is None


def test_given_a_cut_inside_the_first_string_then_there_is_no_evidence_of_the_answers_size() -> None:
    assert estimate_need('{"rootCauseHypothesis": "The user', COMMANDER, spent=900).tokens is None


def test_given_prose_and_no_json_yet_then_there_is_no_evidence() -> None:
    assert estimate_need("Let me think about the user's day first. They", COMMANDER, spent=50).tokens is None


def test_given_free_text_without_a_schema_then_there_is_no_evidence() -> None:
    assert estimate_need("Once upon a time", None, spent=50).tokens is None


def test_given_reasoning_tokens_then_they_count_as_spent_again_not_as_answer_text() -> None:
    text = cut(json.dumps(valid_answer(3)), 1000, 3000)
    plain = estimate_need(text, COMMANDER, spent=1000)
    reasoning = estimate_need(text, COMMANDER, spent=1600, reasoning_tokens=600)
    assert plain.tokens is not None and reasoning.tokens is not None
    assert reasoning.tokens == pytest.approx(plain.tokens + 600, abs=2)


def test_given_implausibly_few_characters_for_the_tokens_then_the_rest_is_counted_as_spent_again() -> None:
    estimate = estimate_need('{"ideas": ["a", "b"', {"properties": {"ideas": {"minItems": 3}}}, spent=1000)
    assert estimate.tokens is not None and 1000 < estimate.tokens < 1100


def test_given_an_array_without_min_items_then_it_is_taken_as_half_written() -> None:
    schema = {"type": "object", "properties": {"ideas": {"type": "array", "items": {"type": "string"}}}}
    text = json.dumps({"ideas": ["x" * 38 for _ in range(10)]})
    half = estimate_need(text[: len(text) // 2], schema, spent=100)
    assert half.tokens is not None and 180 <= half.tokens <= 220


def test_given_a_truncated_tool_call_then_its_arguments_are_read_against_its_tools_parameters() -> None:
    parameters = {
        "type": "object",
        "properties": {"message": {"type": "string"}, "facts": {"type": "array", "minItems": 4, "items": {}}},
    }
    request = ChatRequest(
        messages=[],
        max_tokens=100,
        parameters=RequestParameters(tools=(ToolDefinition("ask", "ask the applicant", parameters),)),
    )
    arguments = json.dumps({"message": "How long?", "facts": ["x" * 40] * 4})
    response = ChatResponse(
        None, "length", tool_calls=(ToolCall("c1", "ask", cut(arguments, 100, 200)),), usage=Usage(5, 100)
    )
    estimate = estimate_after_truncation(request, response, 100, None)
    assert estimate.tokens is not None and 180 <= estimate.tokens <= 220


# --- the property: any prefix of a valid answer ----------------------------------------------
#
# The family of answers the margin is documented for: an answer's strings are alike in written
# length (within 25 % of each other: one model, one verbosity), its numbers alike in size, and its
# arrays of fixed length (minItems = maxItems, as the output models of this product are); any
# layout (compact, spaced, indented, \u-escaped), bare or in a prompted answer's fence.

NAMES = ("hook", "content", "reasoning", "slot", "enabled", "tone", "caption", "text", "id")


# Each strategy is built once per depth and reused: hypothesis validates every strategy object it is
# given, and building them anew for each draw cost 30 times the property itself.
@cache
def object_schemas(depth: int = 0) -> st.SearchStrategy[dict[str, Any]]:
    @st.composite
    def an_object(draw: st.DrawFn) -> dict[str, Any]:
        count = draw(st.integers(1, 4))
        properties = {f"{draw(st.sampled_from(NAMES))}{index}": draw(field_schemas(depth)) for index in range(count)}
        return {"type": "object", "properties": properties, "required": list(properties)}

    return an_object()


@cache
def field_schemas(depth: int) -> st.SearchStrategy[dict[str, Any]]:
    leaves = st.sampled_from(
        [
            {"type": "string"},
            {"type": "string"},
            {"type": "integer"},
            {"type": "boolean"},
            {"enum": ["strict", "gentle", "playful"], "type": "string"},
            {"anyOf": [{"type": "string"}, {"type": "null"}]},
        ]
    )
    if depth >= 2:
        return leaves
    arrays = st.builds(
        lambda count, items: {"type": "array", "items": items, "minItems": count, "maxItems": count},
        st.integers(1, 8),
        st.one_of(st.just({"type": "string"}), object_schemas(depth + 1)),
    )
    return st.one_of(leaves, leaves, arrays, object_schemas(depth + 1))


MIXED = "abcdefghij klmnop,.xyzあいうえお漢字"
# Written as \u escapes, a Japanese character takes six: an escaping answer is all escapes.
ESCAPED = "あいうえお漢字かきくけこ"


@dataclass(frozen=True)
class Writing:
    """How one answer's values are written: strings of ``base`` to 1.25 x ``base`` characters of
    ``alphabet``, numbers of ``digits`` digits. The characters come from ``rng``, seeded by one draw
    per answer: their lengths decide the property, and drawing 100,000s of characters one by one
    through hypothesis was most of the unit suite's time."""

    base: int
    digits: int
    alphabet: str
    rng: random.Random


def answer(draw: st.DrawFn, schema: dict[str, Any], writing: Writing) -> Any:
    """A value of ``schema`` (a plain recursion: no strategy object per node)."""
    if "anyOf" in schema:
        return answer(draw, schema["anyOf"][0], writing)
    if "enum" in schema:
        return draw(st.sampled_from(schema["enum"]))
    kind = schema.get("type")
    if kind == "object":
        return {name: answer(draw, sub, writing) for name, sub in schema["properties"].items()}
    if kind == "array":
        return [answer(draw, schema["items"], writing) for _ in range(schema["minItems"])]
    if kind == "integer":
        return draw(st.integers(10 ** (writing.digits - 1), 10**writing.digits - 1))
    if kind == "boolean":
        return draw(st.booleans())
    length = draw(st.integers(writing.base, math.floor(writing.base * 1.25)))
    return "".join(writing.rng.choices(writing.alphabet, k=length))


@st.composite
def truncations(draw: st.DrawFn) -> tuple[dict[str, Any], str, int, int, int]:
    schema = draw(object_schemas())
    layout = draw(st.sampled_from([{}, {"separators": (",", ":")}, {"indent": 2}, {"ensure_ascii": True}]))
    alphabet = ESCAPED if layout.get("ensure_ascii") else MIXED
    writing = Writing(
        draw(st.integers(4, 120)), draw(st.integers(1, 6)), alphabet, random.Random(draw(st.integers(0, 2**32)))
    )
    value = answer(draw, schema, writing)
    text = json.dumps(value, **{"ensure_ascii": False, **layout})
    if draw(st.booleans()):  # a prompted answer: prose and a fence around the JSON
        text = f"Here is the answer you asked for.\n```json\n{text}\n```"
    needed = math.ceil(len(text) * draw(st.floats(0.25, 1.0)))
    assume(needed >= 20)
    limit = draw(st.integers(1, needed - 1))
    ceiling = draw(st.integers(limit + 1, needed * 3))
    return schema, text, needed, limit, ceiling


def test_any_prefix_of_a_valid_answer_gives_enough_for_the_rest_or_a_clean_stop_at_the_ceiling() -> None:
    reached = Branches()

    @settings(max_examples=500, deadline=None)
    @given(truncations())
    def example(case: tuple[dict[str, Any], str, int, int, int]) -> None:
        schema, text, needed, limit, ceiling = case
        estimate = estimate_need(cut(text, limit, needed), schema, spent=limit)
        plan = plan_after_truncation(estimate, previous_max=limit, limit=ceiling)
        note(f"schema={json.dumps(schema)}\nanswer={text}\nneeded={needed} limit={limit} ceiling={ceiling}")
        note(f"prefix={cut(text, limit, needed)!r}\nestimate={estimate} plan={plan}")
        if plan.max_tokens is None:
            reached.add("stop")
            # A stop: the estimate was above the ceiling, and the answer really needs more than the
            # ceiling within the margin (no answer that fits is given up on a wild guess).
            assert estimate.tokens is not None and estimate.tokens > ceiling
            assert with_margin(needed) > ceiling
        elif plan.max_tokens < ceiling:
            reached.add("below the ceiling")
            # Asked for less than the ceiling: the estimate plus the margin covers the whole answer.
            assert plan.max_tokens >= needed
        else:
            # The retry asks for the ceiling: the answer fits, or truncates there and stops.
            reached.add("the ceiling")
        if estimate.tokens is not None:
            reached.add("estimate")
            assert estimate.tokens <= with_margin(needed)  # never far above the truth either

    example()
    reached.assert_all("stop", "below the ceiling", "estimate")


def test_any_text_gives_an_estimate_or_no_evidence_never_an_exception() -> None:
    reached = Branches()

    noise = st.one_of(
        st.text(max_size=200),
        st.text(alphabet=st.sampled_from(list('{}[]":,0123456789.-e truefalsnul\\u`json\n')), max_size=200),
    )
    # Noise is never evidence of an answer's size: half the texts are a truncated valid answer instead.
    truncated = truncations().map(lambda case: (cut(case[1], case[3], case[2]), case[0]))

    @settings(max_examples=300, deadline=None)
    @given(st.one_of(st.tuples(noise, object_schemas()), truncated), st.integers(1, 5000))
    def example(text_and_schema: tuple[str, dict[str, Any]], spent: int) -> None:
        text, schema = text_and_schema
        estimate = estimate_need(text, schema, spent=spent)
        if estimate.tokens is None:
            reached.add("no evidence")
            return
        reached.add("estimate")
        assert estimate.tokens >= spent

    example()
    reached.assert_all("estimate", "no evidence")
