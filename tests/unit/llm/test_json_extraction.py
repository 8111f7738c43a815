"""JSON in free text (docs/judge.md#json-in-free-text) and the prompted strategy: the answer is the
LAST complete JSON, and a truncated final answer yields nothing rather than an earlier, quoted object."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lambda_agents.llm.json_extraction import extract_json

EARLIER = {"step": 1, "reason": "quoted from the previous round"}
ANSWER = {"step": 2, "reason": "fixes requested", "details": {"failing": ["test_a", "test_b"]}}


def dump(value: object) -> str:
    return json.dumps(value)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (f"Earlier: {dump(EARLIER)}\nMine: {dump(ANSWER)}", ANSWER),
        (f"Earlier: {dump(EARLIER)}\nMine: {dump(ANSWER)[:30]}", None),
        (f"```json\n{dump(EARLIER)}\n```\nAnswer:\n```json\n{dump(ANSWER)[:25]}", None),
        (f"```json\n{dump(EARLIER)}\n```\nAnswer:\n```json\n{dump(ANSWER)}", ANSWER),
        (f'Example:\n```json\n{dump(EARLIER)}\n```\nAnswer:\n```json\n{{"step": 2,}}\n```', None),
        (f"{dump(ANSWER)}\n```python\nprint({{1: 2}})\n```", ANSWER),
        (f"{dump(ANSWER)}\nNote: see {{the plan}} for details.", ANSWER),
        ("```python\nx = 1\n```\n" + dump(ANSWER), ANSWER),
    ],
    ids=[
        "quoted then answer: the answer",
        "quoted then truncated answer: nothing",
        "example fence then an unclosed, truncated answer fence: nothing",
        "answer fence whose closing backticks were lost: the answer",
        "broken last fence: nothing, not the example",
        "a later code fence that is not JSON is ignored",
        "balanced braces in trailing prose are ignored",
        "a code fence before a bare answer",
    ],
)
def test_the_answer_is_the_last_complete_json(text: str, expected: object) -> None:
    assert extract_json(text) == expected


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(st.sampled_from(["a", "b", "step"]), st.integers(), min_size=1, max_size=3),
    st.dictionaries(
        st.sampled_from(["x", "y", "reason"]),
        st.integers() | st.dictionaries(st.sampled_from(["k"]), st.integers(), min_size=1),
        min_size=2,
        max_size=3,
    ),
    st.data(),
)
def test_given_a_quoted_object_and_a_truncated_answer_then_nothing_is_returned(
    quoted: dict[str, object], answer: dict[str, object], data: st.DataObject
) -> None:
    text = dump(answer)
    cut = data.draw(st.integers(min_value=1, max_value=len(text) - 1))
    assert extract_json(f"Earlier verdict {dump(quoted)}.\nMine: {text[:cut]}") is None
