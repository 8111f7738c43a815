"""Property tests: the LLMOutputParser answers every text with a result of its documented shape
(never an exception), a valid draft survives any prose around it, and what the client sees never
holds JSON that does not validate."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from lambda_agents.chat.output_parser import ERROR_CLASSES, LLMOutputParser, compose_content

from tests.support.branches import Branches

from .answers import SCHEMA

PARSER = LLMOutputParser()
NOISE = st.text(alphabet=st.sampled_from(list('`{}[]":,\n jsonJSON\\0123あ\r\t-')), max_size=400)
# Noise seldom puts three backticks at the start of a line: half the texts open a fence inside it.
MARKDOWN_NOISE = st.one_of(NOISE, st.tuples(NOISE, st.sampled_from(["```json", "```", "````"]), NOISE).map("\n".join))
LINES = st.lists(
    st.sampled_from(["```", "```json", "````", "``` json", "{", "}", '"schema": "' + SCHEMA + '"', "text", "", "[1,"]),
    max_size=30,
).map("\n".join)
PROSE = st.text(alphabet=st.characters(blacklist_characters="`{[", blacklist_categories=("Cs",)), max_size=200)


@st.composite
def step_plans(draw: st.DrawFn) -> list[dict[str, Any]]:
    count = draw(st.integers(min_value=1, max_value=8))
    steps = []
    for seq in range(1, count + 1):
        earlier = list(range(1, seq))
        steps.append(
            {
                "seq": seq,
                "name": draw(st.text(alphabet="工程名abc ", min_size=1, max_size=12).filter(str.strip)),
                "basis": "goal" if seq == 1 else draw(st.sampled_from(["goal", "prev"])),
                "offsetDays": draw(st.integers(min_value=-365, max_value=365)),
                "requiredArtifacts": None,
                "dependsOn": draw(st.lists(st.sampled_from(earlier), max_size=3)) if earlier else [],
            }
        )
    return steps


def _check(text: str) -> str:
    """Checks the parser's answer to ``text`` and returns which branch it took, so a property over noise
    can prove that some of its texts had a broken JSON fence for the content to drop."""
    result = PARSER.extract_template_json(text)
    assert result.ok or result.error_class in ERROR_CLASSES
    assert result.ok == (result.data is not None)
    content = compose_content(text, result)
    again = PARSER.extract_template_json(content)
    if result.ok:
        assert again.ok and again.data == result.data
        return "draft"
    assert not any(fence.json_like for fence in again.fences)
    return "broken JSON dropped" if any(fence.json_like for fence in result.fences) else "no JSON"


def _check_texts_with_and_without_broken_json(texts: st.SearchStrategy[str], max_examples: int) -> None:
    reached = Branches()

    @settings(max_examples=max_examples, deadline=None)
    @given(texts)
    def example(text: str) -> None:
        reached.add(_check(text))

    example()
    reached.assert_all("broken JSON dropped", "no JSON")


def test_given_markdown_noise_then_the_result_is_documented_and_the_content_holds_no_broken_json() -> None:
    _check_texts_with_and_without_broken_json(MARKDOWN_NOISE, max_examples=400)


def test_given_fence_like_lines_in_any_order_then_the_result_is_documented() -> None:
    _check_texts_with_and_without_broken_json(LINES, max_examples=300)


@settings(max_examples=200, deadline=None)
@given(step_plans(), PROSE, PROSE)
def test_given_a_valid_plan_between_any_prose_then_it_is_extracted_unchanged(
    steps: list[dict[str, Any]], before: str, after: str
) -> None:
    value = {
        "schema": SCHEMA,
        "answer": "案です。",
        "missing_information": None,
        "process_template_draft": {"name": None, "stepTemplates": steps},
    }
    text = f"{before}\n```json\n{json.dumps(value, ensure_ascii=False)}\n```\n{after}"
    result = PARSER.extract_template_json(text)
    assert result.ok, result.errors
    assert result.data is not None and result.data.as_json() == value
    _check(text)  # the draft branch: result.ok is asserted above


@settings(max_examples=200, deadline=None)
@given(step_plans(), st.data())
def test_given_a_plan_with_one_rule_broken_then_it_fails_as_validation_failed(
    steps: list[dict[str, Any]], data: st.DataObject
) -> None:
    broken = [dict(step) for step in steps]
    how = data.draw(st.sampled_from(["gap", "duplicate", "forward", "basis", "offset", "self"]))
    if how == "gap":
        broken[-1]["seq"] = len(broken) + 1
    elif how == "duplicate":
        broken.append({**broken[-1]})
    elif how == "forward":
        broken[0]["dependsOn"] = [len(broken) + 1] if len(broken) == 1 else [len(broken)]
    elif how == "basis":
        broken[0]["basis"] = "prev"
    elif how == "offset":
        broken[-1]["offsetDays"] = data.draw(st.sampled_from([366, -366, 1.5, "7", True]))
    else:
        broken[-1]["dependsOn"] = [broken[-1]["seq"]]
    value = {
        "schema": SCHEMA,
        "answer": "案",
        "missing_information": None,
        "process_template_draft": {"name": "x", "stepTemplates": broken},
    }
    result = PARSER.extract_template_json(f"```json\n{json.dumps(value)}\n```")
    assert result.error_class == "ValidationFailed", how
    assert result.schema == SCHEMA and result.errors
