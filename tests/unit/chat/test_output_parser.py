"""The LLMOutputParser (docs/chat-and-templates.md#which-fence-is-parsed) on a table of real-looking model answers,
and what the client sees afterwards (the canonical fence on success, no JSON at all on failure)."""

from __future__ import annotations

import json

import pytest
from lambda_agents.chat.output_parser import (
    EMPTY_PROSE_NOTICE,
    MAX_FENCE_BYTES,
    JsonParseError,
    LLMOutputParser,
    compose_content,
    strict_json_loads,
)

from .answers import SCHEMA, answer, fenced, payload, step

PARSER = LLMOutputParser()
EXAMPLE = json.dumps(payload(steps=1, answer="例です。"), ensure_ascii=False)
ARTIFACT = {"kind": "資料", "description": "説明" * 250}
BIG = payload(
    process_template_draft={"name": "大", "stepTemplates": [{**step(1), "requiredArtifacts": [ARTIFACT] * 22}]}
)
BIG_FENCE = json.dumps(BIG, ensure_ascii=False)

# (case, model answer, expected error class or None for success)
TABLE: list[tuple[str, str, str | None]] = [
    ("one json fence at the end", answer(), None),
    ("prose after the fence", answer() + "\n\n以上です。ご確認ください。", None),
    (
        "an example fence first, the answer fence last",
        f"例えば次の形です。\n```json\n{EXAMPLE}\n```\n実際の案はこちらです。\n{fenced(payload(steps=4))}",
        None,
    ),
    (
        "a json fence wins over a later python fence",
        answer() + "\n\n参考コード:\n```python\nprint('hello')\n```",
        None,
    ),
    ("an unlabelled {...} block", answer(label=""), None),
    ("a JSON label in capitals", answer(label="JSON"), None),
    (
        "fences mentioned in prose are not fences",
        "回答の最後に ```json フェンスを付けます。`{}` も例です。\n\n" + fenced(payload()),
        None,
    ),
    ("an indented fence inside a list item", "1. 案:\n   ```json\n   " + json.dumps(payload()) + "\n   ```", None),
    ("CRLF line ends", answer().replace("\n", "\r\n"), None),
    ("no fence at all", "中途採用の工程は、求人票の作成、書類選考、面接の順です。", "MissingFence"),
    ("bare JSON without a fence", "案です。\n" + json.dumps(payload()), "MissingFence"),
    ("only a python fence", "例:\n```python\nx = {'a': 1}\n```", "NonJsonFence"),
    ("an unlabelled block that is not an object", "```\n[1, 2, 3]\n```", "NonJsonFence"),
    ("an unlabelled block of prose", "```\n工程1 -> 工程2\n```", "NonJsonFence"),
    ("a trailing comma", answer(json.dumps(payload())[:-1] + ",}"), "JsonParseError"),
    ("a comment", answer('{"schema": "' + SCHEMA + '", // 版\n "answer": "a"}'), "JsonParseError"),
    ("single quotes", answer("{'schema': '" + SCHEMA + "'}"), "JsonParseError"),
    ("NaN", answer(json.dumps(payload())[:-1] + ', "x": NaN}'), "JsonParseError"),
    ("a key repeated", answer('{"schema": "' + SCHEMA + '", "answer": "a", "answer": "b"}'), "JsonParseError"),
    ("a cut-off answer (unclosed fence)", "案です。\n```json\n" + json.dumps(payload())[:120], "JsonParseError"),
    ("a 33 KB fence", answer(BIG_FENCE), "JsonParseError"),
    ("arrays nested past the recursion limit", answer("[" * 16_000 + "]" * 16_000), "JsonParseError"),
    ("a lone surrogate escape", answer('{"schema": "' + SCHEMA + '", "answer": "\\ud800"}'), "JsonParseError"),
    ("a wrong schema id", answer(payload(schema="ai_chat_process_template.v2")), "SchemaMismatch"),
    ("no schema id", answer({k: v for k, v in payload().items() if k != "schema"}), "SchemaMismatch"),
    ("an array at the top", answer(json.dumps([payload()]), label="json"), "SchemaMismatch"),
    (
        "a gap in seq",
        answer(payload(process_template_draft={"name": "x", "stepTemplates": [step(1), step(2), step(4)]})),
        "ValidationFailed",
    ),
    (
        "a duplicate seq",
        answer(payload(process_template_draft={"name": "x", "stepTemplates": [step(1), step(2), step(2)]})),
        "ValidationFailed",
    ),
    (
        "a cycle",
        answer(
            payload(
                process_template_draft={
                    "name": "x",
                    "stepTemplates": [step(1), step(2, depends=[3]), step(3, depends=[2])],
                }
            )
        ),
        "ValidationFailed",
    ),
    (
        "a forward reference",
        answer(
            payload(process_template_draft={"name": "x", "stepTemplates": [step(1), step(2, depends=[3]), step(3)]})
        ),
        "ValidationFailed",
    ),
    (
        "seq 1 based on the previous step",
        answer(payload(process_template_draft={"name": "x", "stepTemplates": [step(1, basis="prev")]})),
        "ValidationFailed",
    ),
    (
        "offsetDays out of range",
        answer(payload(process_template_draft={"name": "x", "stepTemplates": [step(1, offset=400)]})),
        "ValidationFailed",
    ),
    (
        "offsetDays not an integer",
        answer(json.dumps(payload()).replace('"offsetDays": -30', '"offsetDays": -30.5')),
        "ValidationFailed",
    ),
    (
        "a missing required key (answer)",
        answer({k: v for k, v in payload().items() if k != "answer"}),
        "ValidationFailed",
    ),
    ("an unknown basis", answer(json.dumps(payload()).replace('"prev"', '"start"')), "ValidationFailed"),
]


