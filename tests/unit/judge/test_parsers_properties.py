"""Property tests: the judge's parsers never raise on any text; they answer None or a valid value."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st
from lambda_agents.judge.candidates import last_numbered_tag
from lambda_agents.llm.json_extraction import extract_json

from tests.support.branches import Branches

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
NOISE = st.text(alphabet=st.sampled_from(list('{}[]"`:,\n abcJSON\\0123')), max_size=300)


def test_extract_json_never_raises_and_returns_json_or_none() -> None:
    reached = Branches()

    @settings(max_examples=300, deadline=None)
    @given(NOISE)
    def example(text: str) -> None:
        value = extract_json(text)
        if value is None:
            reached.add("none")
        else:
            reached.add("json")
            json.loads(json.dumps(value))  # a JSON value, serialisable and readable again

    example()
    reached.assert_all("json", "none")


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.text(max_size=8), JSON_VALUES, min_size=1, max_size=5), NOISE, NOISE)
def test_an_object_surrounded_by_brace_free_prose_is_recovered(obj: dict[str, object], before: str, after: str) -> None:
    prose_before = before.replace("{", "").replace("[", "").replace("`", "")
    prose_after = after.replace("{", "").replace("[", "").replace("`", "")
    assert extract_json(f"{prose_before} {json.dumps(obj)} {prose_after}") == obj


@settings(max_examples=300, deadline=None)
@given(
    st.text(max_size=200),
    st.text(
        alphabet=st.characters(min_codepoint=0x30, max_codepoint=0x7A, categories=("L", "N")), min_size=1, max_size=12
    ),
    st.integers(min_value=-99, max_value=10**6),
)
def test_tag_parser_returns_the_number_of_the_last_tag_whatever_it_is(text: str, name: str, number: int) -> None:
    # The caller checks the number against its candidates: the parser never maps or drops it.
    assert last_numbered_tag(f"{text}[{name}:{number}]", name) == number
    assert last_numbered_tag(f"{text}[{name.swapcase()}: {number} ]", name) == number


def test_oversized_input_is_rejected_not_parsed() -> None:
    assert extract_json('{"a": 1}' + " " * 300_000) is None