@pytest.mark.parametrize(("case", "text", "expected"), TABLE, ids=[row[0] for row in TABLE])
def test_given_a_real_looking_answer_then_the_parser_gives_the_spec_outcome(
    case: str, text: str, expected: str | None
) -> None:
    result = PARSER.extract_template_json(text)
    assert result.error_class == expected, result.errors
    assert result.ok is (expected is None)
    if expected is None:
        assert result.schema == SCHEMA and result.data is not None and result.error_code is None
    else:
        assert result.data is None and result.errors and result.error_code == "InvalidStructuredJson"


@pytest.mark.parametrize(("case", "text", "expected"), TABLE, ids=[row[0] for row in TABLE])
def test_given_any_answer_then_the_client_content_holds_valid_json_or_none(
    case: str, text: str, expected: str | None
) -> None:
    result = PARSER.extract_template_json(text)
    content = compose_content(text, result)
    again = PARSER.extract_template_json(content)
    if expected is None:
        assert content.rstrip().endswith("```")
        assert again.ok and again.data == result.data
        assert sum(line.startswith("```json") for line in content.split("\n")) == 1
    else:
        assert "```json" not in content
        assert again.error_class in ("MissingFence", "NonJsonFence")  # nothing JSON-like is left


def test_given_a_33kb_fence_then_it_is_rejected_without_parsing_and_the_same_draft_under_32kb_passes() -> None:
    assert 32 * 1024 < len(BIG_FENCE.encode()) <= 34 * 1024
    result = PARSER.extract_template_json(answer(BIG_FENCE))
    assert result.error_class == "JsonParseError" and f"{MAX_FENCE_BYTES} bytes" in result.errors[0]
    smaller = payload(
        process_template_draft={"name": "大", "stepTemplates": [{**step(1), "requiredArtifacts": [ARTIFACT] * 20}]}
    )
    fence = json.dumps(smaller, ensure_ascii=False)
    assert len(fence.encode()) <= MAX_FENCE_BYTES
    assert PARSER.extract_template_json(answer(fence)).ok


def test_given_the_answer_text_over_the_draft_limit_then_validation_names_the_field() -> None:
    result = PARSER.extract_template_json(answer(payload(answer="あ" * 4001)))
    assert result.error_class == "ValidationFailed"
    assert any(error.startswith("answer:") for error in result.errors)


def test_given_a_valid_answer_with_prose_after_the_fence_then_the_prose_moves_before_the_one_fence() -> None:
    text = "前置き。\n" + fenced(payload()) + "\n後書き。"
    result = PARSER.extract_template_json(text)
    content = compose_content(text, result)
    assert content.startswith("前置き。\n後書き。\n\n```json\n")
    assert json.loads(content.split("```json\n", 1)[1].rsplit("\n```", 1)[0]) == result.data.as_json()  # type: ignore[union-attr]


def test_given_omitted_nullable_keys_then_they_read_as_null_and_the_fence_writes_every_key() -> None:
    value = payload()
    del value["missing_information"]
    for item in value["process_template_draft"]["stepTemplates"]:
        del item["requiredArtifacts"]
    result = PARSER.extract_template_json(answer(value))
    assert result.ok and result.data is not None
    written = result.data.as_json()
    assert written["missing_information"] is None
    assert all(item["requiredArtifacts"] is None for item in written["process_template_draft"]["stepTemplates"])


def test_given_a_null_draft_then_the_json_is_valid_and_lists_what_is_missing() -> None:
    result = PARSER.extract_template_json(
        answer(payload(process_template_draft=None, missing_information=["目標日", "地域"]))
    )
    assert result.ok and result.data is not None
    assert result.data.process_template_draft is None
    assert result.data.missing_information == ["目標日", "地域"]


def test_given_a_failed_parse_with_nothing_but_the_fence_then_a_fixed_notice_replaces_the_empty_prose() -> None:
    text = fenced("{broken")
    assert compose_content(text, PARSER.extract_template_json(text)) == EMPTY_PROSE_NOTICE


def test_given_a_valid_fence_without_prose_then_the_json_answer_is_the_prose() -> None:
    text = fenced(payload())
    content = compose_content(text, PARSER.extract_template_json(text))
    assert content.startswith("採用プロセスの案です。\n\n```json\n")


def test_given_a_failed_parse_then_non_json_fences_the_user_asked_for_are_kept() -> None:
    text = "コード例です。\n```python\nprint(1)\n```\n" + fenced("{broken")
    content = compose_content(text, PARSER.extract_template_json(text))
    assert "```python\nprint(1)\n```" in content and "broken" not in content


def test_strict_json_rejects_what_python_accepts_but_json_does_not() -> None:
    for text in ("NaN", "Infinity", "-Infinity", '{"a": 1, "a": 2}'):
        with pytest.raises(JsonParseError, match="not strict JSON"):
            strict_json_loads(text)
    assert strict_json_loads('{"a": [1, 2.5, "あ", null, true]}') == {"a": [1, 2.5, "あ", None, True]}
